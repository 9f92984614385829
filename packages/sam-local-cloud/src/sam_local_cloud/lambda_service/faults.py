"""Fault injection: a plan of per-function faults plus a noisy neighbour, decided per invocation.

A plan as YAML or JSON::

    seed: 7                                  # optional, makes probabilities reproducible
    latency: {ReserveInventoryFunction: 0.2} # shorthand: this many seconds on every invocation
    functions:
      ChargePaymentFunction:
        - {kind: error_after_body, attempts: [1]}        # the 1st invocation per item key
        - {kind: response_delay, seconds: 5, probability: 0.1}
        - {kind: timeout, phase: before_body, attempts: [2]}
      ValidateOrderFunction:
        - {kind: throttle, attempts: [1, 2, 3], item_ids: [o-7]}   # HTTP 429, nothing runs
    noisy_neighbour: {slots: 8, duration_seconds: 30, start_after_seconds: 0}

Each kind is a ``FaultRule`` subclass in ``FAULT_KINDS`` (docs/faults.md has the table) holding its own
fields, what it adds to an invocation's ``FaultDecision``, its directive for the runtime shim (which
acts on it by the same kind name, see ``runtime_shim.DIRECTIVES``) and its emulation by the Lambda
service, for the faults the runtime cannot take (a backend without the shim, an event that is not a
JSON object) or that never reach it. A ``crash`` with ``once`` fires exactly once per item key, in the
first invocation that reaches its point: every invocation of the key carries it until one has crashed,
and the runtime that gets there first claims a marker file (created exclusively, so two racing runtimes
cannot both claim it); a concurrent duplicate that took another path does not use it up.

One kind belongs to a state machine instead: ``duplicate_execution``, keyed by the state machine's
logical ID, which the Step Functions interpreter asks about (through ``decide``) for each EXPRESS
Distributed Map child, the child's input as the event; the Lambda service never sees it.

A ``throttle`` answers a synchronous Invoke with HTTP 429 ``TooManyRequestsException`` (its ``reason``) before
admission, as the quota does: nothing runs, no slot is taken, and the call counts in the function's
Throttles. Its attempts count every synchronous call of the function with that item key, throttled ones
included, on a counter of its own; it tests what a retrier that runs out does without timing a neighbour.

A rule fires on the listed ``attempts`` (attempt n = the n-th admitted invocation of that function
with the same item key, counted from when the plan was set), with ``probability``, or always; and
only for the ``item_ids`` (item keys) and ``batch_ids`` (batch keys) it lists, if any. What the item and
the batch of an event are is the app's business: whoever runs the app passes its ``EventKeys`` in. An
event they find no item in is keyed by a hash of its payload. A durable function's replay is keyed by its
execution ARN, its batch read from the execution's input: its attempts are the execution's replays, and
a ``crash`` at ``before_checkpoint``/``after_checkpoint`` with a ``call`` naming an operation update
crashes the orchestrator at that checkpoint boundary, whichever replay first reaches it.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import yaml

from sam_local_cloud import runtime_shim
from sam_local_cloud.json_types import JsonObject
from sam_local_cloud.lambda_service.backends import BackendResult
from sam_local_cloud.lambda_service.errors import (
    CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
    RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
)
from sam_local_cloud.lambda_service.functions import FunctionSpec
from sam_local_cloud.lambda_service.noisy_neighbour import NoisyNeighbour

THROTTLE_REASONS = frozenset(
    {CONCURRENT_INVOCATION_LIMIT_EXCEEDED, RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED}
)
TIMEOUT_PHASES = frozenset({runtime_shim.BEFORE_BODY, runtime_shim.AFTER_BODY})
DEFAULT_ERROR_TYPE = "InjectedFaultError"
DEFAULT_ERROR_MESSAGE = "fault injected by the local Lambda service"


def function_error_document(error_type: str, message: str, request_id: str) -> bytes:
    return json.dumps(
        {"errorMessage": message, "errorType": error_type, "requestId": request_id, "stackTrace": []}
    ).encode()


def runtime_exit_document(request_id: str) -> bytes:
    # What Lambda answers when the runtime process is killed mid-invocation (timeout or out of memory).
    message = f"RequestId: {request_id} Error: Runtime exited with error: signal: killed"
    return json.dumps({"errorType": "Runtime.ExitError", "errorMessage": message}).encode()


@dataclass(frozen=True)
class Emulation:
    """The invocation a kind's emulation acts on, in the Lambda service."""

    spec: FunctionSpec
    request_id: str
    response_delay_seconds: float = 0.0


