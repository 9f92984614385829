"""TestState's runs, in process: moto's state objects and classes stay as moto made them.

A request's behaviour (stop after the state, report a retry, record the data flow) lives in its run, found
from the environment the state runs in; nothing is bound onto the parsed state's objects, and an
execution's environment belongs to no run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sam_local_cloud.moto_seam.stepfunctions import Environment
from sam_local_cloud.stepfunctions import apply_interpreter_patches
from sam_local_cloud.stepfunctions.teststate.answer import answer_run, answer_test_state
from sam_local_cloud.stepfunctions.teststate.interpreter import parse, plan, run_of
from sam_local_cloud.stepfunctions.teststate.request import Request

ACCOUNT, REGION = "123456789012", "us-east-1"
RETRIED_TASK = {
    "Type": "Task",
    "Resource": "arn:aws:states:::lambda:invoke",
    "Parameters": {"FunctionName": "reserve", "Payload.$": "$"},
    "Retry": [{"ErrorEquals": ["Throttled"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 4}],
    "End": True,
}
MOCKED_THROTTLE = {"errorOutput": {"error": "Throttled", "cause": "slow down"}}
_METHODS = ("_eval_body", "_eval_state", "_eval_execution", "_handle_retry", "_handle_catch")


@pytest.fixture(scope="module", autouse=True)
def _interpreter() -> None:
    apply_interpreter_patches()


def _objects_of(component: Any, seen: set[int] | None = None) -> list[Any]:
    """The state and every component object it holds (moto's component tree)."""
    seen = set() if seen is None else seen
    if id(component) in seen or not hasattr(component, "__dict__"):
        return []
    seen.add(id(component))
    found = [component]
    for value in vars(component).values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if type(item).__module__.startswith("moto.stepfunctions"):
                found.extend(_objects_of(item, seen))
    return found


def test_a_retriable_error_is_answered_without_binding_anything_on_the_state() -> None:
    parameters = {
        "definition": json.dumps(RETRIED_TASK),
        "input": json.dumps({"order": 7}),
        "inspectionLevel": "DEBUG",
        "mock": MOCKED_THROTTLE,
        "stateConfiguration": {"retrierRetryCount": 1},
    }
    request = Request.from_parameters(parameters)
    run = plan(parse(request), request)

    answer = answer_run(run, ACCOUNT, REGION)

    assert answer["status"] == "RETRIABLE"
    assert (answer["error"], answer["cause"]) == ("Throttled", "slow down")
    # IntervalSeconds x BackoffRate^retrierRetryCount.
    assert answer["inspectionData"]["errorDetails"] == {"retryIndex": 0, "retryBackoffIntervalSeconds": 6}
    assert json.loads(answer["inspectionData"]["afterParameters"]) == {
        "FunctionName": "reserve",
        "Payload": {"order": 7},
    }
    objects = _objects_of(run.state)
    assert len(objects) > 5
    rebound = [(type(obj).__name__, name) for obj in objects for name in _METHODS if name in vars(obj)]
    assert rebound == []
    assert [name for obj in objects for name in vars(obj) if name.startswith("orderbatch_")] == []


def test_a_retrier_out_of_attempts_leaves_the_error_failed() -> None:
    answer = answer_test_state(
        {
            "definition": json.dumps(RETRIED_TASK),
            "mock": MOCKED_THROTTLE,
            "stateConfiguration": {"retrierRetryCount": 4},
        },
        ACCOUNT,
        REGION,
    )

    assert answer == {"status": "FAILED", "error": "Throttled", "cause": "slow down"}


def test_each_run_records_its_own_data_flow() -> None:
    pass_state = {"Type": "Pass", "Parameters": {"seen.$": "$.value"}, "Next": "Ship"}
    answers = [
        answer_test_state(
            {
                "definition": json.dumps(pass_state),
                "input": json.dumps({"value": n}),
                "inspectionLevel": "DEBUG",
            },
            ACCOUNT,
            REGION,
        )
        for n in (1, 2)
    ]

    assert [answer["nextState"] for answer in answers] == ["Ship", "Ship"]
    assert [json.loads(answer["output"]) for answer in answers] == [{"seen": 1}, {"seen": 2}]
    assert [json.loads(answer["inspectionData"]["afterParameters"]) for answer in answers] == [
        {"seen": 1},
        {"seen": 2},
    ]


def test_an_executions_environment_belongs_to_no_test_state_run() -> None:
    assert run_of(Environment.__new__(Environment)) is None
