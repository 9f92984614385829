"""Fault injection: a plan of per-function faults plus a noisy neighbour, decided per invocation.

A plan as YAML or JSON::

    seed: 7                                  # optional, makes probabilities reproducible
    latency: {ReserveInventoryFunction: 0.2} # shorthand: this many seconds on every invocation
    functions:
      ChargePaymentFunction:
        - {kind: error_after_body, attempts: [1]}        # the 1st invocation per order key
        - {kind: response_delay, seconds: 5, probability: 0.1}
        - {kind: timeout, phase: before_body, attempts: [2]}
    noisy_neighbour: {slots: 8, duration_seconds: 30, start_after_seconds: 0}

Kinds: ``latency`` (seconds added inside the invocation, holding the slot), ``error_before_body``
(a function error, the body does not run), ``error_after_body`` (the body runs and its effects land,
then the caller gets a function error), ``timeout`` (the environment is killed past the function
timeout; ``phase`` says whether the body ran first), ``response_delay`` (the response is held
``seconds`` after the body finished, still holding the environment and the slot), ``crash`` (the
runtime process is killed at ``point``: ``before_body``, ``after_call:N`` or ``before_call:N`` for
the invocation's N-th AWS call, ``before_response`` or ``response_lost``; the caller gets
``Runtime.ExitError``), and ``record_calls``, which is no fault: the runtime logs every AWS call the
invocation makes, so crash points can be enumerated (``crash_points``). A crash with ``once`` fires
exactly once per order key, in the first invocation that reaches its point: every invocation of the key
carries it until one has crashed, and the runtime that gets there first claims a marker file (created
exclusively, so two racing runtimes cannot both claim it); a concurrent duplicate that took another
path does not use it up. A crash's ``call`` (``service.Operation[:table+table][!ErrorCode]``) makes
``after_call:N``/``before_call:N`` fire only when the N-th call is that one.

A rule fires on the listed ``attempts`` (attempt n = the n-th admitted invocation of that function
with the same order key, counted from when the plan was set), with ``probability``, or always; and
only for the ``order_ids`` (order keys) and ``batch_ids`` (``event["batch_id"]``) it lists, if any.
The order key is ``event["order"]["order_id"]``, else ``event["order_id"]``, else a hash of the payload.
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from orderbatch.localcloud.runtime_shim import parse_crash_point

LATENCY = "latency"
ERROR_BEFORE_BODY = "error_before_body"
ERROR_AFTER_BODY = "error_after_body"
TIMEOUT = "timeout"
RESPONSE_DELAY = "response_delay"
CRASH = "crash"
RECORD_CALLS = "record_calls"
FAULT_KINDS = frozenset(
    {LATENCY, ERROR_BEFORE_BODY, ERROR_AFTER_BODY, TIMEOUT, RESPONSE_DELAY, CRASH, RECORD_CALLS}
)
# Kinds that decide the invocation's outcome; the first matching one wins, delays add up.
OUTCOME_KINDS = frozenset({ERROR_BEFORE_BODY, ERROR_AFTER_BODY, TIMEOUT, CRASH})
TIMEOUT_PHASES = frozenset({"before_body", "after_body"})
_NEIGHBOUR_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class FaultRule:
    kind: str
    probability: float | None = None
    attempts: frozenset[int] = frozenset()
    seconds: float = 0.0
    error_type: str = "InjectedFaultError"
    error_message: str = "fault injected by the local Lambda service"
    phase: str = "after_body"
    point: str = ""
    order_ids: frozenset[str] = frozenset()
    batch_ids: frozenset[str] = frozenset()
    once: bool = False
    call: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(FAULT_KINDS)}")
        if self.probability is not None and self.attempts:
            raise ValueError(f"fault {self.kind}: give either probability or attempts, not both")
        if self.probability is not None and not 0 <= self.probability <= 1:
            raise ValueError(f"fault {self.kind}: probability must be between 0 and 1")
        if any(attempt < 1 for attempt in self.attempts):
            raise ValueError(f"fault {self.kind}: attempts are numbered from 1")
        if self.kind in {LATENCY, RESPONSE_DELAY} and self.seconds <= 0:
            raise ValueError(f"fault {self.kind}: seconds must be positive")
        if self.phase not in TIMEOUT_PHASES:
            raise ValueError(f"fault {self.kind}: phase must be one of {sorted(TIMEOUT_PHASES)}")
        if self.kind == CRASH:
            try:
                parse_crash_point(self.point)
            except ValueError as error:
                raise ValueError(f"fault {self.kind}: {error}") from None
        elif self.point or self.once or self.call:
            raise ValueError(f"fault {self.kind}: only a crash has a point, once or call")

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> FaultRule:
        known = {
            "kind",
            "probability",
            "attempts",
            "seconds",
            "error_type",
            "error_message",
            "phase",
            "point",
            "order_ids",
            "batch_ids",
            "once",
            "call",
        }
        unknown = set(document) - known
        if unknown:
            raise ValueError(f"unknown fault rule fields {sorted(unknown)}")
        if "kind" not in document:
            raise ValueError("a fault rule needs a kind")
        values = dict(document)
        values["attempts"] = frozenset(int(a) for a in values.get("attempts", ()))
        if values.get("probability") is not None:
            values["probability"] = float(values["probability"])
        values["seconds"] = float(values.get("seconds", 0.0))
        for name in ("order_ids", "batch_ids"):
            listed = values.get(name, ())
            # `--fault` flags give lists as one string, `a+b` (as for attempts).
            values[name] = frozenset(listed.split("+") if isinstance(listed, str) else map(str, listed))
        if isinstance(values.get("once"), str):
            values["once"] = values["once"].lower() in {"1", "true", "yes"}
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"kind": self.kind}
        if self.probability is not None:
            document["probability"] = self.probability
        if self.attempts:
            document["attempts"] = sorted(self.attempts)
        if self.kind in {LATENCY, RESPONSE_DELAY}:
            document["seconds"] = self.seconds
        if self.kind in {ERROR_BEFORE_BODY, ERROR_AFTER_BODY}:
            document.update(error_type=self.error_type, error_message=self.error_message)
        if self.kind == TIMEOUT:
            document["phase"] = self.phase
        if self.kind == CRASH:
            document["point"] = self.point
            if self.once:
                document["once"] = True
            if self.call:
                document["call"] = self.call
        if self.order_ids:
            document["order_ids"] = sorted(self.order_ids)
        if self.batch_ids:
            document["batch_ids"] = sorted(self.batch_ids)
        return document

    def applies_to(self, key: str, batch_id: Any) -> bool:
        """Whether the rule's ``order_ids`` and ``batch_ids`` (when given) include this invocation."""
        if self.order_ids and key not in self.order_ids:
            return False
        return not self.batch_ids or str(batch_id) in self.batch_ids

    def fires(self, attempt: int, rng: random.Random) -> bool:
        if self.attempts:
            return attempt in self.attempts
        if self.probability is not None:
            return rng.random() < self.probability
        return True


