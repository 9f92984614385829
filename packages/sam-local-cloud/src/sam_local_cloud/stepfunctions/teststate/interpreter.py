"""moto's interpreter running one state for TestState: parsed alone, watched, stopped after it.

moto's classes are not changed per request. A request's ``StateRun`` says what to do around the tested
state and its components (record a data-flow step, answer with the mock instead of running iterations);
the listeners registered on moto's classes (``register_hooks``) look the run up from the environment they
are given and act only for the objects the run names. In any other environment (every execution's) they
call moto's code and do nothing else.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from antlr4 import CommonTokenStream, InputStream

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import ProgramEnvironment
from sam_local_cloud.moto_seam.records import EngineRecords
from sam_local_cloud.moto_seam.stepfunctions import (
    ASLLexer,
    ASLParser,
    ASLParserException,
    BranchesDecl,
    CatchOutcome,
    ContinueWithEnd,
    DistributedIterationComponent,
    Environment,
    ExecutionFailedEventDetails,
    ExecutionState,
    FailureEventException,
    InlineIterationComponent,
    InputPath,
    ItemsPath,
    MaxConcurrencyDecl,
    MockedResponseReturn,
    MockedResponseThrow,
    Parargs,
    Preprocessor,
    ProgramRunning,
    ProgramState,
    QueryLanguage,
    Result,
    ResultPath,
    ResultSelector,
    ResultWriter,
    RetryOutcome,
    StateChoice,
    StateFail,
    StateMap,
    StateParallel,
    StatePass,
    StateSucceed,
    StateTask,
    StateTaskActivity,
    StateTaskLambda,
    StateTaskService,
    StateWait,
    SyntaxErrorListener,
    TestStateStateProps,
    ToleratedFailureCountDecl,
    ToleratedFailureCountInt,
    ToleratedFailurePercentage,
    ToleratedFailurePercentageDecl,
    to_json_str,
)
from sam_local_cloud.stepfunctions.definition_support import canonical_text
from sam_local_cloud.stepfunctions.mock_config import raise_mocked_error
from sam_local_cloud.stepfunctions.teststate.request import (
    Mock,
    Request,
    invalid_definition,
    validation_error,
)

CONCERN: Final = "test_state"
# The name a state tested alone (no ``stateName``) runs under.
LONE_STATE_NAME: Final = "StateName"
# TestState runs for up to five minutes, then fails with States.Timeout (its API reference).
TEST_STATE_TIMEOUT_SECONDS: Final = 300

Action = Callable[[ProgramEnvironment], None]


def to_json(value: object) -> str:
    text: str = to_json_str(value)
    return text


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class StateRun:
    """One TestState request as it runs: what the listeners read, and what the answer is built from."""

    request: Request
    state: Any
    inspection: dict[str, Any] = field(default_factory=dict)
    # How the state ended before its end: ("choice", next), ("caught", next, error, cause) or
    # ("retriable", error, cause).
    outcome: tuple[str | None, ...] | None = None
    # The context object the state entered with, before a given one replaces it.
    execution_context: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # By the component's id (the component kept beside its actions, so the id cannot pass to another
    # object): what runs after moto evaluates it, in the order given, or instead of moto's evaluation.
    _after: dict[int, tuple[object, list[Action]]] = field(default_factory=dict)
    _instead: dict[int, tuple[object, Action]] = field(default_factory=dict)

    @property
    def single_state(self) -> bool:
        return self.request.state_name is None

    def record(self, key: str, value: object) -> None:
        with self.lock:
            self.inspection[key] = value

    def record_once(self, key: str, value: object) -> None:
        with self.lock:
            self.inspection.setdefault(key, value)

    def error_details(self) -> dict[str, Any]:
        with self.lock:
            details: dict[str, Any] = self.inspection.setdefault("errorDetails", {})
            return details

    def after(self, component: object, action: Action) -> None:
        """``action(env)`` once moto has evaluated ``component`` (its ``_eval_body``)."""
        if component is not None:
            self._after.setdefault(id(component), (component, []))[1].append(action)

    def instead_of(self, component: object, action: Action) -> None:
        """``action(env)`` where moto would evaluate ``component``."""
        self._instead[id(component)] = (component, action)

    def actions_after(self, component: object) -> list[Action]:
        entry = self._after.get(id(component))
        return entry[1] if entry is not None and entry[0] is component else []

    def action_instead_of(self, component: object) -> Action | None:
        entry = self._instead.get(id(component))
        return entry[1] if entry is not None and entry[0] is component else None


@dataclass
class _EnvironmentRun:
    run: StateRun | None = None


# The run each TestState environment (and every frame opened from it) belongs to.
_runs: EngineRecords[_EnvironmentRun] = EngineRecords(_EnvironmentRun)


def run_of(env: object) -> StateRun | None:
    """The TestState run ``env`` belongs to; None for an execution's environment."""
    if not isinstance(env, SingleStateEnvironment):
        return None
    record = _runs.get(env)
    return record.run if record is not None else None


