"""Named rewrites of every Task's ``Retry`` list (and of the second pass): what a scenario changes where no
template parameter can.

The benchmark hands one to the local cloud as its ``definition_transform``; the planner applies the same
rewrite to the definition it reads, so a measured run and its forecast retry alike.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from sam_local_cloud.aws_limits import THROTTLE_ERROR

# AWS's "Handle Lambda service exceptions" page, as published: TooManyRequests is named there but not listed.
DOCS_RETRIER: dict[str, Any] = {
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

DefinitionTransform = Callable[[str, dict[str, Any]], dict[str, Any]]


def task_states(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every Task state, inside Map and Parallel states too."""
    for state in (definition.get("States") or {}).values():
        if state.get("Type") == "Task":
            yield state
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                yield from task_states(state[key])
        for branch in state.get("Branches") or []:
            yield from task_states(branch)


def with_docs_retrier(logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
    """Every Task's Retry replaced by exactly the retrier of AWS's page, in an app without a second pass
    (AWS's page has none): what following the page alone gives."""
    rewritten = without_second_pass(logical_id, definition)
    for state in task_states(rewritten):
        state["Retry"] = [copy.deepcopy(DOCS_RETRIER)]
    return rewritten


def without_second_pass(_logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
    """The design before the second pass: no Catch for TooManyRequests alone, so an order whose throttle
    retrier runs out goes where its other failures go (compensation). States no longer reachable (the
    throttled states) are dropped, as Step Functions refuses a definition with unreachable states; the
    second pass's Map stays and runs no order."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        if "Catch" in state:
            state["Catch"] = [c for c in state["Catch"] if c.get("ErrorEquals") != [THROTTLE_ERROR]]
    _drop_unreachable(rewritten)
    return rewritten


def _drop_unreachable(container: dict[str, Any]) -> None:
    states = container.get("States") or {}
    reached, pending = set(), [container.get("StartAt")]
    while pending:
        name = pending.pop()
        if name in reached or name not in states:
            continue
        reached.add(name)
        state = states[name]
        pending += [state.get("Next"), state.get("Default")]
        pending += [rule.get("Next") for rule in state.get("Choices") or []]
        pending += [catcher.get("Next") for catcher in state.get("Catch") or []]
    for name in [name for name in states if name not in reached]:
        del states[name]
    for state in states.values():
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                _drop_unreachable(state[key])
        for branch in state.get("Branches") or []:
            _drop_unreachable(branch)


def without_throttle_jitter(_logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
    """The TooManyRequests retrier keeps its backoff but loses its jitter (JitterStrategy NONE)."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        for retrier in state.get("Retry") or []:
            if THROTTLE_ERROR in retrier.get("ErrorEquals", []):
                retrier["JitterStrategy"] = "NONE"
    return rewritten