@dataclass(frozen=True)
class FaultRule:
    """A fault rule: the decision every kind shares (attempts, probability, item and batch filters).

    A subclass per kind adds its fields and overrides the parts it has: ``add_to`` (its share of the
    invocation's decision; an outcome kind takes the outcome if no earlier rule did), ``directive`` (the
    runtime shim's instruction, None when the runtime has no part) and ``emulate_before_body`` /
    ``emulate_after_body`` (what the Lambda service does when the runtime is not reached).
    """

    kind: ClassVar[str]
    # Whether the kind decides the outcome (the first matching rule wins) rather than adding to it.
    decides_outcome: ClassVar[bool] = False

    probability: float | None = None
    attempts: frozenset[int] = frozenset()
    item_ids: frozenset[str] = frozenset()
    batch_ids: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.probability is not None and self.attempts:
            raise ValueError(f"fault {self.kind}: give either probability or attempts, not both")
        if self.probability is not None and not 0 <= self.probability <= 1:
            raise ValueError(f"fault {self.kind}: probability must be between 0 and 1")
        if any(attempt < 1 for attempt in self.attempts):
            raise ValueError(f"fault {self.kind}: attempts are numbered from 1")

    # -- the plan file ---------------------------------------------------------------------------

    @staticmethod
    def from_dict(document: Mapping[str, object]) -> FaultRule:
        """The rule of the kind ``document["kind"]`` names, its fields checked against that kind's."""
        if "kind" not in document:
            raise ValueError("a fault rule needs a kind")
        kind_class = fault_kind(str(document["kind"]))
        values = {name: value for name, value in document.items() if name != "kind"}
        foreign = set(values) - _field_names(kind_class)
        unknown = sorted(name for name in foreign if not _kinds_with_field(name))
        if unknown:
            raise ValueError(f"unknown fault rule fields {unknown}")
        if foreign:
            name = min(foreign)
            owners = " or ".join(_kinds_with_field(name))
            raise ValueError(f"fault {kind_class.kind}: only a {owners} has a {name}")
        return kind_class(**_parsed_fields(values))

    def to_dict(self) -> JsonObject:
        document: JsonObject = {"kind": self.kind}
        if self.probability is not None:
            document["probability"] = self.probability
        if self.attempts:
            document["attempts"] = [*sorted(self.attempts)]
        document.update(self.own_fields())
        if self.item_ids:
            document["item_ids"] = [*sorted(self.item_ids)]
        if self.batch_ids:
            document["batch_ids"] = [*sorted(self.batch_ids)]
        return document

    def own_fields(self) -> JsonObject:
        """The kind's own fields as the plan file has them."""
        return {}

    # -- the decision ----------------------------------------------------------------------------

    def applies_to(self, item: str, batch: str | None) -> bool:
        """Whether the rule's ``item_ids`` and ``batch_ids`` (when given) include this invocation."""
        if self.item_ids and item not in self.item_ids:
            return False
        return not self.batch_ids or batch in self.batch_ids

    def fires(self, attempt: int, rng: random.Random) -> bool:
        if self.attempts:
            return attempt in self.attempts
        if self.probability is not None:
            return rng.random() < self.probability
        return True

    def fires_once(self) -> bool:
        """Whether the rule stops firing for an item key once it has crashed an invocation of it."""
        return False

    def add_to(self, decision: FaultDecision) -> FaultDecision:
        """The decision with this fired rule in it."""
        if self.decides_outcome and decision.outcome is None:
            return replace(decision, outcome=self)
        return decision

    # -- the runtime part ------------------------------------------------------------------------

    def directive(self) -> JsonObject | None:
        """The runtime shim's instruction (keyed ``kind`` by this kind's name), None if it has no part."""
        return None

    # -- the emulation ---------------------------------------------------------------------------

    def emulate_before_body(self, emulation: Emulation) -> BackendResult | None:
        """The invocation's result without running the body, or None to run it."""
        return None

    def emulate_after_body(
        self, emulation: Emulation, result: BackendResult, started: float
    ) -> BackendResult:
        """The invocation's result once the body ran (successfully) and returned ``result``."""
        return result


