"""JSONata states (``"QueryLanguage": "JSONata"``) evaluated as AWS Step Functions evaluates them.

moto's interpreter (ported from LocalStack) parses every JSONata field, but ships its evaluator stubbed
out: LocalStack runs JSONata on a JVM that moto does not bundle. This module installs the pure-Python
``jsonata-python`` evaluator in its place and makes what surrounds it answer as AWS does:

* an expression sees ``$states`` and the workflow's variables as bound values, not as JSON text spliced
  into its source (moto's splicing quoted strings without escaping them, so a quote or a backslash in any
  input or variable broke every expression of the state);
* the functions Step Functions adds (``$partition``, ``$range``, ``$hash``, ``$random`` with a seed,
  ``$uuid``, ``$parse``) replace moto's JSONata stand-ins, and ``$eval`` is not available;
* a failure is ``States.QueryEvaluationError`` with AWS's cause and location: the expression, the field it
  sits in (``Output/result``, ``Arguments/FunctionName``, ...), and either "returned nothing (undefined)",
  "returned an unsupported result type" or "threw an error during evaluation. <code>: <message>"; the
  history gets its EvaluationFailed event in every kind of state, and the error keeps its name when it
  fails a Map iteration;
* a state's Assign takes effect as the state exits, so its Output (or OutputPath) still sees the
  variables as the state found them, as on AWS;
* results are plain JSON values: JSONata's sequences become lists, its null becomes None, and a whole
  number is an int, as JSONata's own (JavaScript) number model prints it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import random
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from jsonata import Jsonata
from jsonata.jexception import JException
from jsonata.utils import Utils

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import Evaluation, ProgramEnvironment
from sam_local_cloud.moto_seam.records import EngineRecords

# The largest integer a JSONata (IEEE double) number holds exactly; past it a whole float stays a float.
_LARGEST_EXACT_INTEGER = 2**53
# Step Functions' names for the algorithms, exactly as spelled (lowercase names are rejected).
_HASH_ALGORITHMS: dict[str, Callable[[bytes], Any]] = {
    "MD5": hashlib.md5,
    "SHA-1": hashlib.sha1,
    "SHA-256": hashlib.sha256,
    "SHA-384": hashlib.sha384,
    "SHA-512": hashlib.sha512,
}
_QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"
# JSONata's argument-signature errors, whose jsonata-python wording differs from JSONata's in one word.
_SIGNATURE_ERRORS = frozenset({"T0410", "T0411", "T0412"})
# How AWS opens the cause of a failure inside a state (States.Runtime and States.QueryEvaluationError).
_CAUSE_PREFIX = "An error occurred while executing the state "


class StepFunctionsFunctionError(JException):  # type: ignore[misc]  # jsonata ships no types
    """A Step Functions function refused its arguments.

    AWS documents no error codes for its own functions (JSONata's own errors carry one, as ``T0410``), so
    these carry only their message.
    """

    def __init__(self, message: str) -> None:
        super().__init__("")
        self.args = (message,)


class UnsupportedResultError(ValueError):
    """The expression produced something JSON cannot hold (a function, a regex)."""


# ---------------------------------------------------------------------------------------------- functions
def _whole_number(value: Any, function: str, argument: str) -> int:
    """A number argument rounded down, as AWS treats every integer argument of its functions."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StepFunctionsFunctionError(f"{function}: the {argument} must be a number")
    return math.floor(value)


def _text(value: Any, function: str, argument: str) -> str:
    if not isinstance(value, str):
        raise StepFunctionsFunctionError(f"{function}: the {argument} must be a string")
    return value


def partition(array: Any, chunk_size: Any = None) -> Any:
    """``$partition(array, chunkSize)``: consecutive chunks; the last one may be shorter."""
    if not isinstance(array, list):
        raise StepFunctionsFunctionError("$partition: the array to partition must be an array")
    items = list(array)
    if chunk_size is None:
        # Without a chunk size every item lands in one chunk.
        return _array([_array(items)])
    size = _whole_number(chunk_size, "$partition", "chunk size")
    if size <= 0:
        raise StepFunctionsFunctionError("$partition: the chunk size must be a positive integer")
    return _array([_array(items[start : start + size]) for start in range(0, len(items), size)])


def value_range(start: Any, end: Any, step: Any) -> Any:
    """``$range(start, end, step)``: start, start+step, ... up to end inclusive, never past it.

    A JSONata sequence, as on AWS: a range of one value is that value (``$range(1, 9, 9)`` is ``1``).
    """
    first = _whole_number(start, "$range", "start")
    last = _whole_number(end, "$range", "end")
    delta = _whole_number(step, "$range", "step")
    if delta == 0:
        raise StepFunctionsFunctionError("$range: the step must not be zero")
    stop = last + 1 if delta > 0 else last - 1
    return Utils.create_sequence_from_iter(range(first, stop, delta))


def hash_value(data: Any, algorithm: Any) -> str:
    """``$hash(data, algorithm)``: the hex digest of the string's UTF-8 bytes."""
    text = _text(data, "$hash", "data to hash")
    digest = _HASH_ALGORITHMS.get(_text(algorithm, "$hash", "algorithm"))
    if digest is None:
        raise StepFunctionsFunctionError(
            f"$hash: unsupported algorithm {json.dumps(algorithm)}; "
            f"expected one of {', '.join(_HASH_ALGORITHMS)}"
        )
    return str(digest(text.encode("utf-8")).hexdigest())


def random_number(seed: Any = None) -> float:
    """``$random([seed])``: 0 <= n < 1; the same (whole) seed always gives the same number."""
    if seed is None:
        return random.random()
    return random.Random(_whole_number(seed, "$random", "seed")).random()


def new_uuid() -> str:
    """``$uuid()``: a version 4 UUID."""
    return str(uuid.uuid4())


def parse(text: Any) -> Any:
    """``$parse(jsonString)``: the JSON value the string holds (JSONata's ``$eval`` is not available)."""
    try:
        value = json.loads(_text(text, "$parse", "argument"), parse_constant=_reject_constant)
    except ValueError as error:
        raise StepFunctionsFunctionError(f"$parse: the argument is not valid JSON ({error})") from None
    return Utils.NULL_VALUE if value is None else value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _array(items: list[Any]) -> Any:
    """A JSONata array that stays an array even with one element (unlike a sequence)."""
    array = Utils.JList(items)
    array.keep_singleton = True
    return array


class _Native(Jsonata.JFunctionCallable):  # type: ignore[misc]  # jsonata ships no types
    """A Python function callable from JSONata, refusing a wrong number of arguments."""

    def __init__(self, name: str, implementation: Callable[..., Any]) -> None:
        self._name = name
        self._implementation = implementation
        self._parameters = inspect.signature(implementation)

    def call(self, focus: Any, args: Any) -> Any:
        arguments = list(args or [])
        try:
            self._parameters.bind(*arguments)
        except TypeError:
            raise StepFunctionsFunctionError(
                f"${self._name}: wrong number of arguments ({len(arguments)})"
            ) from None
        return self._implementation(*arguments)


_STEP_FUNCTIONS_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "partition": partition,
    "range": value_range,
    "hash": hash_value,
    "random": random_number,
    "uuid": new_uuid,
    "parse": parse,
}


