"""Named rewrites of every Task's ``Retry`` list (and of the second pass): what a scenario changes where no
template parameter can.

The benchmark hands one to the local cloud as its ``definition_transform``; the planner applies the same
rewrite to the definition it reads, so a measured run and its forecast retry alike.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

from sam_local_cloud.aws_limits import THROTTLE_ERROR
from sam_local_cloud.json_types import JsonObject, JsonValue

# AWS's "Handle Lambda service exceptions" page, as published: TooManyRequests is named there but not listed.
DOCS_RETRIER: JsonObject = {
    "ErrorEquals": [
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.ClientExecutionTimeoutException",
    ],
    "IntervalSeconds": 2,
    "MaxAttempts": 6,
    "BackoffRate": 2,
}

DefinitionTransform = Callable[[str, JsonObject], JsonObject]


def task_states(definition: JsonObject) -> Iterator[JsonObject]:
    """Every Task state, inside Map and Parallel states too."""
    for state in _objects(definition.get("States")):
        if state.get("Type") == "Task":
            yield state
        for key in ("ItemProcessor", "Iterator"):
            processor = state.get(key)
            if isinstance(processor, dict):
                yield from task_states(processor)
        for branch in _list_of_objects(state.get("Branches")):
            yield from task_states(branch)


def with_docs_retrier(logical_id: str, definition: JsonObject) -> JsonObject:
    """Every Task's Retry replaced by exactly the retrier of AWS's page, in an app without a second pass
    (AWS's page has none): what following the page alone gives."""
    rewritten = without_second_pass(logical_id, definition)
    for state in task_states(rewritten):
        state["Retry"] = [copy.deepcopy(DOCS_RETRIER)]
    return rewritten


def without_second_pass(_logical_id: str, definition: JsonObject) -> JsonObject:
    """The design before the second pass: no Catch for TooManyRequests alone, so an order whose throttle
    retrier runs out goes where its other failures go (compensation). States no longer reachable (the
    throttled states) are dropped, as Step Functions refuses a definition with unreachable states; the
    second pass's Map stays and runs no order."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        if "Catch" in state:
            state["Catch"] = [
                c for c in _list_of_objects(state["Catch"]) if c.get("ErrorEquals") != [THROTTLE_ERROR]
            ]
    _drop_unreachable(rewritten)
    return rewritten


def _drop_unreachable(container: JsonObject) -> None:
    states = container.get("States")
    if not isinstance(states, dict):
        return
    reached, pending = set(), [container.get("StartAt")]
    while pending:
        name = pending.pop()
        if not isinstance(name, str) or name in reached or name not in states:
            continue
        reached.add(name)
        state = states[name]
        if not isinstance(state, dict):
            continue
        pending += [state.get("Next"), state.get("Default")]
        pending += [rule.get("Next") for rule in _list_of_objects(state.get("Choices"))]
        pending += [catcher.get("Next") for catcher in _list_of_objects(state.get("Catch"))]
    for name in [name for name in states if name not in reached]:
        del states[name]
    for state in _objects(states):
        for key in ("ItemProcessor", "Iterator"):
            processor = state.get(key)
            if isinstance(processor, dict):
                _drop_unreachable(processor)
        for branch in _list_of_objects(state.get("Branches")):
            _drop_unreachable(branch)


def without_throttle_jitter(_logical_id: str, definition: JsonObject) -> JsonObject:
    """The TooManyRequests retrier keeps its backoff but loses its jitter (JitterStrategy NONE)."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        for retrier in _list_of_objects(state.get("Retry")):
            errors = retrier.get("ErrorEquals", [])
            if isinstance(errors, list) and THROTTLE_ERROR in errors:
                retrier["JitterStrategy"] = "NONE"
    return rewritten


def _objects(states: JsonValue) -> list[JsonObject]:
    """The states of a ``States`` object (absent: none)."""
    if not isinstance(states, dict):
        return []
    return [state for state in states.values() if isinstance(state, dict)]


def _list_of_objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a JSON array such as ``Retry``, ``Catch`` or ``Branches`` (absent: none)."""
    if not isinstance(value, list):
        return []
    return [entry for entry in value if isinstance(entry, dict)]
