"""TestState, AWS's API for running one state, answered by the local cloud as AWS answers it.

``definition`` is one state, or a whole state machine with ``stateName`` naming the state to test (also
inside a Map or Parallel). The state runs once with ``input``, ``variables`` and, with a mock, a given
``context`` object. ``mock`` replaces what the state calls (a Task's service, a Map's iterations, a
Parallel's branches) with ``result`` or ``errorOutput``; ``fieldValidationMode`` checks a result against the
service's API model as AWS does. ``stateConfiguration`` sets what earlier attempts would have:
``retrierRetryCount`` (how many retries already happened), ``mapIterationFailureCount`` (how many iterations
of a mocked Map failed). The answer is the state's ``status``:

- SUCCEEDED, with ``output`` and ``nextState`` (none after an End state);
- FAILED, with ``error`` and ``cause``;
- RETRIABLE: a retrier matches the error and has attempts left; the state does not wait or retry, the
  answer says which retrier (``inspectionData.errorDetails.retryIndex``) and the wait it would take
  (``retryBackoffIntervalSeconds``: IntervalSeconds x BackoffRate^retrierRetryCount, at most
  MaxDelaySeconds, without jitter);
- CAUGHT_ERROR: a catcher takes the error, with ``nextState`` its Next and ``output`` its output.

``inspectionLevel`` DEBUG or TRACE adds ``inspectionData``: the input and every data-flow step it went
through (afterInputPath, afterParameters/afterArguments, result, afterResultSelector, afterResultPath; for a
Map afterItemsPath, maxConcurrency and the tolerated failures), the variables given, and errorDetails.
An unmocked Task calls the local cloud's service (a Lambda Task invokes the local function) with the
``roleArn``'s credentials, as a state machine's Task does.

Ported from LocalStack (Apache License 2.0): ``localstack-core/localstack/services/stepfunctions/`` modules
``asl/component/test_state``, ``asl/eval/test_state``, ``asl/parse/test_state``,
``asl/static_analyser/test_state``, ``backend/test_state`` and ``test_state``, onto moto's interpreter (a
LocalStack port without TestState's 2025 features). Differences from that code: the wrappers are bound
per request (LocalStack keeps them on the classes, shared between concurrent requests), a retriable error
is reported without sleeping the backoff, and a mocked Map checks its tolerated failures whenever the
state declares a threshold.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

TEST_STATE_NAME: Final = "StateName"
# TestState runs for up to five minutes, then fails with States.Timeout (its API reference).
TEST_STATE_TIMEOUT_SECONDS: Final = 300
INSPECTION_LEVELS: Final = ("INFO", "DEBUG", "TRACE")
VALIDATION_MODES: Final = ("STRICT", "PRESENT", "NONE")
_CONTEXT_SECTIONS: Final[dict[str, dict[str, type]]] = {
    "Execution": {"Id": str, "Input": object, "Name": str, "RoleArn": str, "StartTime": str},
    "State": {"EnteredTime": str, "Name": str, "RetryCount": int},
    "StateMachine": {"Id": str, "Name": str},
    "Task": {"Token": str},
}


class _TestStateError(Exception):
    """A request TestState refuses: the error code and message AWS answers with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _validation(message: str) -> _TestStateError:
    return _TestStateError("ValidationException", message)


def _invalid_definition(message: str) -> _TestStateError:
    return _TestStateError("InvalidDefinition", message)


# ---------------------------------------------------------------------------------------------- the request


@dataclass(frozen=True)
class Mock:
    """``mock``: a result (parsed JSON) or an error, what the tested state would have got from its calls."""

    result: Any = None
    has_result: bool = False
    error: str | None = None
    cause: str | None = None
    validation_mode: str = "STRICT"

    @property
    def is_error(self) -> bool:
        return not self.has_result