def compile_expression(expression: str) -> Jsonata:
    """The expression parsed, with Step Functions' functions in scope and ``$eval`` out of it."""
    compiled = Jsonata(expression)
    compiled.set_output_convert_nulls(False)
    for name, implementation in _STEP_FUNCTIONS_FUNCTIONS.items():
        compiled.register_function(name, Jsonata.JFunction(_Native(name, implementation), None))
    compiled.assign("eval", None)
    return compiled


# ------------------------------------------------------------------------------------------------ values
def evaluate(expression: str, bindings: Mapping[str, Any] | None = None) -> Any:
    """The expression's raw JSONata result: ``None`` when undefined, ``Utils.NULL_VALUE`` for null."""
    variables = {
        name: Utils.NULL_VALUE if value is None else value for name, value in (bindings or {}).items()
    }
    return compile_expression(expression).evaluate(None, variables)


def to_json_value(value: Any) -> Any:
    """A JSONata result as plain JSON data (fresh containers, never the input's own)."""
    if value is Utils.NULL_VALUE or value is None:
        return None
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if value.is_integer() and abs(value) <= _LARGEST_EXACT_INTEGER:
            return int(value)
        return value
    if isinstance(value, list):
        return [to_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json_value(item) for key, item in value.items()}
    raise UnsupportedResultError(type(value).__name__)


