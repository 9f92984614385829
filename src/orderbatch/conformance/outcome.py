"""What one execution came to, in the terms the suite compares: status, output, error, cause, history.

The same reading serves both sides: AWS's recorded history (already parsed and with LocalStack's
placeholders in it) and the history the local cloud answers with boto3.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Required, TypedDict

from sam_local_cloud.json_types import JsonValue

TERMINAL_EVENTS = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionTimedOut": "TIMED_OUT",
    "ExecutionAborted": "ABORTED",
}
# The events that mean "the task was tried once more": a retrier's attempts show as more of them.
SCHEDULED_EVENTS = {
    "TaskScheduled": "taskScheduledEventDetails",
    "LambdaFunctionScheduled": "lambdaFunctionScheduledEventDetails",
    "ActivityScheduled": "activityScheduledEventDetails",
}


class OutcomeJson(TypedDict, total=False):
    """An outcome as a case file records it (``Outcome.to_json``)."""

    status: Required[str]
    output: JsonValue
    error: str | None
    cause: JsonValue
    event_types: list[str] | None
    attempts: dict[str, int]


@dataclass
class Outcome:
    status: str
    output: JsonValue = None
    error: str | None = None
    cause: JsonValue = None
    # None when the recording kept no history for this execution (only its output or description).
    event_types: list[str] | None = None
    attempts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> OutcomeJson:
        data: OutcomeJson = {"status": self.status}
        if self.status == "SUCCEEDED":
            data["output"] = self.output
        else:
            data["error"] = self.error
            data["cause"] = self.cause
        if self.event_types is not None:
            data["event_types"] = self.event_types
            data["attempts"] = self.attempts
        return data

    @classmethod
    def from_json(cls, data: OutcomeJson) -> Outcome:
        return cls(
            status=data["status"],
            output=data.get("output"),
            error=data.get("error"),
            cause=data.get("cause"),
            event_types=data.get("event_types"),
            attempts=dict(data.get("attempts") or {}),
        )


def outcome_from_events(events: Iterable[Mapping[str, JsonValue]]) -> Outcome:
    """The outcome a history records; its last terminal event decides the status."""
    events = list(events)
    terminal = next((e for e in reversed(events) if e.get("type") in TERMINAL_EVENTS), None)
    if terminal is None:
        raise ValueError("the history has no terminal event")
    status = TERMINAL_EVENTS[str(terminal["type"])]
    details = _details(terminal)
    return Outcome(
        status=status,
        output=details.get("output") if status == "SUCCEEDED" else None,
        error=_text(details.get("error")) if status != "SUCCEEDED" else None,
        cause=details.get("cause") if status != "SUCCEEDED" else None,
        event_types=[str(e.get("type")) for e in events],
        attempts=scheduled_attempts(events),
    )


def outcome_from_description(description: Mapping[str, JsonValue]) -> Outcome:
    """From DescribeExecution or StartSyncExecution: no history, so no event types."""
    status = str(description["status"])
    return Outcome(
        status=status,
        output=description.get("output") if status == "SUCCEEDED" else None,
        error=_text(description.get("error")) if status != "SUCCEEDED" else None,
        cause=description.get("cause") if status != "SUCCEEDED" else None,
    )


def scheduled_attempts(events: Iterable[Mapping[str, JsonValue]]) -> dict[str, int]:
    """How many times each task target was scheduled: every retry of a Task schedules it once more."""
    counts: Counter[str] = Counter()
    for event in events:
        details_key = SCHEDULED_EVENTS.get(str(event.get("type")))
        if details_key is None:
            continue
        details = event.get(details_key) or {}
        if not isinstance(details, Mapping):
            raise TypeError(f"{details_key} is not an object")
        resource_type = details.get("resourceType")
        resource = str(details.get("resource", "?"))
        counts[f"{resource_type}:{resource}" if resource_type else resource] += 1
    return dict(sorted(counts.items()))


def _text(value: JsonValue) -> str | None:
    """An error name as text (the API sends a string when there is one)."""
    return None if value is None else str(value)


def _details(event: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, Mapping):
            return value
    return {}


def parse_json_text(value: JsonValue) -> JsonValue:
    """A JSON document given as text becomes the value; anything else is returned as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