@dataclass(frozen=True)
class _HeldFor(FaultRule):
    """A rule that holds the invocation ``seconds`` longer: the delay kinds share their field."""

    seconds: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seconds <= 0:
            raise ValueError(f"fault {self.kind}: seconds must be positive")

    def own_fields(self) -> JsonObject:
        return {"seconds": self.seconds}


@dataclass(frozen=True)
class Latency(_HeldFor):
    """``seconds`` added before the body, holding the environment and the slot (by the service)."""

    kind: ClassVar[str] = "latency"

    def add_to(self, decision: FaultDecision) -> FaultDecision:
        return replace(decision, latency_seconds=decision.latency_seconds + self.seconds)


@dataclass(frozen=True)
class ResponseDelay(_HeldFor):
    """The response held ``seconds`` after the body finished, still holding the environment and slot."""

    kind: ClassVar[str] = "response_delay"

    def add_to(self, decision: FaultDecision) -> FaultDecision:
        return replace(decision, response_delay_seconds=decision.response_delay_seconds + self.seconds)


@dataclass(frozen=True)
class _ErrorOutcome(FaultRule):
    """A rule whose outcome is a function error: the error kinds share its type and message."""

    decides_outcome: ClassVar[bool] = True

    error_type: str = DEFAULT_ERROR_TYPE
    error_message: str = DEFAULT_ERROR_MESSAGE

    def own_fields(self) -> JsonObject:
        return {"error_type": self.error_type, "error_message": self.error_message}

    def error_document(self, emulation: Emulation) -> bytes:
        return function_error_document(self.error_type, self.error_message, emulation.request_id)


@dataclass(frozen=True)
class ErrorBeforeBody(_ErrorOutcome):
    """A function error from the service; the runtime is never reached, the body never runs."""

    kind: ClassVar[str] = "error_before_body"

    def emulate_before_body(self, emulation: Emulation) -> BackendResult | None:
        time.sleep(emulation.response_delay_seconds)
        return BackendResult(self.error_document(emulation), function_error=True)


@dataclass(frozen=True)
class ErrorAfterBody(_ErrorOutcome):
    """The body runs and its effects land, then the runtime raises: the response is lost."""

    kind: ClassVar[str] = "error_after_body"

    def directive(self) -> JsonObject | None:
        return {"kind": self.kind, "error_type": self.error_type, "error_message": self.error_message}

    def emulate_after_body(
        self, emulation: Emulation, result: BackendResult, started: float
    ) -> BackendResult:
        return BackendResult(
            self.error_document(emulation), True, False, result.cold_start_seconds, result.log_tail
        )


@dataclass(frozen=True)
class Timeout(FaultRule):
    """The environment killed past the function timeout, before or after the body (``phase``)."""

    kind: ClassVar[str] = "timeout"
    decides_outcome: ClassVar[bool] = True

    phase: str = runtime_shim.AFTER_BODY

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.phase not in TIMEOUT_PHASES:
            raise ValueError(f"fault {self.kind}: phase must be one of {sorted(TIMEOUT_PHASES)}")

    def own_fields(self) -> JsonObject:
        return {"phase": self.phase}

    def directive(self) -> JsonObject | None:
        return {"kind": self.kind, "phase": self.phase}

    def emulate_before_body(self, emulation: Emulation) -> BackendResult | None:
        if self.phase != runtime_shim.BEFORE_BODY:
            return None
        time.sleep(emulation.spec.timeout_seconds)
        return BackendResult(b"", function_error=True, timed_out=True)

    def emulate_after_body(
        self, emulation: Emulation, result: BackendResult, started: float
    ) -> BackendResult:
        time.sleep(max(0.0, emulation.spec.timeout_seconds - (time.monotonic() - started)))
        return BackendResult(b"", True, True, result.cold_start_seconds, result.log_tail)


@dataclass(frozen=True)
class Throttle(FaultRule):
    """HTTP 429 before admission: the call never ran (decided by ``FaultInjector.throttle_reason``)."""

    kind: ClassVar[str] = "throttle"

    reason: str = CONCURRENT_INVOCATION_LIMIT_EXCEEDED

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reason not in THROTTLE_REASONS:
            raise ValueError(f"fault {self.kind}: reason must be one of {sorted(THROTTLE_REASONS)}")

    def own_fields(self) -> JsonObject:
        return {"reason": self.reason}