def evaluate_composed_expression(expression: str) -> Any:
    """moto's entry point for expressions it builds as text (variable references in JSONPath states)."""
    from sam_local_cloud.moto_seam.stepfunctions import JSONataException

    try:
        return to_json_value(evaluate(expression))
    except JException as error:
        raise JSONataException(error.error, str(error)) from error


def encode_variable_declarations(bindings: Mapping[str, Any]) -> str:
    """moto's ``$name:=value;`` declarations, with every value (strings too) as an escaped JSON literal."""
    return "".join(
        f"{reference}:={json.dumps(value, separators=(',', ':'), ensure_ascii=False, default=str)};"
        for reference, value in bindings.items()
    )


# ------------------------------------------------------------------------------------------ field paths
_fields = threading.local()


def _field_path() -> list[str]:
    path: list[str] | None = getattr(_fields, "path", None)
    if path is None:
        path = _fields.path = []
    return path


def current_field() -> str:
    """Where the expression being evaluated sits in its state, as AWS names it (``Output/result``)."""
    return "/".join(_field_path())


def _enter_field(component_class: type, field_of: Callable[[Any], str]) -> None:
    """Evaluating a ``component_class`` component adds its field name to the current path for its span."""

    @hooks.around(component_class, "eval", concern="jsonata")
    def eval_in_field(proceed: Evaluation, self: Any, env: ProgramEnvironment) -> None:
        path = _field_path()
        path.append(field_of(self))
        try:
            proceed(self, env)
        finally:
            path.pop()


def _always(name: str) -> Callable[[Any], str]:
    return lambda _component: name


def _track_fields() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        Arguments,
        AssignDecl,
        AssignTemplateBinding,
        Cause,
        ConditionStringJSONata,
        Error,
        HeartbeatSecondsJSONata,
        Items,
        ItemSelector,
        JSONataTemplateBinding,
        MaxConcurrencyJSONata,
        Output,
        SecondsJSONata,
        TimeoutSecondsJSONata,
        Timestamp,
        ToleratedFailureCountStringJSONata,
        ToleratedFailurePercentageStringJSONata,
    )

    fixed_names: dict[Any, str] = {
        Output: "Output",
        Arguments: "Arguments",
        AssignDecl: "Assign",
        ItemSelector: "ItemSelector",
        Items: "Items",
        ConditionStringJSONata: "Condition",
        TimeoutSecondsJSONata: "TimeoutSeconds",
        HeartbeatSecondsJSONata: "HeartbeatSeconds",
        MaxConcurrencyJSONata: "MaxConcurrency",
        ToleratedFailureCountStringJSONata: "ToleratedFailureCount",
        ToleratedFailurePercentageStringJSONata: "ToleratedFailurePercentage",
        SecondsJSONata: "Seconds",
        Timestamp: "Timestamp",
        Error: "Error",
        Cause: "Cause",
    }
    for component_class, name in fixed_names.items():
        _enter_field(component_class, _always(name))
    for binding_class in (JSONataTemplateBinding, AssignTemplateBinding):
        _enter_field(binding_class, lambda binding: str(binding.identifier))


# ----------------------------------------------------------------------------------- state evaluation
def _bindings(env: ProgramEnvironment) -> dict[str, Any]:
    """``$states`` and every variable in scope (an inner scope's value wins), as JSONata sees them."""
    store = env.variable_store
    outer_scope, inner_scope = internals.variable_scopes(store)
    variables: dict[str, Any] = {**outer_scope, **inner_scope}
    variables["states"] = internals.state_data(env.states)
    return variables


