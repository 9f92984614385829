"""TestState's answer: the request parsed, validated and run, and the API action that answers it."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from sam_local_cloud.json_types import JsonObject
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam.stepfunctions import (
    ActionResult,
    AWSExecutionDetails,
    ContextObjectData,
    EventHistoryContext,
    ExecutionData,
    ProgramEnded,
    ProgramError,
    ProgramTimedOut,
    ServiceException,
    StateMachineData,
    StateMachineType,
    StepFunctionResponse,
    VariableStore,
)
from sam_local_cloud.stepfunctions.context_object import aws_timestamp
from sam_local_cloud.stepfunctions.teststate.interpreter import (
    CONCERN,
    SingleStateEnvironment,
    StateRun,
    evaluate,
    parse,
    plan,
    to_json,
)
from sam_local_cloud.stepfunctions.teststate.request import Request, RequestRefusedError
from sam_local_cloud.stepfunctions.teststate.validation import validate


def answer_test_state(parameters: dict[str, Any], account_id: str, region: str) -> JsonObject:
    """TestState's answer to ``parameters`` (the API's request members), or RequestRefusedError."""
    request = Request.from_parameters(parameters)
    parsed = parse(request)
    validate(request, parsed.state)
    return answer_run(plan(parsed, request), account_id, region)


def answer_run(run: StateRun, account_id: str, region: str) -> JsonObject:
    """The answer of a planned run, once its state has run in an environment of its own."""
    env = _environment(run, account_id, region)
    evaluate(run, env)
    return _answer(run, env)


def _environment(run: StateRun, account_id: str, region: str) -> SingleStateEnvironment:
    request = run.request
    machine_name, execution_name = f"TestState-{uuid.uuid4()}", str(uuid.uuid4())
    variables = VariableStore()
    given = request.variables or {}
    if not isinstance(given, dict):
        raise TypeError(f"variables is a {type(given).__name__}, not an object")
    for name, value in given.items():
        variables.set(name, value)
    env = SingleStateEnvironment(
        # Without a role (a mocked state) a Task has none to call as.
        aws_execution_details=AWSExecutionDetails(
            account=account_id, region=region, role_arn=request.role_arn or ""
        ),
        execution_type=StateMachineType.STANDARD,
        context=ContextObjectData(
            Execution=ExecutionData(
                Id=f"arn:aws:states:{region}:{account_id}:express:{machine_name}:{execution_name}",
                Input=copy.deepcopy(request.input_value),
                Name=execution_name,
                RoleArn=request.role_arn,  # type: ignore[typeddict-item]  # null without a role, as on AWS
                StartTime=aws_timestamp(datetime.now(UTC)),
            ),
            StateMachine=StateMachineData(
                Id=f"arn:aws:states:{region}:{account_id}:stateMachine:{machine_name}", Name=machine_name
            ),
        ),
        event_history_context=EventHistoryContext.of_program_start(),
        cloud_watch_logging_session=None,
        activity_store={},
        variable_store=variables,
    )
    env.belong_to(run)
    run.execution_context = dict(copy.deepcopy(env.states.context_object.context_object_data))
    return env


def _answer(run: StateRun, env: SingleStateEnvironment) -> JsonObject:
    program_state = env.program_state()
    answer: JsonObject
    outcome = run.outcome
    if outcome is not None and outcome[0] == "choice":
        answer = {"status": "SUCCEEDED", "nextState": outcome[1], "output": to_json(env.states.get_input())}
    elif outcome is not None and outcome[0] == "caught":
        answer = {
            "status": "CAUGHT_ERROR",
            "nextState": outcome[1],
            "output": to_json(env.states.get_input()),
        }
        answer |= {"error": outcome[2], "cause": outcome[3]}
    elif outcome is not None and outcome[0] == "retriable":
        answer = {"status": "RETRIABLE", "error": outcome[1], "cause": outcome[2]}
    elif isinstance(program_state, ProgramEnded):
        answer = {"status": "SUCCEEDED", "output": to_json(env.states.get_input())}
    elif isinstance(program_state, ProgramError):
        details = program_state.error or {}
        answer = {"status": "FAILED", "error": details.get("error"), "cause": details.get("cause")}
    elif isinstance(program_state, ProgramTimedOut):
        answer = {"status": "FAILED", "error": "States.Timeout", "cause": ""}
    else:
        answer = {"status": "FAILED", "error": "States.Runtime", "cause": "the state did not finish"}
    answer = {key: value for key, value in answer.items() if value is not None}
    if run.request.inspection_level in ("DEBUG", "TRACE"):
        with run.lock:
            answer["inspectionData"] = copy.deepcopy(run.inspection)
    return answer


class RefusedByTestState(ServiceException):
    """A refused request as moto's responses answer an error (its code and message)."""

    def __init__(self, refusal: RequestRefusedError) -> None:
        super().__init__(refusal.code, refusal.message)


def _handle_test_state(response: StepFunctionResponse) -> ActionResult:
    """``StepFunctionResponse.test_state``: the API action moto lacks."""
    parameters = json.loads(response.body or "{}")
    try:
        answer = answer_test_state(parameters, response.current_account, response.region)
    except RequestRefusedError as refusal:
        raise RefusedByTestState(refusal) from None
    return ActionResult(answer)


def register_hooks() -> None:
    hooks.add(StepFunctionResponse, "test_state", _handle_test_state, concern=CONCERN)