@dataclass(frozen=True)
class TestStateRequest:
    __test__ = False  # not a pytest test class, whatever its name

    definition: str
    state_name: str | None
    input_value: Any
    variables: dict[str, Any] | None
    inspection_level: str
    role_arn: str | None
    reveal_secrets: bool
    mock: Mock | None
    context: dict[str, Any] | None
    retrier_retry_count: int = 0
    map_iteration_failure_count: int | None = None
    error_caused_by_state: str | None = None
    map_item_reader_data: Any = None
    has_configuration: bool = False

    @classmethod
    def from_parameters(cls, parameters: dict[str, Any]) -> TestStateRequest:
        configuration = parameters.get("stateConfiguration") or {}
        mock_input = parameters.get("mock")
        if mock_input is not None and {"result", "errorOutput"} <= mock_input.keys():
            raise _validation(
                "A test mock should have only one of the following fields: [result, errorOutput]."
            )
        if mock_input is not None and parameters.get("revealSecrets"):
            raise _validation("TestState does not support RevealSecrets when a mock is specified.")
        reader_data = configuration.get("mapItemReaderData")
        return cls(
            definition=parameters["definition"],
            state_name=parameters.get("stateName"),
            input_value=_json_field(parameters.get("input"), "input", default={}),
            variables=_json_field(parameters.get("variables"), "variables", default=None),
            inspection_level=parameters.get("inspectionLevel") or "INFO",
            role_arn=parameters.get("roleArn"),
            reveal_secrets=bool(parameters.get("revealSecrets")),
            mock=_mock_of(mock_input),
            context=_context_of(parameters.get("context")),
            retrier_retry_count=int(configuration.get("retrierRetryCount") or 0),
            map_iteration_failure_count=configuration.get("mapIterationFailureCount"),
            error_caused_by_state=configuration.get("errorCausedByState"),
            map_item_reader_data=_json_field(reader_data, "mapItemReaderData", default=None),
            has_configuration=bool(configuration),
        )


def _json_field(text: str | None, name: str, default: Any) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        code = "InvalidExecutionInput" if name == "input" else "ValidationException"
        raise _TestStateError(code, f"Invalid {name}: {error}") from None


def _mock_of(mock_input: dict[str, Any] | None) -> Mock | None:
    if mock_input is None:
        return None
    mode = mock_input.get("fieldValidationMode") or "STRICT"
    if "result" in mock_input:
        try:
            result = json.loads(mock_input["result"])
        except json.JSONDecodeError:
            raise _validation("Mocked result must be valid JSON") from None
        return Mock(result=result, has_result=True, validation_mode=mode)
    error_output = mock_input.get("errorOutput") or {}
    return Mock(error=error_output.get("error"), cause=error_output.get("cause"), validation_mode=mode)


def _context_of(text: str | None) -> dict[str, Any] | None:
    """The ``context`` object, checked as AWS checks it (sections and fields it knows, their types)."""
    if text is None:
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise _validation(f"Invalid Context object provided: {error}") from None
    if not isinstance(document, dict):
        raise _validation("Invalid Context object provided: the Context object must be a JSON object")
    for section, fields in document.items():
        if section == "Map":
            raise _validation(
                "Invalid Context object provided: 'Map' field is not supported when mocking a Context object"
            )
        known = _CONTEXT_SECTIONS.get(section)
        if known is None:
            raise _validation(f"Invalid Context object provided: Field '{section}' is not allowed")
        if not isinstance(fields, dict):
            raise _validation(f"Invalid Context object provided: {section} must be a object")
        for name, value in fields.items():
            expected = known.get(name)
            if expected is None:
                raise _validation(f"Invalid Context object provided: Field '{name}' is not allowed")
            if not _is_type(value, expected):
                kind = "string" if expected is str else "integer"
                raise _validation(f"Invalid Context object provided: {section}.{name} must be a {kind}")
    return document


def _is_type(value: Any, expected: type) -> bool:
    if expected is object:
        return True
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class TestStateRun:
    """One TestState request as it runs: what the wrappers read, and what the answer is built from."""

    __test__ = False

    request: TestStateRequest
    state: Any
    inspection: dict[str, Any] = field(default_factory=dict)
    # How the state ended before its end: ("choice", next), ("caught", next, error, cause) or
    # ("retriable", error, cause).
    outcome: tuple[str, ...] | None = None
    # The context object the state entered with, before a given one replaces it.
    execution_context: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, key: str, value: Any) -> None:
        with self.lock:
            self.inspection[key] = value

    def record_once(self, key: str, value: Any) -> None:
        with self.lock:
            self.inspection.setdefault(key, value)

    def error_details(self) -> dict[str, Any]:
        with self.lock:
            details: dict[str, Any] = self.inspection.setdefault("errorDetails", {})
            return details


_current = threading.local()


def _run_of(env: Any) -> TestStateRun | None:
    run: TestStateRun | None = getattr(env, "orderbatch_test_state", None)
    return run


def _to_json(value: Any) -> str:
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    text: str = to_json_str(value)
    return text