@dataclass(frozen=True)
class NoisyNeighbour:
    """Another workload in the account holding ``slots`` of the unreserved concurrency for a while."""

    slots: int
    duration_seconds: float
    start_after_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.slots < 1 or self.duration_seconds <= 0 or self.start_after_seconds < 0:
            raise ValueError(
                "noisy_neighbour needs slots >= 1, duration_seconds > 0, start_after_seconds >= 0"
            )


@dataclass(frozen=True)
class FaultPlan:
    functions: Mapping[str, tuple[FaultRule, ...]] = field(default_factory=lambda: MappingProxyType({}))
    noisy_neighbour: NoisyNeighbour | None = None
    seed: int | None = None

    @classmethod
    def from_dict(cls, document: Mapping[str, Any] | None) -> FaultPlan:
        document = document or {}
        unknown = set(document) - {"functions", "latency", "noisy_neighbour", "seed"}
        if unknown:
            raise ValueError(f"unknown fault plan fields {sorted(unknown)}")
        functions: dict[str, list[FaultRule]] = {}
        for name, rules in (document.get("functions") or {}).items():
            functions[name] = [FaultRule.from_dict(rule) for rule in rules]
        neighbour = document.get("noisy_neighbour")
        plan = cls(
            functions=MappingProxyType({name: tuple(rules) for name, rules in functions.items()}),
            noisy_neighbour=NoisyNeighbour(**neighbour) if neighbour else None,
            seed=document.get("seed"),
        )
        return plan.with_latency(document.get("latency") or {})

    @classmethod
    def from_file(cls, path: Path) -> FaultPlan:
        """Load a plan from YAML or JSON (JSON is YAML)."""
        return cls.from_dict(yaml.safe_load(path.read_text()))

    def with_latency(self, latency: Mapping[str, float]) -> FaultPlan:
        """This plan plus a latency rule (every invocation) for each function named."""
        functions = {name: list(rules) for name, rules in self.functions.items()}
        for name, seconds in latency.items():
            functions.setdefault(name, []).append(FaultRule(kind=LATENCY, seconds=float(seconds)))
        rules_by_function = MappingProxyType({name: tuple(rules) for name, rules in functions.items()})
        return replace(self, functions=rules_by_function)

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "functions": {name: [rule.to_dict() for rule in rules] for name, rules in self.functions.items()}
        }
        if self.noisy_neighbour:
            neighbour = self.noisy_neighbour
            document["noisy_neighbour"] = {
                "slots": neighbour.slots,
                "duration_seconds": neighbour.duration_seconds,
                "start_after_seconds": neighbour.start_after_seconds,
            }
        if self.seed is not None:
            document["seed"] = self.seed
        return document