@dataclass(frozen=True)
class Crash(FaultRule):
    """The runtime process killed at ``point`` (see ``runtime_shim.parse_crash_point``).

    ``call`` (``service.Operation[:table+table][!ErrorCode]``) makes ``after_call:N``/``before_call:N``
    fire only when the N-th call is that one; ``once`` makes it fire once per item key.

    ``no_time_left`` makes the invocation that crashes see 0 ms remaining from its context, as a Lambda
    past its deadline does until the kill lands (powertools-lambda-python #4759): Powertools then writes
    an in-progress expiry of "now". ``drop_in_progress_expiry`` also strips that expiry from its
    INPROGRESS write when 0 ms are left, as Powertools before the #4759 fix did (a control).
    ``overrun_seconds`` (with ``no_time_left``) keeps that invocation going this long after its
    INPROGRESS write, its in-progress expiry already past: the window between Lambda's deadline and the
    kill, stretched so that a racing invocation can meet the expired record (powertools-lambda-python
    #8049).
    """

    kind: ClassVar[str] = "crash"
    decides_outcome: ClassVar[bool] = True

    point: str = ""
    once: bool = False
    call: str = ""
    no_time_left: bool = False
    drop_in_progress_expiry: bool = False
    overrun_seconds: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            runtime_shim.parse_crash_point(self.point)
        except ValueError as error:
            raise ValueError(f"fault {self.kind}: {error}") from None
        if (self.drop_in_progress_expiry or self.overrun_seconds) and not self.no_time_left:
            raise ValueError(
                f"fault {self.kind}: drop_in_progress_expiry and overrun_seconds need no_time_left"
            )
        if self.overrun_seconds < 0:
            raise ValueError(f"fault {self.kind}: overrun_seconds cannot be negative")

    def own_fields(self) -> JsonObject:
        document: JsonObject = {"point": self.point}
        if self.once:
            document["once"] = True
        if self.call:
            document["call"] = self.call
        document.update(self._time_left_fields())
        return document

    def fires_once(self) -> bool:
        return self.once

    def directive(self) -> JsonObject | None:
        return {"kind": self.kind, "point": self.point, "call": self.call, **self._time_left_fields()}

    def _time_left_fields(self) -> JsonObject:
        fields: JsonObject = {
            "no_time_left": self.no_time_left,
            "drop_in_progress_expiry": self.drop_in_progress_expiry,
            "overrun_seconds": self.overrun_seconds,
        }
        return {name: value for name, value in fields.items() if value}

    def emulate_before_body(self, emulation: Emulation) -> BackendResult | None:
        if self.point != runtime_shim.BEFORE_BODY:
            return None
        return BackendResult(runtime_exit_document(emulation.request_id), function_error=True)

    def emulate_after_body(
        self, emulation: Emulation, result: BackendResult, started: float
    ) -> BackendResult:
        # Out of the runtime's reach, any later point is the response lost.
        document = runtime_exit_document(emulation.request_id)
        return BackendResult(document, True, False, result.cold_start_seconds)


@dataclass(frozen=True)
class RecordCalls(FaultRule):
    """No fault: the runtime logs every AWS call of the invocation, so crash points can be enumerated."""

    kind: ClassVar[str] = "record_calls"

    def add_to(self, decision: FaultDecision) -> FaultDecision:
        return replace(decision, record_calls=True)

    def directive(self) -> JsonObject | None:
        return {"kind": self.kind}


DUPLICATE_OVERLAPS = frozenset({"concurrent", "sequential", "either"})


@dataclass(frozen=True)
class DuplicateExecution(FaultRule):
    """A state machine's rule: an EXPRESS Distributed Map child it fires for runs twice, with the same
    input, as Express's at-least-once semantics allow; ``overlap`` says whether the second run starts
    with the first (concurrent), after it ends (sequential) or either way (chosen per child). The rules
    are keyed by the state machine's logical ID and decided per child, the child's input as the payload.
    """

    kind: ClassVar[str] = "duplicate_execution"

    overlap: str = "either"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.overlap not in DUPLICATE_OVERLAPS:
            raise ValueError(f"fault {self.kind}: overlap must be one of {sorted(DUPLICATE_OVERLAPS)}")

    def own_fields(self) -> JsonObject:
        return {"overlap": self.overlap}

    def add_to(self, decision: FaultDecision) -> FaultDecision:
        return decision if decision.duplicate is not None else replace(decision, duplicate=self)

    def runs_concurrently(self, item_key: str) -> bool:
        """Whether the second run overlaps the first; ``either`` picks by the child's key, reproducibly."""
        if self.overlap != "either":
            return self.overlap == "concurrent"
        return int(hashlib.sha256(item_key.encode()).hexdigest(), 16) % 2 == 0