def _environment_class() -> type:
    """moto's Environment, carrying the run to every frame a state opens, and ending a TestState early."""
    if _environment_classes:
        return _environment_classes[0]
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning, ProgramState

    class Stopped(ProgramState):
        """The tested state is done (a Choice made, an error caught or retriable): the program stops."""

    class TestStateEnvironment(Environment):
        orderbatch_test_state: TestStateRun | None = None

        @classmethod
        def as_frame_of(cls, env: Any, event_history_frame_cache: Any = None) -> Any:
            # moto builds every frame as a plain Environment; a TestState's frames stay TestState ones.
            return cls.as_inner_frame_of(
                env=env,
                variable_store=env.variable_store,
                event_history_frame_cache=event_history_frame_cache,
            )

        @classmethod
        def as_inner_frame_of(
            cls, env: Any, variable_store: Any, event_history_frame_cache: Any = None
        ) -> Any:
            run = _run_of(env)
            given = run.request.context if run is not None else None
            if given is not None and run is not None:
                # moto builds a frame from the execution's context object; the given one replaces it after.
                _replace_context(env, run.execution_context)
            frame: Any = super().as_inner_frame_of(
                env=env, variable_store=variable_store, event_history_frame_cache=event_history_frame_cache
            )
            frame.orderbatch_test_state = run
            if given is not None:
                _replace_context(env, given)
                _replace_context(frame, given)
            return frame

        def is_mocked_mode(self) -> bool:
            run = _run_of(self)
            return run is not None and run.request.mock is not None

        def get_current_mocked_response(self) -> Any:
            return _mocked_response(_run_of(self))

        def stop_test(self) -> None:
            with self._state_mutex:
                if isinstance(self._program_state, ProgramRunning):
                    self._program_state = Stopped()
                    frames: list[Any] = list(self._frames)
                    for frame in frames:
                        frame.stop_test()
                    self.program_state_event.set()
                    self.program_state_event.clear()

    _environment_classes.append(TestStateEnvironment)
    return TestStateEnvironment


_environment_classes: list[type] = []


def _mocked_response(run: TestStateRun | None) -> Any:
    """The mock as moto's mocked Task evaluation takes it."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import (
        StateTaskLambda,
    )
    from moto.stepfunctions.parser.mocking.mock_config import MockedResponseReturn, MockedResponseThrow

    mock = run.request.mock if run is not None else None
    if run is None or mock is None:
        raise RuntimeError("TestState: no mock for this state")
    if not mock.has_result:
        return MockedResponseThrow(0, 0, mock.error or "", mock.cause or "")
    result = copy.deepcopy(mock.result)
    # A Lambda function's ARN as the Resource: the result is what the function returned.
    if isinstance(run.state, StateTaskLambda):
        result = {"StatusCode": 200, "Payload": result}
    return MockedResponseReturn(0, 0, result)


def _replace_context(env: Any, context: dict[str, Any]) -> None:
    # In place: the state's data ($states.context) holds the same dictionary.
    data = env.states.context_object.context_object_data
    data.clear()
    data.update(copy.deepcopy(context))


def _conclude(env: Any, *outcome: str) -> None:
    """The tested state is done before its end: record how, and stop the program there."""
    run = _run_of(env)
    if run is None:
        return
    with run.lock:
        if run.outcome is None:
            run.outcome = outcome
    env.stop_test()


# ---------------------------------------------------------------------------------------------- parsing


def _parse(request: TestStateRequest) -> Any:
    """The state to test, decorated for this run; InvalidDefinition or ValidationException otherwise."""
    from antlr4 import CommonTokenStream, InputStream
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
    from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException, SyntaxErrorListener

    listener = SyntaxErrorListener()
    parser = ASLParser(CommonTokenStream(ASLLexer(InputStream(request.definition))))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    tree = parser.state_machine() if request.state_name is not None else parser.state_decl_body()
    if listener.errors:
        raise _invalid_definition(
            f"Invalid State Machine Definition: {ASLParserException(errors=listener.errors)!r}"
        )
    preprocessor = _preprocessor_class()()
    try:
        if request.state_name is None:
            state = preprocessor._common_state_field_of(state_props=preprocessor.visit(tree))
        else:
            program = preprocessor.visitState_machine(ctx=tree)
            state = _find_state(request.state_name, program.states.states)
    except (ValueError, TypeError) as error:
        raise _invalid_definition(f"Invalid State Machine Definition: {error}") from None
    if state is None:
        raise _validation("State not found in definition")
    return state


def _find_state(name: str, states: dict[str, Any]) -> Any:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import StateParallel

    if name in states:
        return states[name]
    for state in states.values():
        nested: list[dict[str, Any]] = []
        if isinstance(state, StateMap):
            nested.append(state.iteration_component._states.states)
        elif isinstance(state, StateParallel):
            nested.extend(program.states.states for program in state.branches.programs)
        for inner in nested:
            found = _find_state(name, inner)
            if found is not None:
                return found
    return None


_preprocessor_classes: list[type] = []

# Data-flow steps the inspection data shows, by the preprocessor method that builds them.
_INSPECTED_STEPS: Final = {
    "visitInput_path_decl": "afterInputPath",
    "visitParameters_decl": "afterParameters",
    "visitResult_selector_decl": "afterResultSelector",
    "visitResult_path_decl": "afterResultPath",
    "visitResult_decl": "result",
    "visitItems_path_decl": "afterItemsPath",
    "visitArguments_string_jsonata": "afterArguments",
    "visitArguments_jsonata_template_value_object": "afterArguments",
    "visitMax_concurrency_int": "maxConcurrency",
    "visitMax_concurrency_jsonata": "maxConcurrency",
    "visitMax_concurrency_path": "maxConcurrency",
    "visitTolerated_failure_count_int": "toleratedFailureCount",
    "visitTolerated_failure_count_path": "toleratedFailureCount",
    "visitTolerated_failure_count_string_jsonata": "toleratedFailureCount",
    "visitTolerated_failure_percentage_number": "toleratedFailurePercentage",
    "visitTolerated_failure_percentage_path": "toleratedFailurePercentage",
    "visitTolerated_failure_percentage_string_jsonata": "toleratedFailurePercentage",
}


def _preprocessor_class() -> type:
    """moto's preprocessor, naming a lone state ``StateName`` and recording every data-flow step it runs."""
    if _preprocessor_classes:
        return _preprocessor_classes[0]
    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguage
    from moto.stepfunctions.parser.asl.component.test_state.state.test_state_state_props import (
        TestStateStateProps,
    )
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    class TestStatePreprocessor(Preprocessor):
        def __init__(self) -> None:
            super().__init__()
            self._state_names: list[str] = []

        def visitState_decl(self, ctx: Any) -> Any:  # noqa: N802 - ANTLR visitor name
            name = self._inner_string_of(parser_rule_context=ctx.string_literal())
            self._state_names.append(name or TEST_STATE_NAME)
            return self._common_state_field_of(state_props=self.visit(ctx.state_decl_body()))

        def visitState_decl_body(self, ctx: Any) -> Any:  # noqa: N802 - ANTLR visitor name
            self._open_query_language_scope(ctx)
            state_props = TestStateStateProps()
            state_props.name = self._state_names.pop() if self._state_names else TEST_STATE_NAME
            for child in ctx.children:
                state_props.add(self.visit(child))
            if state_props.get(QueryLanguage) is None:
                state_props.add(self._get_current_query_language())
            self._close_query_language_scope()
            return state_props

    for method, key in _INSPECTED_STEPS.items():
        setattr(TestStatePreprocessor, method, _recording_visitor(getattr(Preprocessor, method), key))
    _preprocessor_classes.append(TestStatePreprocessor)
    return TestStatePreprocessor