@dataclass(frozen=True)
class FaultDecision:
    """What to do to one invocation."""

    attempt: int
    latency_seconds: float = 0.0
    response_delay_seconds: float = 0.0
    outcome: FaultRule | None = None
    # The runtime logs the invocation's AWS calls (a ``record_calls`` rule fired).
    record_calls: bool = False
    # What the attempts were counted by; the runtime tags its log lines with it.
    order_key: str = ""
    # For a `once` crash: the file whose exclusive creation lets exactly one runtime crash.
    once_marker: str | None = None


def order_key(event: Any, payload: bytes) -> str:
    if isinstance(event, dict):
        order = event.get("order")
        if isinstance(order, dict) and order.get("order_id") is not None:
            return str(order["order_id"])
        if event.get("order_id") is not None:
            return str(event["order_id"])
    return hashlib.sha256(payload).hexdigest()


class FaultInjector:
    """Holds the current plan and the attempt counters; thread-safe."""

    def __init__(self, plan: FaultPlan | None = None, *, marker_dir: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._plan = FaultPlan()
        self._attempts: dict[tuple[str, str], int] = {}
        # `once` crashes known to have happened: (function, order key, rule).
        self._crashed: set[tuple[str, str, FaultRule]] = set()
        self._markers = Path(marker_dir) if marker_dir else Path(tempfile.gettempdir()) / "orderbatch-crashes"
        self._generation = ""
        self._rng = random.Random()
        self.set_plan(plan or FaultPlan())

    @property
    def plan(self) -> FaultPlan:
        return self._plan

    def set_plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self._plan = plan
            self._attempts = {}
            self._crashed = set()
            # Markers of an earlier plan must not stop this one's crashes.
            self._generation = uuid.uuid4().hex[:12]
            self._rng = random.Random(plan.seed)

    def has_rules(self, function_name: str) -> bool:
        return function_name in self._plan.functions

    def decide(self, function_name: str, payload: bytes) -> FaultDecision | None:
        """Count this attempt and pick the faults that fire; None when the function has no rules."""
        rules = self._plan.functions.get(function_name)
        if not rules:
            return None
        try:
            event = json.loads(payload)
        except ValueError:
            event = None
        order = order_key(event, payload)
        batch_id = event.get("batch_id") if isinstance(event, dict) else None
        key = (function_name, order)
        latency = delay = 0.0
        outcome: FaultRule | None = None
        record_calls = False
        with self._lock:
            attempt = self._attempts.get(key, 0) + 1
            self._attempts[key] = attempt
            for rule in rules:
                if not rule.applies_to(order, batch_id) or not rule.fires(attempt, self._rng):
                    continue
                if rule.kind == LATENCY:
                    latency += rule.seconds
                elif rule.kind == RESPONSE_DELAY:
                    delay += rule.seconds
                elif rule.kind == RECORD_CALLS:
                    record_calls = True
                elif outcome is None:
                    if rule.once and (function_name, order, rule) in self._crashed:
                        continue
                    outcome = rule
        marker = self._once_marker(function_name, order, outcome) if outcome and outcome.once else None
        return FaultDecision(attempt, latency, delay, outcome, record_calls, order, marker)

    def _once_marker(self, function_name: str, order: str, rule: FaultRule) -> str:
        """The file the runtime that crashes creates exclusively: at most one does per order and rule."""
        self._markers.mkdir(parents=True, exist_ok=True)
        identity = json.dumps([function_name, order, rule.to_dict()], sort_keys=True).encode()
        return str(self._markers / f"{self._generation}-{hashlib.sha256(identity).hexdigest()[:32]}")

    def settle(self, function_name: str, decision: FaultDecision, *, crashed: bool) -> None:
        """After an invocation: a ``once`` crash that happened is no longer sent to that order's calls."""
        rule = decision.outcome
        if rule is None or not rule.once or not crashed:
            return
        with self._lock:
            self._crashed.add((function_name, decision.order_key, rule))


class NoisyNeighbourRunner:
    """Holds the neighbour's slots during its window; a new plan or close() ends it early."""

    def __init__(self, hold: Callable[[int], int], release: Callable[[int], None]) -> None:
        self._hold = hold
        self._release = release
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.held = 0

    def start(self, neighbour: NoisyNeighbour | None) -> None:
        self.stop()
        if neighbour is None:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(neighbour, self._stop), name="lambda-noisy-neighbour", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self, neighbour: NoisyNeighbour, stop: threading.Event) -> None:
        if stop.wait(neighbour.start_after_seconds):
            return
        # Like real load arriving, the neighbour takes slots as they free up until it holds its share.
        deadline = time.monotonic() + neighbour.duration_seconds
        try:
            while not stop.is_set():
                if self.held < neighbour.slots:
                    self.held += self._hold(neighbour.slots - self.held)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                stop.wait(
                    min(remaining, _NEIGHBOUR_POLL_SECONDS) if self.held < neighbour.slots else remaining
                )
        finally:
            self._release(self.held)
            self.held = 0