class Stopped(ProgramState):
    """The tested state is done (a Choice made, an error caught or retriable): the program stops."""


class SingleStateEnvironment(Environment):
    """moto's Environment for one state: its frames are of this class too and belong to the same run."""

    @classmethod
    def as_frame_of(cls, env: Any, event_history_frame_cache: Any = None) -> Any:
        # moto builds every frame as a plain Environment; a TestState's frames stay TestState ones.
        return cls.as_inner_frame_of(
            env=env,
            variable_store=env.variable_store,
            event_history_frame_cache=event_history_frame_cache,
        )

    @classmethod
    def as_inner_frame_of(cls, env: Any, variable_store: Any, event_history_frame_cache: Any = None) -> Any:
        run = run_of(env)
        given = run.request.context if run is not None else None
        if given is not None and run is not None:
            # moto builds a frame from the execution's context object; the given one replaces it after.
            replace_context(env, run.execution_context)
        frame: Any = super().as_inner_frame_of(
            env=env, variable_store=variable_store, event_history_frame_cache=event_history_frame_cache
        )
        _runs.of(frame).run = run
        if given is not None:
            replace_context(env, given)
            replace_context(frame, given)
        return frame

    def belong_to(self, run: StateRun) -> None:
        _runs.of(self).run = run

    def is_mocked_mode(self) -> bool:
        run = run_of(self)
        return run is not None and run.request.mock is not None

    def get_current_mocked_response(self) -> Any:
        return _mocked_response(run_of(self))

    def stop_test(self) -> None:
        with internals.state_mutex(self):
            if isinstance(internals.program_state_of(self), ProgramRunning):
                internals.set_program_state(self, Stopped())
                frames: list[Any] = list(internals.frames_of(self))  # SingleStateEnvironments
                for frame in frames:
                    frame.stop_test()
                self.program_state_event.set()
                self.program_state_event.clear()


def _mocked_response(run: StateRun | None) -> Any:
    """The mock as moto's mocked Task evaluation takes it."""
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


def replace_context(env: ProgramEnvironment, context: dict[str, Any]) -> None:
    # In place: the state's data ($states.context) holds the same dictionary.
    data = env.states.context_object.context_object_data
    data.clear()
    data.update(copy.deepcopy(context))


def conclude(env: object, *outcome: str | None) -> None:
    """The tested state is done before its end: record how, and stop the program there."""
    run = run_of(env)
    if run is None or not isinstance(env, SingleStateEnvironment):  # run_of finds only theirs
        return
    with run.lock:
        if run.outcome is None:
            run.outcome = outcome
    env.stop_test()


# ---------------------------------------------------------------------------------------------- parsing

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
_NUMERIC_INSPECTION: Final = frozenset(
    {"maxConcurrency", "toleratedFailureCount", "toleratedFailurePercentage"}
)


class SingleStatePreprocessor(Preprocessor):
    """moto's preprocessor, naming a lone state ``StateName`` and noting every data-flow step it builds."""

    def __init__(self) -> None:
        super().__init__()
        self._state_names: list[str] = []
        # Each component of an inspected step, with the inspection data's name for its value.
        self.inspected_steps: list[tuple[Any, str]] = []

    def visitState_decl(self, ctx: Any) -> Any:  # noqa: N802 - ANTLR visitor name
        name = internals.inner_string_of(self, ctx.string_literal())
        self._state_names.append(name or LONE_STATE_NAME)
        return internals.common_state_field_of(self, self.visit(ctx.state_decl_body()))

    def visitState_decl_body(self, ctx: Any) -> Any:  # noqa: N802 - ANTLR visitor name
        internals.open_query_language_scope(self, ctx)
        state_props = TestStateStateProps()
        state_props.name = self._state_names.pop() if self._state_names else LONE_STATE_NAME
        for child in ctx.children:
            state_props.add(self.visit(child))
        if state_props.get(QueryLanguage) is None:
            state_props.add(internals.current_query_language(self))
        internals.close_query_language_scope(self)
        return state_props