def _recording_visitor(visit: Callable[..., Any], key: str) -> Callable[..., Any]:
    def visit_and_record(self: Any, ctx: Any) -> Any:
        component = visit(self, ctx)
        evaluate = component._eval_body

        def eval_body(env: Any) -> None:
            evaluate(env)
            run = _run_of(env)
            if run is not None:
                value = env.stack[-1]
                number = isinstance(value, int | float) and not isinstance(value, bool)
                run.record(key, value if number and key in _NUMERIC_INSPECTION else _to_json(value))

        component._eval_body = eval_body
        return component

    return visit_and_record


_NUMERIC_INSPECTION: Final = frozenset(
    {"maxConcurrency", "toleratedFailureCount", "toleratedFailurePercentage"}
)


# ---------------------------------------------------------------------------------------------- validation


def _validate(request: TestStateRequest, state: Any) -> None:
    """What AWS refuses before running anything, in the order its answers show."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import StateParallel
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask
    from moto.stepfunctions.parser.asl.component.state.fail.state_fail import StateFail
    from moto.stepfunctions.parser.asl.component.state.state_pass.state_pass import StatePass
    from moto.stepfunctions.parser.asl.component.state.state_succeed.state_succeed import StateSucceed

    mock = request.mock
    if request.map_iteration_failure_count is not None:
        if mock is None:
            raise _validation(
                "TestState does not support MapIterationFailureCount when a mock is not specified."
            )
        if isinstance(mock.result, list) and request.map_iteration_failure_count > len(mock.result):
            raise _validation(
                "Map iteration failure count must be less than or equal to the number of Map iterations"
            )
    if mock is None and isinstance(state, StateMap | StateParallel):
        raise _invalid_definition(
            "TestState API does not support Map or Parallel states. Supported state types include: "
            "[Task, Wait, Pass, Succeed, Fail, Choice]"
        )
    if mock is not None and isinstance(state, StatePass | StateFail | StateSucceed):
        raise _validation(f"State type '{state.state_type.name}' is not supported when a mock is specified")
    if mock is not None and mock.has_result:
        _validate_mock_result(mock, state)
    if request.context is not None and "Task" in request.context and not _waits_for_a_token(state):
        raise _validation(
            "Invalid Context object provided: Context object contains 'Task' when state is not a Task state "
            "with a '.sync' or '.waitForTaskToken' service integration pattern"
        )
    if request.role_arn is None and mock is None and isinstance(state, StateTask):
        raise _validation("RoleArn must be specified when testing a Task state")
    if mock is None and _waits_for_a_token(state):
        # AWS runs these patterns only with a mock (TestState's API reference); the wording is ours.
        raise _validation(
            "TestState supports the .sync and .waitForTaskToken integration patterns only when a mock is "
            "specified"
        )


def _waits_for_a_token(state: Any) -> bool:
    resource = getattr(state, "resource", None)
    return getattr(resource, "condition", None) is not None


def _validate_mock_result(mock: Mock, state: Any) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import StateParallel
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    result = mock.result
    if isinstance(state, StateMap):
        if state.result_writer is not None and not isinstance(result, dict):
            raise _validation("Mocked result must be a JSON object.")
        if state.result_writer is None and not isinstance(result, list):
            raise _validation("Mocked result must be an array.")
    elif isinstance(state, StateParallel):
        if not isinstance(result, list):
            raise _validation("Mocked result must be an array.")
        if len(result) != len(state.branches.programs):
            raise _validation(
                "Mocked result must contain the same number of items as number of Parallel branches."
            )
    elif isinstance(state, StateTaskService) and mock.validation_mode != "NONE":
        output_shape = _output_shape(state)
        if output_shape is not None:
            _check_shape(result, output_shape, None, strict=mock.validation_mode == "STRICT")


def _output_shape(state: Any) -> Any:
    """The botocore output shape of the API a service Task calls; None where there is no API model."""
    import botocore.session
    from botocore.exceptions import UnknownServiceError
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_api_gateway import (  # noqa: E501
        StateTaskServiceApiGateway,
    )

    if isinstance(state, StateTaskServiceApiGateway):
        return None
    try:
        model = botocore.session.get_session().get_service_model(state._get_boto_service_name())
        operation = model.operation_model(_api_operation_name(model, state._get_boto_service_action()))
    except (UnknownServiceError, LookupError, ValueError):
        return None
    return operation.output_shape


def _api_operation_name(model: Any, action: str) -> str:
    """botocore's operation name for Step Functions' lowerCamel or snake_case action name."""
    wanted = action.replace("_", "").lower()
    for name in model.operation_names:
        if name.lower() == wanted:
            return str(name)
    raise LookupError(action)


def _shape_error(message: str) -> _TestStateError:
    return _validation(f"Mock result schema validation error: {message}")


def _check_shape(value: Any, shape: Any, name: str | None, *, strict: bool) -> None:  # noqa: C901 - one branch per botocore type
    """A mocked result against the API's output shape, as TestState's STRICT and PRESENT modes check it."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    kind = shape.type_name
    if kind == "document":
        return
    if kind == "structure":
        if not isinstance(value, dict):
            raise _shape_error(f"Field '{name}' must be an object")
        members = {StateTaskService._to_sfn_cased(key): member for key, member in shape.members.items()}
        if strict:
            for required in shape.required_members:
                if StateTaskService._to_sfn_cased(required) not in value:
                    raise _shape_error(
                        f"Required field '{StateTaskService._to_sfn_cased(required)}' is missing"
                    )
        for key, item in value.items():
            if key in members:  # fields the API does not model pass: forward compatibility
                _check_shape(item, members[key], key, strict=strict)
        return
    if kind == "list":
        if not isinstance(value, list):
            raise _shape_error(f"Field '{name}' must be an array")
        for item in value:
            _check_shape(item, shape.member, name, strict=strict)
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise _shape_error(f"Field '{name}' must be an object")
        for item in value.values():
            _check_shape(item, shape.value, name, strict=strict)
        return
    _check_scalar(value, shape, name)


