"""Figures read from a Step Functions execution history: transitions, retries, 429s, per-order times."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, cast

from sam_local_cloud.aws_limits import THROTTLE_ERROR
from sam_local_cloud.executions import execution_history

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient
    from mypy_boto3_stepfunctions.type_defs import HistoryEventTypeDef

_ITERATION_ENDS = {"MapIterationSucceeded", "MapIterationFailed", "MapIterationAborted"}
_EXECUTION_ENDS = {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}


@dataclass
class HistoryFigures:
    started: datetime
    stopped: datetime | None
    # Billed transitions: every state entered, plus every retry of a Task (AWS bills retries as transitions).
    transitions: int
    retries: int
    # Transitions of the states outside the Map's iterations (what a parent pays when children are Express).
    top_level_transitions: int
    throttle_failures: int
    # Seconds since the execution started.
    throttle_times: list[float] = field(default_factory=list)
    # The most 429s one Task of one order met in a row (its throttle retrier's attempts used up by then).
    longest_throttle_streak: int = 0
    iteration_starts: dict[int, float] = field(default_factory=dict)
    iteration_ends: dict[int, float] = field(default_factory=dict)

    @property
    def makespan_seconds(self) -> float | None:
        if self.stopped is None:
            return None
        return (self.stopped - self.started).total_seconds()

    def iteration_seconds(self) -> list[float]:
        return [
            self.iteration_ends[index] - start
            for index, start in self.iteration_starts.items()
            if index in self.iteration_ends
        ]


def read_history(stepfunctions: SFNClient, execution_arn: str) -> list[HistoryEventTypeDef]:
    return cast("list[HistoryEventTypeDef]", execution_history(stepfunctions, execution_arn))


def _details(event: HistoryEventTypeDef) -> Mapping[str, object]:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, Mapping):
            return value
    return {}


class _ThrottleStreaks:
    """Consecutive 429s of one Task in one order. Each event names the one before it in its own order's
    thread (previousEventId), so a streak is carried along that thread however iterations interleave."""

    def __init__(self) -> None:
        self._by_event: dict[int, int] = {}

    def follow(self, event: HistoryEventTypeDef, details: Mapping[str, object]) -> int:
        kind = event["type"]
        streak = self._by_event.get(int(event.get("previousEventId", 0)), 0)
        if kind == "TaskFailed" and details.get("error") == THROTTLE_ERROR:
            streak += 1
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut") or kind.endswith("StateExited"):
            streak = 0
        self._by_event[int(event.get("id", 0))] = streak
        return streak


def analyse_history(events: Iterable[HistoryEventTypeDef], top_level_states: Iterable[str]) -> HistoryFigures:
    events = list(events)
    if not events or events[0]["type"] != "ExecutionStarted":
        raise ValueError("an execution history starts with ExecutionStarted")
    started: datetime = events[0]["timestamp"]
    top_level = set(top_level_states)
    stopped = None
    entered = top_entered = task_entered = task_scheduled = throttles = 0
    figures = HistoryFigures(started, None, 0, 0, 0, 0)
    streaks = _ThrottleStreaks()
    for event in events:
        kind = event["type"]
        details = _details(event)
        offset = (event["timestamp"] - started).total_seconds()
        figures.longest_throttle_streak = max(figures.longest_throttle_streak, streaks.follow(event, details))
        if kind.endswith("StateEntered"):
            entered += 1
            if details.get("name") in top_level:
                top_entered += 1
            if kind == "TaskStateEntered":
                task_entered += 1
        elif kind == "TaskScheduled":
            task_scheduled += 1
        elif kind == "TaskFailed" and details.get("error") == THROTTLE_ERROR:
            throttles += 1
            figures.throttle_times.append(offset)
        elif kind == "MapIterationStarted":
            figures.iteration_starts[_iteration_index(details)] = offset
        elif kind in _ITERATION_ENDS:
            figures.iteration_ends[_iteration_index(details)] = offset
        elif kind in _EXECUTION_ENDS:
            stopped = event["timestamp"]
    retries = max(0, task_scheduled - task_entered)
    figures.stopped = stopped
    figures.transitions = entered + retries
    figures.retries = retries
    figures.top_level_transitions = top_entered
    figures.throttle_failures = throttles
    return figures


def _iteration_index(details: Mapping[str, object]) -> int:
    """The item a Map iteration event is about (its ``mapIterationStartedEventDetails.index``...)."""
    index = details["index"]
    if not isinstance(index, int | str):
        raise ValueError(f"a Map iteration event has no index: {dict(details)}")
    return int(index)