def _noting_visitor(visit: Callable[..., Any], key: str) -> Callable[..., Any]:
    def visit_and_note(self: SingleStatePreprocessor, ctx: Any) -> Any:
        component = visit(self, ctx)
        self.inspected_steps.append((component, key))
        return component

    return visit_and_note


# The visitors of the inspected steps, defined once on the subclass (moto's Preprocessor is untouched).
for _method, _key in _INSPECTED_STEPS.items():
    setattr(SingleStatePreprocessor, _method, _noting_visitor(getattr(Preprocessor, _method), _key))
del _method, _key


@dataclass(frozen=True)
class ParsedState:
    state: Any
    inspected_steps: list[tuple[Any, str]]


def parse(request: Request) -> ParsedState:
    """The state to test; InvalidDefinition or ValidationException otherwise."""
    listener = SyntaxErrorListener()
    # The grammar lexes the raw text; AWS reads the decoded JSON (escapes such as \u004a included).
    text = canonical_text(request.definition, single_state=request.state_name is None)
    parser = ASLParser(CommonTokenStream(ASLLexer(InputStream(text))))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    tree = parser.state_machine() if request.state_name is not None else parser.state_decl_body()
    if listener.errors:
        raise invalid_definition(
            f"Invalid State Machine Definition: {ASLParserException(errors=listener.errors)!r}"
        )
    preprocessor = SingleStatePreprocessor()
    try:
        if request.state_name is None:
            state = internals.common_state_field_of(preprocessor, preprocessor.visit(tree))
        else:
            program = preprocessor.visitState_machine(ctx=tree)
            state = _find_state(request.state_name, program.states.states)
    except (ValueError, TypeError) as error:
        raise invalid_definition(f"Invalid State Machine Definition: {error}") from None
    if state is None:
        raise validation_error("State not found in definition")
    return ParsedState(state, preprocessor.inspected_steps)


def _find_state(name: str, states: dict[str, Any]) -> object:
    if name in states:
        return states[name]
    for state in states.values():
        nested: list[dict[str, Any]] = []
        if isinstance(state, StateMap):
            nested.append(internals.iteration_states(state))
        elif isinstance(state, StateParallel):
            nested.extend(program.states.states for program in state.branches.programs)
        for inner in nested:
            found = _find_state(name, inner)
            if found is not None:
                return found
    return None


# ---------------------------------------------------------------------------------------------- the plan


def plan(parsed: ParsedState, request: Request) -> StateRun:
    """The run of the parsed state: what it records and mocks around the state's components."""
    run = StateRun(request, parsed.state)
    for component, key in parsed.inspected_steps:
        run.after(component, _step_recorder(run, key))
    state = run.state
    if isinstance(state, ExecutionState):
        if internals.is_jsonpath_state(state):
            # Default steps (InputPath "$", ResultPath "$") the preprocessor never built.
            run.after(state.input_path, _first_step_recorder(run, "afterInputPath"))
            run.after(state.result_path, _first_step_recorder(run, "afterResultPath"))
        if isinstance(state, StateMap):
            _plan_map(run, state)
        elif isinstance(state, StateParallel) and request.mock is not None:
            mock = request.mock
            run.instead_of(state.branches, lambda env: _mocked_branches(env, mock))
    return run


def _step_recorder(run: StateRun, key: str) -> Action:
    def record_step(env: ProgramEnvironment) -> None:
        value = env.stack[-1]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        run.record(key, value if number and key in _NUMERIC_INSPECTION else to_json(value))

    return record_step


def _first_step_recorder(run: StateRun, key: str) -> Action:
    return lambda env: run.record_once(key, to_json(env.stack[-1]))


def _plan_map(run: StateRun, state: Any) -> None:
    run.after(state.max_concurrency_decl, lambda env: run.record("maxConcurrency", env.stack[-1]))
    mock = run.request.mock
    if mock is None:
        return
    if state.result_writer is not None:
        # The mocked result is what the ResultWriter would have answered: nothing is written.
        run.instead_of(state.result_writer, lambda env: None)

    def mocked_iterations(env: ProgramEnvironment) -> None:
        eval_input = env.stack.pop()
        failures = run.request.map_iteration_failure_count
        if failures and _exceeds_tolerance(state, env, failures, _iteration_count(eval_input, mock)):
            raise_mocked_error(
                env,
                "States.ExceedToleratedFailureThreshold",
                "The specified tolerated failure threshold was exceeded",
            )
        _answer_with_mock(env, mock)

    run.instead_of(state.iteration_component, mocked_iterations)