def _check_scalar(value: Any, shape: Any, name: str | None) -> None:
    kind = shape.type_name
    metadata = shape.metadata
    if kind in ("string", "timestamp", "blob"):
        if not isinstance(value, str):
            raise _shape_error(f"Field '{name}' must be a string")
        if kind == "string" and shape.enum and value not in shape.enum:
            raise _shape_error(f"Field '{name}' is not an expected value")
        if "min" in metadata and len(value) < metadata["min"]:
            raise _shape_error(f"Field '{name}' is smaller than the minimum length")
        return
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _shape_error(f"Field '{name}' must be a boolean")
        return
    whole = kind in ("integer", "long")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or (whole and not isinstance(value, int)):
        raise _shape_error(f"Field '{name}' must be a number")
    if "min" in metadata and value < metadata["min"]:
        raise _shape_error(f"Field '{name}' is less than the minimum value")
    if "max" in metadata and value > metadata["max"]:
        raise _shape_error(f"Field '{name}' exceeds the maximum value")


# ---------------------------------------------------------------------------------------------- decoration


def _decorate(run: TestStateRun, single_state: bool) -> None:
    """Bind this run's behaviour to the tested state (a fresh object for every request)."""
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import StateParallel
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask

    state = run.state
    _stop_after_the_state(state)
    if isinstance(state, ExecutionState):
        _decorate_execution_state(run, state)
        if isinstance(state, StateTask):
            _decorate_task(state)
        elif isinstance(state, StateMap):
            _decorate_map(run, state)
        elif isinstance(state, StateParallel):
            _decorate_parallel(run, state)
    else:
        _decorate_common_state(run, state, single_state)