# The kinds by name: the plan's `kind:`, the `--fault` flag's KIND and the runtime shim's directives.
FAULT_KINDS: Mapping[str, type[FaultRule]] = MappingProxyType(
    {
        kind.kind: kind
        for kind in (
            Latency,
            ErrorBeforeBody,
            ErrorAfterBody,
            Timeout,
            ResponseDelay,
            Crash,
            RecordCalls,
            DuplicateExecution,
            Throttle,
        )
    }
)


def fault_kind(name: str) -> type[FaultRule]:
    try:
        return FAULT_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown fault kind {name!r}; expected one of {sorted(FAULT_KINDS)}") from None


def _field_names(kind_class: type[FaultRule]) -> set[str]:
    return {each.name for each in fields(kind_class)}


def _kinds_with_field(name: str) -> list[str]:
    return [kind for kind, kind_class in FAULT_KINDS.items() if name in _field_names(kind_class)]


def _parsed_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """Field values as the rule classes take them; `--fault` flags give every value as a string."""
    parsed = dict(values)
    if "attempts" in parsed:
        parsed["attempts"] = frozenset(int(attempt) for attempt in parsed["attempts"])
    if parsed.get("probability") is not None:
        parsed["probability"] = float(parsed["probability"])
    for seconds in ("seconds", "overrun_seconds"):
        if seconds in parsed:
            parsed[seconds] = float(parsed[seconds])
    for name in ("item_ids", "batch_ids"):
        if name in parsed:
            listed = parsed[name]
            # `--fault` flags give lists as one string, `a+b` (as for attempts).
            parsed[name] = frozenset(listed.split("+") if isinstance(listed, str) else map(str, listed))
    for flag in ("once", "no_time_left", "drop_in_progress_expiry"):
        if isinstance(parsed.get(flag), str):
            parsed[flag] = parsed[flag].lower() in {"1", "true", "yes"}
    return parsed


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
            functions.setdefault(name, []).append(Latency(seconds=float(seconds)))
        rules_by_function = MappingProxyType({name: tuple(rules) for name, rules in functions.items()})
        return replace(self, functions=rules_by_function)

    def to_dict(self) -> JsonObject:
        document: JsonObject = {
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
    """What to do to one invocation: the fired rules' ``add_to`` built it."""

    attempt: int
    latency_seconds: float = 0.0
    response_delay_seconds: float = 0.0
    outcome: FaultRule | None = None
    # The runtime logs the invocation's AWS calls (a ``record_calls`` rule fired).
    record_calls: bool = False
    # What the attempts were counted by; the runtime tags its log lines with it.
    item_key: str = ""
    # The batch the event belongs to, if known; the runtime labels its log lines with it.
    batch_key: str | None = None
    # For a `once` crash: the file whose exclusive creation lets exactly one runtime crash.
    once_marker: str | None = None
    # A state machine's child to run twice (a ``duplicate_execution`` rule fired); no Lambda part.
    duplicate: DuplicateExecution | None = None

    def injected_kinds(self) -> list[str]:
        """The fault kinds this decision injects (the outcome's, and each that adds to it)."""
        kinds = [self.outcome.kind] if self.outcome is not None else []
        if self.latency_seconds > 0:
            kinds.append(Latency.kind)
        if self.response_delay_seconds > 0:
            kinds.append(ResponseDelay.kind)
        if self.record_calls:
            kinds.append(RecordCalls.kind)
        if self.duplicate is not None:
            kinds.append(DuplicateExecution.kind)
        return kinds

    def directive(self) -> JsonObject | None:
        """The runtime shim's instruction, or None when the runtime has no part in this invocation."""
        directive: JsonObject | None
        if self.outcome is not None:
            directive = self.outcome.directive()
            if directive is None:
                return None  # the service settles the outcome before the runtime is reached
        elif self.record_calls:
            directive = {"kind": RecordCalls.kind}
        else:
            return None
        if self.record_calls:
            directive[runtime_shim.RECORD_CALLS_FLAG] = True
        if self.once_marker:
            directive[runtime_shim.ONCE_MARKER] = self.once_marker
        directive[runtime_shim.TAG] = self.item_key
        if self.batch_key is not None:
            directive[runtime_shim.BATCH] = self.batch_key
        return directive