def _iteration_count(eval_input: Any, mock: Mock) -> int:
    if isinstance(mock.result, list):
        return len(mock.result)
    items = getattr(eval_input, "input_items", None)
    return len(items) if isinstance(items, list) else 0


def _exceeds_tolerance(state: Any, env: ProgramEnvironment, failures: int, iterations: int) -> bool:
    """Whether ``failures`` failed iterations pass a threshold the Map declares (one it does not declare is
    not checked: AWS answers SUCCEEDED for a Map without one, whatever the failure count)."""
    count_decl = state.tolerated_failure_count_decl
    count_declared = not (
        isinstance(count_decl, ToleratedFailureCountInt) and count_decl.tolerated_failure_count == 0
    )
    if count_declared and failures > internals.tolerated_failure_count(count_decl, env):
        return True
    percentage_decl = state.tolerated_failure_percentage_decl
    if (
        isinstance(percentage_decl, ToleratedFailurePercentage)
        and percentage_decl.tolerated_failure_percentage == 0
    ):
        return False
    percentage = internals.tolerated_failure_percentage(percentage_decl, env)
    return iterations > 0 and failures * 100 / iterations > percentage


def _mocked_branches(env: ProgramEnvironment, mock: Mock) -> None:
    env.stack.pop()  # the branches' input
    _answer_with_mock(env, mock)


def _answer_with_mock(env: ProgramEnvironment, mock: Mock) -> None:
    if mock.has_result:
        env.stack.append(copy.deepcopy(mock.result))
    else:
        raise_mocked_error(env, mock.error or "", mock.cause or "")


# ---------------------------------------------------------------------------------------------- listeners


def _component_evaluation(proceed: Callable[..., Any], component: object, env: ProgramEnvironment) -> Any:
    """A component's ``_eval_body``: the run's action instead of moto's, or moto's and the run's after."""
    run = run_of(env)
    if run is None:
        return proceed(component, env)
    instead = run.action_instead_of(component)
    if instead is not None:
        instead(env)
        return None
    result = proceed(component, env)
    for action in run.actions_after(component):
        action(env)
    return result


def _tested_state_evaluation(proceed: Callable[..., Any], state: Any, env: ProgramEnvironment) -> Any:
    """``_eval_state`` of a state that runs nothing (Pass, Wait, Choice, Succeed, Fail), tested."""
    run = run_of(env)
    if run is None or state is not run.state:
        return proceed(state, env)
    given = env.states.get_input()  # after InputPath
    jsonpath = internals.is_jsonpath_state(state)
    if jsonpath and run.single_state and not isinstance(state, StatePass):
        run.record_once("afterInputPath", to_json(given))
    # TestState reports where a Wait goes; it does not wait.
    if not isinstance(state, StateWait):
        proceed(state, env)
    if jsonpath and isinstance(state, StatePass) and isinstance(state.continue_with, ContinueWithEnd):
        _pass_state_steps(run, state, given)
    return None


def _pass_state_steps(run: StateRun, state: Any, given: object) -> None:
    """A Pass state's data flow as AWS shows it: steps it has not recorded take the step before's value."""
    if state.result is not None:
        with run.lock:
            run.inspection.pop("afterInputPath", None)
            run.inspection.pop("afterParameters", None)
        run.record_once("afterResultSelector", to_json(state.result.result_obj))
        run.record_once("afterResultPath", run.inspection["afterResultSelector"])
        return
    run.record_once("afterInputPath", to_json(given))
    run.record_once("afterParameters", run.inspection["afterInputPath"])
    run.record_once("afterResultSelector", run.inspection["afterParameters"])
    run.record_once("afterResultPath", run.inspection["afterResultSelector"])


def _tested_state_execution(proceed: Callable[..., Any], state: Any, env: ProgramEnvironment) -> Any:
    """``_eval_execution`` of a Task, Map or Parallel state, tested: the steps it shows, recorded."""
    run = run_of(env)
    if run is None or state is not run.state:
        return proceed(state, env)
    proceed(state, env)
    jsonpath = internals.is_jsonpath_state(state)
    if jsonpath and isinstance(env.stack[-1], dict | list | str | int | float):
        run.record_once("afterResultSelector", to_json(env.stack[-1]))
    if isinstance(state, StateTask):
        run.record("result", to_json(env.stack[-1]))
        if jsonpath:
            run.record_once("afterParameters", to_json(env.states.get_input()))
    elif isinstance(state, StateParallel):
        # AWS shows neither the path nor the arguments a Parallel state hands its branches.
        with run.lock:
            run.inspection.pop("afterInputPath" if jsonpath else "afterArguments", None)
    return None