def _stop_after_the_state(state: Any) -> None:
    """The run ends with the tested state: its next state is reported, not entered."""
    evaluate = state._eval_body

    def eval_body(env: Any) -> None:
        evaluate(env)
        if env.is_running():
            _conclude(env, "choice", env.next_state_name)

    state._eval_body = eval_body


def _decorate_common_state(run: TestStateRun, state: Any, single_state: bool) -> None:
    from moto.stepfunctions.parser.asl.component.state.state_continue_with import ContinueWithEnd
    from moto.stepfunctions.parser.asl.component.state.state_pass.state_pass import StatePass
    from moto.stepfunctions.parser.asl.component.state.wait.state_wait import StateWait

    # TestState reports where a Wait goes; it does not wait.
    evaluate_state = _no_wait if isinstance(state, StateWait) else state._eval_state

    def eval_state(env: Any) -> None:
        given = env.states.get_input()  # after InputPath
        jsonpath = state._is_language_query_jsonpath()
        if jsonpath and single_state and not isinstance(state, StatePass):
            run.record_once("afterInputPath", _to_json(given))
        evaluate_state(env)
        if jsonpath and isinstance(state, StatePass) and isinstance(state.continue_with, ContinueWithEnd):
            _pass_state_steps(run, state, given)

    state._eval_state = eval_state


def _no_wait(env: Any) -> None:
    """A Wait state's evaluation in TestState: nothing to wait for."""


def _pass_state_steps(run: TestStateRun, state: Any, given: Any) -> None:
    """A Pass state's data flow as AWS shows it: steps it has not recorded take the step before's value."""
    if state.result is not None:
        with run.lock:
            run.inspection.pop("afterInputPath", None)
            run.inspection.pop("afterParameters", None)
        run.record_once("afterResultSelector", _to_json(state.result.result_obj))
        run.record_once("afterResultPath", run.inspection["afterResultSelector"])
        return
    run.record_once("afterInputPath", _to_json(given))
    run.record_once("afterParameters", run.inspection["afterInputPath"])
    run.record_once("afterResultSelector", run.inspection["afterParameters"])
    run.record_once("afterResultPath", run.inspection["afterResultSelector"])


def _record_after(component: Any, run: TestStateRun, key: str) -> None:
    """Record a default step (InputPath "$", ResultPath "$") the preprocessor never built."""
    if component is None:
        return
    evaluate = component._eval_body

    def eval_body(env: Any) -> None:
        evaluate(env)
        run.record_once(key, _to_json(env.stack[-1]))

    component._eval_body = eval_body


def _decorate_execution_state(run: TestStateRun, state: Any) -> None:
    if state._is_language_query_jsonpath():
        _record_after(state.input_path, run, "afterInputPath")
        _record_after(state.result_path, run, "afterResultPath")
    execute = state._eval_execution

    def eval_execution(env: Any) -> None:
        execute(env)
        if state._is_language_query_jsonpath() and isinstance(env.stack[-1], dict | list | str | int | float):
            run.record_once("afterResultSelector", _to_json(env.stack[-1]))

    state._eval_execution = eval_execution
    if state.retry is not None:
        state._handle_retry = lambda env, failure_event: _report_retry(run, state, env, failure_event)
    if state.catch is not None:
        handle_catch = state._handle_catch

        def report_catch(env: Any, failure_event: Any) -> None:
            # moto also offers the error output as $states.result to a catcher; AWS offers errorOutput only.
            env.states._states_data.pop("result", None)
            handle_catch(env, failure_event)
            _report_catch(run, state, env, failure_event)

        state._handle_catch = report_catch


def _error_and_cause(failure_event: Any) -> tuple[str, str]:
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState

    spec = ExecutionState._construct_error_output_value(failure_event)
    return spec.get("Error"), spec.get("Cause")