def _fail(env: ProgramEnvironment, expression: str, field: str, outcome: str) -> NoReturn:
    fail_query_evaluation(
        env, f"The JSONata expression '{expression}' specified for the field '{field}' {outcome}", field
    )


def fail_query_evaluation(env: Any, message: str, field: str) -> NoReturn:  # as FailureEvent takes it
    """Fail the state with States.QueryEvaluationError, its cause already in AWS's words.

    The cause names the state and the event that entered it from the start, because moto records a Task's
    failure event with the details as raised (its Map and the execution's failure add the same prefix,
    which ``_decorated_once`` keeps from doubling).
    """
    from sam_local_cloud.moto_seam.stepfunctions import (
        EvaluationFailedEventDetails,
        FailureEvent,
        FailureEventException,
        HistoryEventType,
        StatesErrorName,
        StatesErrorNameType,
    )

    state = env.next_state_name
    entered_at = env.event_history_context.source_event_id
    details = EvaluationFailedEventDetails(
        error=_QUERY_EVALUATION_ERROR,
        cause=f"{_CAUSE_PREFIX}'{state}' (entered at the event id #{entered_at}). {message}",
        location=field,
        state=state,
    )
    raise FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError),
            event_type=HistoryEventType.EvaluationFailed,
            event_details=_event_details(details),
        )
    )


def evaluate_in_state(self: Any, env: ProgramEnvironment) -> None:
    """``StringJSONata._eval_body``: the expression's value on the stack, or a QueryEvaluationError."""
    expression: str = self.expression
    field = current_field()
    try:
        result = evaluate(expression, _bindings(env))
    except JException as error:
        _fail(env, expression, field, f"threw an error during evaluation. {_error_text(error)}")
    if result is None:
        _fail(env, expression, field, "returned nothing (undefined).")
    try:
        value = to_json_value(result)
    except UnsupportedResultError:
        _fail(env, expression, field, "returned an unsupported result type.")
    env.stack.append(value)


def _error_text(error: JException) -> str:
    if not error.error:
        return str(error)
    message = str(error)
    if error.error in _SIGNATURE_ERRORS:
        # jsonata-python's templates say "Object" where JSONata's say "function".
        message = message.replace("Object", "function")
    return f"{error.error}: {message}"


# ----------------------------------------------------------------------------------------- variables
@dataclass
class _PendingAssignments:
    """A state's Assign, evaluated but not yet set: it is set as the state exits."""

    values: dict[str, object] = field(default_factory=dict)


_pending: EngineRecords[_PendingAssignments] = EngineRecords(_PendingAssignments)


def _pending_assignments(store: object) -> dict[str, object]:
    return _pending.of(store).values


def _assign_on_exit(self: Any, env: ProgramEnvironment) -> None:
    """``AssignDecl._eval_body``: evaluate every binding now, set the variables when the state exits.

    On AWS a state's Assign and its Output (or OutputPath) both see the variables as the state found
    them; the new values are for the states after it. moto set them at once, so the Output saw them.
    """
    assignments: dict[str, object] = {}
    for binding in self.declaration_bindings:
        binding.eval(env=env)
        assignments.update(env.stack.pop())
    _pending_assignments(env.variable_store).update(assignments)


def _assigned_variables(self: Any) -> dict[str, str]:
    """Called as the state exits: set its assignments, then list them for the history as JSON text."""
    from sam_local_cloud.moto_seam.stepfunctions import to_json_str

    pending = _pending.get(self)
    if pending is not None:
        for identifier, value in pending.values.items():
            self.set(variable_identifier=identifier, variable_value=value)
        _pending.forget(self)
    # Strings too are JSON text (moto quoted them without escaping).
    return {
        identifier: to_json_str(self.get(identifier), separators=(",", ":"))
        for identifier in internals.declared_variables(self)
    }


