"""The fault plan in force and its attempt counters: which faults fire for each invocation (faults.py
has the plan format and the kinds)."""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
import threading
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

from sam_local_cloud.lambda_service.event_keys import EventKeys
from sam_local_cloud.lambda_service.faults import FaultDecision, FaultPlan, FaultRule, Throttle


class FaultInjector:
    """Holds the current plan and the attempt counters; thread-safe."""

    def __init__(
        self,
        plan: FaultPlan | None = None,
        *,
        marker_dir: Path | None = None,
        event_keys: EventKeys | None = None,
    ) -> None:
        self._event_keys = event_keys or EventKeys()
        self._lock = threading.Lock()
        self._plan = FaultPlan()
        self._attempts: dict[tuple[str, str], int] = {}
        # Synchronous calls per (function, item key), for throttle rules: throttled calls count too.
        self._calls: dict[tuple[str, str], int] = {}
        # `once` crashes known to have happened: (function, item key, rule).
        self._crashed: set[tuple[str, str, FaultRule]] = set()
        default_markers = Path(tempfile.gettempdir()) / "sam-local-cloud-crashes"
        self._markers = Path(marker_dir) if marker_dir else default_markers
        self._generation = ""
        self._rng = random.Random()
        # Faults injected by kind since the injector was made, across plans: one counter per kind.
        self._injected: Counter[str] = Counter()
        self.set_plan(plan or FaultPlan())

    @property
    def plan(self) -> FaultPlan:
        return self._plan

    def set_plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self._plan = plan
            self._attempts = {}
            self._calls = {}
            self._crashed = set()
            # Markers of an earlier plan must not stop this one's crashes.
            self._generation = uuid.uuid4().hex[:12]
            self._rng = random.Random(plan.seed)

    def has_rules(self, function_name: str) -> bool:
        return function_name in self._plan.functions

    def throttle_reason(self, function_name: str, payload: bytes) -> str | None:
        """Count this synchronous call and, if a ``throttle`` rule fires for it, the 429's Reason."""
        rules = [rule for rule in self._plan.functions.get(function_name, ()) if isinstance(rule, Throttle)]
        if not rules:
            return None
        item, batch = self._keys_of(payload)
        key = (function_name, item)
        with self._lock:
            call = self._calls.get(key, 0) + 1
            self._calls[key] = call
            for rule in rules:
                if rule.applies_to(item, batch) and rule.fires(call, self._rng):
                    self._injected[Throttle.kind] += 1
                    return rule.reason
        return None

    def _keys_of(self, payload: bytes) -> tuple[str, str | None]:
        try:
            event = json.loads(payload)
        except ValueError:
            event = None
        return self._event_keys.keys_of(event, payload)

    def decide(self, function_name: str, payload: bytes) -> FaultDecision | None:
        """Count this attempt and pick the faults that fire; None when the function has no rules."""
        planned = self._plan.functions.get(function_name, ())
        rules = [rule for rule in planned if not isinstance(rule, Throttle)]
        if not rules:
            return None
        item, batch = self._keys_of(payload)
        key = (function_name, item)
        with self._lock:
            attempt = self._attempts.get(key, 0) + 1
            self._attempts[key] = attempt
            decision = FaultDecision(attempt, item_key=item, batch_key=batch)
            for rule in rules:
                if not rule.applies_to(item, batch) or not rule.fires(attempt, self._rng):
                    continue
                if rule.fires_once() and (function_name, item, rule) in self._crashed:
                    continue
                decision = rule.add_to(decision)
            self._injected.update(decision.injected_kinds())
        outcome = decision.outcome
        if outcome is not None and outcome.fires_once():
            decision = replace(decision, once_marker=self._once_marker(function_name, item, outcome))
        return decision

    def injected(self) -> dict[str, int]:
        """How many invocations (or, for ``duplicate_execution``, children) each fault kind was decided
        for, since the injector was made: a soak checks that every kind it plans was exercised."""
        with self._lock:
            return dict(self._injected)

    def _once_marker(self, function_name: str, item: str, rule: FaultRule) -> str:
        """The file the runtime that crashes creates exclusively: at most one does per item and rule."""
        self._markers.mkdir(parents=True, exist_ok=True)
        identity = json.dumps([function_name, item, rule.to_dict()], sort_keys=True).encode()
        return str(self._markers / f"{self._generation}-{hashlib.sha256(identity).hexdigest()[:32]}")

    def settle(self, function_name: str, decision: FaultDecision, *, crashed: bool) -> None:
        """After an invocation: a ``once`` crash that happened is no longer sent to that item's calls."""
        rule = decision.outcome
        if rule is None or not rule.fires_once() or not crashed:
            return
        with self._lock:
            self._crashed.add((function_name, decision.item_key, rule))