def _matches(error_equals: Any, env: Any, error_name: Any) -> bool:
    env.stack.append(error_name)
    error_equals.eval(env)
    return bool(env.stack.pop())


def _report_retry(run: TestStateRun, state: Any, env: Any, failure_event: Any) -> Any:
    """The first retrier matching the error: RETRIABLE while it has attempts left, without waiting."""
    from moto.stepfunctions.parser.asl.component.common.retry.retry_outcome import RetryOutcome

    retry_count = run.request.retrier_retry_count
    for index, retrier in enumerate(state.retry.retriers):
        if not _matches(retrier.error_equals, env, failure_event.error_name):
            continue
        run.error_details()["retryIndex"] = index
        if retry_count >= retrier.max_attempts.attempts:
            return RetryOutcome.CannotRetry
        wait = retrier.interval_seconds.seconds * retrier.backoff_rate.rate**retry_count
        wait = min(wait, retrier.max_delay_seconds.max_delays_seconds)
        run.error_details()["retryBackoffIntervalSeconds"] = int(wait)
        _conclude(env, "retriable", *_error_and_cause(failure_event))
        return RetryOutcome.CanRetry
    return RetryOutcome.NoRetrier


def _report_catch(run: TestStateRun, state: Any, env: Any, failure_event: Any) -> None:
    from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome

    if env.stack[-1] != CatchOutcome.Caught:
        return
    for index, catcher in enumerate(state.catch.catchers):
        if _matches(catcher.error_equals, env, failure_event.error_name):
            run.error_details()["catchIndex"] = index
            break
    _conclude(env, "caught", env.next_state_name, *_error_and_cause(failure_event))


def _decorate_task(state: Any) -> None:
    execute = state._eval_execution

    def eval_execution(env: Any) -> None:
        execute(env)
        run = _run_of(env)
        if run is None:
            return
        run.record("result", _to_json(env.stack[-1]))
        if state._is_language_query_jsonpath():
            run.record_once("afterParameters", _to_json(env.states.get_input()))

    state._eval_execution = eval_execution


def _decorate_map(run: TestStateRun, state: Any) -> None:
    max_concurrency = state.max_concurrency_decl._eval_max_concurrency

    def record_max_concurrency(env: Any) -> int:
        value: int = max_concurrency(env)
        run.record("maxConcurrency", value)
        return value

    state.max_concurrency_decl._eval_max_concurrency = record_max_concurrency
    mock = run.request.mock
    if mock is None:
        return
    if state.result_writer is not None:
        # The mocked result is what the ResultWriter would have answered: nothing is written.
        state.result_writer._eval_body = lambda env: None

    def mocked_iterations(env: Any) -> None:
        eval_input = env.stack.pop()
        failures = run.request.map_iteration_failure_count
        if failures and _exceeds_tolerance(state, env, failures, _iteration_count(eval_input, mock)):
            _throw(
                env,
                "States.ExceedToleratedFailureThreshold",
                "The specified tolerated failure threshold was exceeded",
            )
        _answer_with_mock(env, mock)

    state.iteration_component._eval_body = mocked_iterations


def _iteration_count(eval_input: Any, mock: Mock) -> int:
    if isinstance(mock.result, list):
        return len(mock.result)
    items = getattr(eval_input, "input_items", None)
    return len(items) if isinstance(items, list) else 0