def _retry_reported(
    proceed: Callable[..., Any], state: Any, env: ProgramEnvironment, failure_event: Any
) -> Any:
    """``_handle_retry`` of the tested state: RETRIABLE while a matching retrier has attempts left."""
    run = run_of(env)
    if run is None or state is not run.state:
        return proceed(state, env=env, failure_event=failure_event)
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
        # Reported without sleeping the backoff.
        conclude(env, "retriable", *internals.error_and_cause_of(failure_event))
        return RetryOutcome.CanRetry
    return RetryOutcome.NoRetrier


def _catch_reported(
    proceed: Callable[..., Any], state: Any, env: ProgramEnvironment, failure_event: Any
) -> Any:
    """``_handle_catch`` of the tested state: CAUGHT_ERROR, naming the catcher and its next state."""
    run = run_of(env)
    if run is None or state is not run.state:
        return proceed(state, env=env, failure_event=failure_event)
    # moto also offers the error output as $states.result to a catcher; AWS offers errorOutput only.
    internals.state_data(env.states).pop("result", None)
    proceed(state, env=env, failure_event=failure_event)
    if env.stack[-1] != CatchOutcome.Caught:
        return None
    for index, catcher in enumerate(state.catch.catchers):
        if _matches(catcher.error_equals, env, failure_event.error_name):
            run.error_details()["catchIndex"] = index
            break
    conclude(env, "caught", env.next_state_name, *internals.error_and_cause_of(failure_event))
    return None


def _matches(error_equals: Any, env: ProgramEnvironment, error_name: Any) -> bool:
    env.stack.append(error_name)
    error_equals.eval(env)
    return bool(env.stack.pop())


def register_hooks() -> None:
    """Listeners on moto's classes that act only in a TestState's environment."""
    # A TestState run watches a state's execution from outside redrive and the Map's handling; a service
    # error's name and a JSONPath's failure are already AWS's when the run reports them.
    hooks.order(CONCERN, outside=("redrive", "map_state"), inside=("service_errors", "jsonpath"))
    for state_class in (StatePass, StateWait, StateChoice, StateSucceed, StateFail):
        hooks.around(state_class, "_eval_state", concern=CONCERN)(_tested_state_evaluation)
    for execution_class in (StateTaskService, StateTaskActivity, StateTaskLambda, StateMap, StateParallel):
        hooks.around(execution_class, "_eval_execution", concern=CONCERN)(_tested_state_execution)
    hooks.around(ExecutionState, "_handle_retry", concern=CONCERN)(_retry_reported)
    hooks.around(ExecutionState, "_handle_catch", concern=CONCERN)(_catch_reported)
    # Each class that defines the ``_eval_body`` of a component a run acts on (an inspected step, a
    # default path, the Map's iterations and ResultWriter, the Parallel's branches).
    for component_class in (
        InputPath,
        Parargs,
        ResultSelector,
        ResultPath,
        Result,
        ItemsPath,
        MaxConcurrencyDecl,
        ToleratedFailureCountDecl,
        ToleratedFailurePercentageDecl,
        ResultWriter,
        InlineIterationComponent,
        DistributedIterationComponent,
        BranchesDecl,
    ):
        hooks.around(component_class, "_eval_body", concern=CONCERN)(_component_evaluation)


# ---------------------------------------------------------------------------------------------- running


def evaluate(run: StateRun, env: SingleStateEnvironment) -> None:
    """Run the tested state, at most TestState's five minutes; its outcome is left in ``env`` and ``run``."""
    if run.request.variables:
        run.record("variables", to_json(run.request.variables))
    run.record("input", to_json(env.states.get_input()))
    env.next_state_name = run.state.name

    def evaluate_state() -> None:
        try:
            run.state.eval(env=env)
            # The run ends with the tested state: its next state is reported, not entered.
            if env.is_running():
                conclude(env, "choice", env.next_state_name)
        except FailureEventException as failure:
            details = failure.get_execution_failed_event_details()
            env.set_error(details or ExecutionFailedEventDetails(error="States.Runtime", cause=""))
        except Exception as error:  # any interpreter error is the state's States.Runtime
            env.set_error(
                ExecutionFailedEventDetails(error="States.Runtime", cause=f"{type(error).__name__}({error})")
            )

    worker = threading.Thread(target=evaluate_state, name="test-state", daemon=True)
    worker.start()
    worker.join(timeout=TEST_STATE_TIMEOUT_SECONDS)
    if worker.is_alive():
        env.set_timed_out()