# ------------------------------------------------------------------------------------------- history
def _event_details(evaluation_failed: Any) -> Any:
    """moto's EventDetails for an EvaluationFailed event (a TypedDict mypy would want complete)."""
    return {"evaluationFailedEventDetails": evaluation_failed}


def _details_decorated_once(proceed: Callable[[Any], Any], self: Any) -> Any:
    """A FailureEventException details method that leaves an already decorated cause as it is."""
    details = proceed(self)
    raised = next(iter((self.failure_event.event_details or {}).values()), None)
    raised_cause = raised.get("cause") if isinstance(raised, dict) else None
    if details and isinstance(raised_cause, str) and raised_cause.startswith(_CAUSE_PREFIX):
        details["cause"] = raised_cause
    return details


def _recording_evaluation_failures(proceed: Evaluation, self: Any, env: ProgramEnvironment) -> None:
    """A state method that records an EvaluationFailed event for the failure it raises, as AWS does.

    For the fields moto evaluates where nobody records the failure: every field of Pass, Choice, Wait,
    Succeed and Fail, and the Output of Task, Map and Parallel (their other fields are recorded by their
    own error handling).
    """
    from sam_local_cloud.moto_seam.stepfunctions import FailureEventException, HistoryEventType

    try:
        proceed(self, env)
    except FailureEventException as failure:
        if failure.failure_event.event_type == HistoryEventType.EvaluationFailed:
            env.event_manager.add_event(
                context=env.event_history_context,
                event_type=HistoryEventType.EvaluationFailed,
                event_details=_event_details(failure.get_evaluation_failed_event_details()),
            )
        raise


def _iteration_error_name(error_name: str) -> Any:
    """The error a failed Map iteration hands its Map: States.* errors keep their own names.

    moto wrapped every iteration error as a custom error name, which must not start with ``States.``, so
    a States.QueryEvaluationError (or any States.* error) inside an iteration became a States.Runtime about
    error names.
    """
    from sam_local_cloud.moto_seam.stepfunctions import CustomErrorName, StatesErrorName

    if error_name.startswith("States."):
        try:
            return StatesErrorName.from_name(error_name)
        except ValueError:
            pass
    return CustomErrorName(error_name=error_name)


def _record_failures_in_history() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ExecutionState,
        FailureEventException,
        StateChoice,
        StateFail,
        StatePass,
        StateSucceed,
        StateWait,
        iteration_worker,
    )

    for name in ("get_evaluation_failed_event_details", "get_execution_failed_event_details"):
        hooks.around(FailureEventException, name, concern="jsonata")(_details_decorated_once)
    # moto's own CommonStateField._eval_body, listened to for these states only.
    for state_class in (StatePass, StateChoice, StateWait, StateSucceed, StateFail):
        hooks.around(state_class, "_eval_body", concern="jsonata")(_recording_evaluation_failures)
    hooks.around(ExecutionState, "_eval_state_output", concern="jsonata")(_recording_evaluation_failures)
    # A class there, replaced by a function that picks the class.
    hooks.replace(iteration_worker, "CustomErrorName", _iteration_error_name, concern="jsonata")


def register_hooks() -> None:
    # JSONata decorates a failure's details once the error names have rewritten them, and keeps the field
    # path being evaluated around the Map's own remembering of its Items.
    hooks.order("jsonata", outside=("error_names", "map_state"))
    from sam_local_cloud.moto_seam.stepfunctions import (
        AssignDecl,
        StringJSONata,
        VariableStore,
        jsonata,
        states,
        variable_store,
    )

    hooks.replace(jsonata, "_eval_jsonata", evaluate_composed_expression, concern="jsonata")
    for module in (jsonata, states, variable_store):
        hooks.replace(
            module, "encode_jsonata_variable_declarations", encode_variable_declarations, concern="jsonata"
        )
    hooks.replace(StringJSONata, "_eval_body", evaluate_in_state, concern="jsonata")
    hooks.replace(VariableStore, "get_assigned_variables", _assigned_variables, concern="jsonata")
    hooks.replace(AssignDecl, "_eval_body", _assign_on_exit, concern="jsonata")
    _track_fields()
    _record_failures_in_history()