def _exceeds_tolerance(state: Any, env: Any, failures: int, iterations: int) -> bool:
    """Whether ``failures`` failed iterations pass a threshold the Map declares (one it does not declare is
    not checked: AWS answers SUCCEEDED for a Map without one, whatever the failure count)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
        ToleratedFailureCountInt,
        ToleratedFailurePercentage,
    )

    count_decl = state.tolerated_failure_count_decl
    count_declared = not (
        isinstance(count_decl, ToleratedFailureCountInt) and count_decl.tolerated_failure_count == 0
    )
    if count_declared and failures > count_decl._eval_tolerated_failure_count(env):
        return True
    percentage_decl = state.tolerated_failure_percentage_decl
    if (
        isinstance(percentage_decl, ToleratedFailurePercentage)
        and percentage_decl.tolerated_failure_percentage == 0
    ):
        return False
    percentage = percentage_decl._eval_tolerated_failure_percentage(env)
    return iterations > 0 and failures * 100 / iterations > percentage


def _decorate_parallel(run: TestStateRun, state: Any) -> None:
    mock = run.request.mock
    if mock is not None:

        def mocked_branches(env: Any) -> None:
            env.stack.pop()  # the branches' input
            _answer_with_mock(env, mock)

        state.branches._eval_body = mocked_branches
    execute = state._eval_execution

    def eval_execution(env: Any) -> None:
        execute(env)
        # AWS shows neither the path nor the arguments a Parallel state hands its branches.
        with run.lock:
            run.inspection.pop(
                "afterInputPath" if state._is_language_query_jsonpath() else "afterArguments", None
            )

    state._eval_execution = eval_execution


def _answer_with_mock(env: Any, mock: Mock) -> None:
    if mock.has_result:
        env.stack.append(copy.deepcopy(mock.result))
    else:
        _throw(env, mock.error or "", mock.cause or "")


def _throw(env: Any, error: str, cause: str) -> None:
    from orderbatch.localcloud.stepfunctions.mock_config import raise_mocked_error

    raise_mocked_error(env, error, cause)


# ---------------------------------------------------------------------------------------------- running


def test_state(parameters: dict[str, Any], account_id: str, region: str) -> dict[str, Any]:
    """TestState's answer to ``parameters`` (the API's request members), or _TestStateError."""
    request = TestStateRequest.from_parameters(parameters)
    state = _parse(request)
    _validate(request, state)
    run = TestStateRun(request, state)
    _decorate(run, single_state=request.state_name is None)
    env = _environment(run, account_id, region)
    _evaluate(run, env)
    return _answer(run, env)


test_state.__test__ = False  # type: ignore[attr-defined]


def _environment(run: TestStateRun, account_id: str, region: str) -> Any:
    from moto.stepfunctions.parser.api import StateMachineType
    from moto.stepfunctions.parser.asl.eval.evaluation_details import AWSExecutionDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext
    from moto.stepfunctions.parser.asl.eval.states import ContextObjectData, ExecutionData, StateMachineData
    from moto.stepfunctions.parser.asl.eval.variable_store import VariableStore

    from orderbatch.localcloud.stepfunctions.context_object import aws_timestamp

    request = run.request
    machine_name, execution_name = f"TestState-{uuid.uuid4()}", str(uuid.uuid4())
    variables = VariableStore()
    for name, value in (request.variables or {}).items():
        variables.set(name, value)
    env = _environment_class()(
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
    env.orderbatch_test_state = run
    run.execution_context = copy.deepcopy(env.states.context_object.context_object_data)
    return env


def _evaluate(run: TestStateRun, env: Any) -> None:
    """Run the tested state, at most TestState's five minutes; its outcome is left in ``env`` and ``run``."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    if run.request.variables:
        run.record("variables", _to_json(run.request.variables))
    run.record("input", _to_json(env.states.get_input()))
    env.next_state_name = run.state.name

    def evaluate() -> None:
        try:
            run.state.eval(env=env)
        except FailureEventException as failure:
            details = failure.get_execution_failed_event_details()
            env.set_error(details or ExecutionFailedEventDetails(error="States.Runtime", cause=""))
        except Exception as error:  # any interpreter error is the state's States.Runtime
            env.set_error(
                ExecutionFailedEventDetails(error="States.Runtime", cause=f"{type(error).__name__}({error})")
            )

    worker = threading.Thread(target=evaluate, name="test-state", daemon=True)
    worker.start()
    worker.join(timeout=TEST_STATE_TIMEOUT_SECONDS)
    if worker.is_alive():
        env.set_timed_out()


def _answer(run: TestStateRun, env: Any) -> dict[str, Any]:
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded, ProgramError, ProgramTimedOut

    program_state = env.program_state()
    answer: dict[str, Any]
    outcome = run.outcome
    if outcome is not None and outcome[0] == "choice":
        answer = {"status": "SUCCEEDED", "nextState": outcome[1], "output": _to_json(env.states.get_input())}
    elif outcome is not None and outcome[0] == "caught":
        answer = {
            "status": "CAUGHT_ERROR",
            "nextState": outcome[1],
            "output": _to_json(env.states.get_input()),
        }
        answer |= {"error": outcome[2], "cause": outcome[3]}
    elif outcome is not None and outcome[0] == "retriable":
        answer = {"status": "RETRIABLE", "error": outcome[1], "cause": outcome[2]}
    elif isinstance(program_state, ProgramEnded):
        answer = {"status": "SUCCEEDED", "output": _to_json(env.states.get_input())}
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


# ---------------------------------------------------------------------------------------------- moto


def patch() -> None:
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    class TestStateRefused(ServiceException):
        def __init__(self, refusal: _TestStateError) -> None:
            super().__init__(refusal.code, refusal.message)

    def answer_test_state(self: Any) -> Any:
        parameters = json.loads(self.body or "{}")
        try:
            answer = test_state(parameters, self.current_account, self.region)
        except _TestStateError as refusal:
            raise TestStateRefused(refusal) from None
        return ActionResult(answer)

    StepFunctionResponse.test_state = answer_test_state  # type: ignore[attr-defined]
