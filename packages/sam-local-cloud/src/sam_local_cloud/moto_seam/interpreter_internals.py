"""moto's private Step Functions members that the engine needs, read here and nowhere else.

moto's interpreter keeps much of what a concern must reach under one leading underscore (an environment's
program state, a job pool's jobs, a response's request parameters, a worker's steps). Each is read by one
function here, under a name of the engine's own and typed with ``interpreter_objects``' Protocols, so a moto
upgrade that renames one breaks this module alone (``fingerprints`` notices the methods; the functions name
the attributes). ``tests/test_private_reads.py`` fails on a read of moto's private names anywhere else.

moto is imported inside the functions that need its classes, as the concerns import it: lazily, so that
importing the seam costs nothing until the interpreter runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

from sam_local_cloud.moto_seam.interpreter_objects import (
    Component,
    ExecutionRecord,
    HistoryEvent,
    HistoryEventManager,
    LogsBackend,
    MapJob,
    MapJobPool,
    MapRunRecord,
    MapRunRecordPool,
    ProgramEnvironment,
    StateData,
    StepFunctionsRequest,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

WorkerT = TypeVar("WorkerT")


def _moto(moto_object: object) -> Any:
    """The object as moto's own code sees it: its private members are unannotated."""
    return moto_object


# ---------------------------------------------------------------------------------------------- requests


def request_param(request: StepFunctionsRequest, name: str) -> object:
    """A member of the request's parameters (None when absent), as moto parsed it."""
    value: object = _moto(request)._get_param(name)
    return value


def required_text(request: StepFunctionsRequest, name: str) -> str:
    """A string member the API's model requires (botocore's clients refuse a request without it)."""
    value: str = _moto(request)._get_param(name)
    return value


def request_int(request: StepFunctionsRequest, name: str) -> int | None:
    """An integer member of the request's parameters (None when absent)."""
    value: int | None = _moto(request)._get_param(name)
    return value


def request_text(request: StepFunctionsRequest, name: str) -> str | None:
    """A string member of the request's parameters (None when absent)."""
    value: str | None = _moto(request)._get_param(name)
    return value


# ---------------------------------------------------------------------------------------------- the backend


def executions_with_status(backend: object, status: str) -> list[ExecutionRecord]:
    executions: list[ExecutionRecord] = _moto(backend)._get_executions(status)
    return executions


def validate_execution_name(backend: object, name: str) -> None:
    """moto's check of an execution name (InvalidName)."""
    _moto(backend)._validate_name(name)


def validate_definition(definition: str) -> None:
    """CreateStateMachine's check of a definition, without a state machine; raises what moto raises."""
    from sam_local_cloud.moto_seam.stepfunctions import StepFunctionsParserBackend

    StepFunctionsParserBackend._validate_definition(definition)


# ---------------------------------------------------------------------------------------------- executions


def new_execution_worker(worker_class: Callable[..., WorkerT], execution: object, **extra: object) -> WorkerT:
    """A worker of ``worker_class`` for ``execution``, given what moto's StartExecution gives its own."""
    from sam_local_cloud.moto_seam.stepfunctions import EvaluationDetails

    moto_execution = _moto(execution)
    return worker_class(
        evaluation_details=EvaluationDetails(
            aws_execution_details=moto_execution._get_start_aws_execution_details(),
            execution_details=moto_execution.get_start_execution_details(),
            state_machine_details=moto_execution.get_start_state_machine_details(),
        ),
        exec_comm=moto_execution._get_start_execution_worker_comm(),
        cloud_watch_logging_session=moto_execution._cloud_watch_logging_session,
        activity_store=moto_execution._activity_store,
        **extra,
    )


def reflect_execution_status(execution: object) -> None:
    """The execution's status, stop date, output or error, as moto sets them when its program ends."""
    from sam_local_cloud.moto_seam.stepfunctions import BaseExecutionWorkerCommunication

    _moto(BaseExecutionWorkerCommunication)(execution)._reflect_execution_status()


def motos_evaluation_environment(worker: object) -> Any:
    """moto's ``ExecutionWorker._get_evaluation_environment`` (with the hooks on it) for a subclass's own:
    moto's ``Environment`` (a ``ProgramEnvironment``), as the subclass's override returns it."""
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionWorker

    env = _moto(ExecutionWorker)._get_evaluation_environment(worker)
    return env


def run_motos_execution_logic(worker: object) -> None:
    """moto's ``ExecutionWorker._execution_logic`` for a subclass that wraps it."""
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionWorker

    _moto(ExecutionWorker)._execution_logic(worker)


def start_environment(worker: object) -> ProgramEnvironment:
    """A new environment for the worker, by its class's own ``_get_evaluation_environment``, set as the
    worker's ``env`` (as moto's ``_execution_logic`` begins)."""
    moto_worker = _moto(worker)
    moto_worker.env = moto_worker._get_evaluation_environment()
    env: ProgramEnvironment = moto_worker.env
    return env


def evaluation_entrypoint(worker: object) -> Any:
    """The worker's program: moto's ``Program`` (rebuilt by a redrive with another start)."""
    return _moto(worker)._get_evaluation_entrypoint()


def worker_execution(worker: object) -> Any:
    """The execution a worker (or an environment's callbacks) reports to, None when it reports to none."""
    return getattr(_moto(worker)._execution_communication, "execution", None)


def report_terminated(worker: object) -> None:
    _moto(worker)._execution_communication.terminated()


# ---------------------------------------------------------------------------------------------- environments


def program_state_of(env: object) -> object:
    """The environment's program state itself (``program_state()`` answers a copy)."""
    state: object = _moto(env)._program_state
    return state


def set_program_state(env: object, program_state: object) -> None:
    """Puts the environment's program state in place, as moto's ``set_*`` methods do (under its mutex)."""
    _moto(env)._program_state = program_state


def state_mutex(env: object) -> threading.RLock:
    """The re-entrant lock moto takes around every change of the program state."""
    mutex: threading.RLock = _moto(env)._state_mutex
    return mutex


def frames_of(env: object) -> list[ProgramEnvironment]:
    """The environment's open frames (moto's own list: clearing it drops them)."""
    frames: list[ProgramEnvironment] = _moto(env)._frames
    return frames


def state_data(states: StateData) -> MutableMapping[str, Any]:
    """``$states`` as moto keeps it (``input``, ``result``, ``errorOutput``, ``context``): its own dict."""
    data: MutableMapping[str, Any] = _moto(states)._states_data
    return data


def variable_scopes(variable_store: object) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A ``VariableStore``'s outer and inner scopes (an inner value shadows an outer one)."""
    store = _moto(variable_store)
    return store._outer_scope, store._inner_scope


def declared_variables(variable_store: object) -> list[str]:
    """The variables a ``VariableStore`` traced as assigned in the state being evaluated."""
    traced: list[str] = list(_moto(variable_store)._declaration_tracing)
    return traced


# ---------------------------------------------------------------------------------------------- histories


def history_events(manager: HistoryEventManager) -> list[HistoryEvent]:
    """The attempt's history, moto's own list (appending to it appends to the history)."""
    events: list[HistoryEvent] = _moto(manager)._history_event_list
    return events


def replace_history_events(manager: HistoryEventManager, events: list[HistoryEvent]) -> list[HistoryEvent]:
    """Puts ``events`` in place of the attempt's history, under moto's lock; returns the history it had."""
    moto_manager = _moto(manager)
    with moto_manager._mutex:
        previous: list[HistoryEvent] = moto_manager._history_event_list
        moto_manager._history_event_list = events
    return previous


def continue_event_ids(manager: HistoryEventManager, next_id: int) -> None:
    """The next event logged gets ``next_id`` (a history continued from an earlier attempt's)."""
    _moto(manager)._event_id_gen._next_id = next_id


# ---------------------------------------------------------------------------------------------- Map states


def job_pool_of(worker: object) -> MapJobPool:
    """An iteration worker's job pool."""
    pool: MapJobPool = _moto(worker)._job_pool
    return pool


def worker_environment(worker: object) -> ProgramEnvironment:
    """The environment an iteration worker opens its frames in."""
    env: ProgramEnvironment = _moto(worker)._env
    return env


def eval_job(worker: object, env: ProgramEnvironment, job: MapJob) -> None:
    """The worker's evaluation of one job (with the hooks on it), in the frame ``env``."""
    _moto(worker)._eval_job(env=env, job=job)


def eval_item_input(worker: object, frame: ProgramEnvironment) -> None:
    """The worker's ItemSelector (or Parameters) over the item on the frame's stack."""
    _moto(worker)._eval_input(env_frame=frame)


def item_selector_of(worker: object) -> Component | None:
    """The inline item processor's ItemSelector, else its Parameters, else None."""
    moto_worker = _moto(worker)
    selector: Component | None = moto_worker._item_selector or moto_worker._parameters
    return selector


def map_run_record_of(worker: object) -> MapRunRecord:
    """The Map Run a distributed worker counts its children in."""
    record: MapRunRecord = _moto(worker)._map_run_record
    return record


def set_map_run_record(worker: object, map_run_record: object) -> None:
    """Where a distributed worker counts its children (a stand-in counts nothing)."""
    _moto(worker)._map_run_record = map_run_record


def close_carried_jobs(pool: object, outputs: Mapping[int, object]) -> None:
    """The pool's jobs of ``outputs``' indexes start closed with those outputs; the Map is told if none is
    left open."""
    from sam_local_cloud.moto_seam.stepfunctions import job

    moto_pool = _moto(pool)
    moto_pool._open_jobs[:] = [
        open_job for open_job in moto_pool._open_jobs if open_job.job_index not in outputs
    ]
    for index, output in outputs.items():
        moto_pool._closed_jobs.add(job.JobClosed(job_index=index, job_output=output))
    moto_pool._notify_on_termination()


def forget_map_run(pool: MapRunRecordPool, map_run_arn: str) -> None:
    _moto(pool)._pool.pop(map_run_arn, None)


def iteration_states(state_map: object) -> dict[str, Any]:
    """A Map state's iteration program's states, by name."""
    states: dict[str, Any] = _moto(state_map).iteration_component._states.states
    return states


def s3_client_of(resource_eval: object, resource_runtime_part: object, state_credentials: object) -> S3Client:
    """The S3 client an ItemReader's or ResultWriter's resource evaluator builds (boto3's, untyped here)."""
    client: S3Client = _moto(resource_eval)._get_s3_client(
        resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
    )
    return client


def tolerated_failure_count(declaration: object, env: ProgramEnvironment) -> int:
    count: int = _moto(declaration)._eval_tolerated_failure_count(env)
    return count


def tolerated_failure_percentage(declaration: object, env: ProgramEnvironment) -> float:
    percentage: float = _moto(declaration)._eval_tolerated_failure_percentage(env)
    return percentage


# ---------------------------------------------------------------------------------------------- callbacks


def callback_endpoints(manager: object) -> MutableMapping[str, Any]:
    """A ``CallbackPoolManager``'s endpoints by callback id."""
    endpoints: MutableMapping[str, Any] = _moto(manager)._pool
    return endpoints


def answer_no_outcome(start_endpoint: object) -> None:
    """An activity task's start endpoint answers None to a wait that ends with no worker."""
    _moto(start_endpoint)._outcome = None


def activity_store_of(manager: object) -> Mapping[str, Any]:
    """The activities (by ARN) a ``CallbackPoolManager`` or an execution hands tasks to."""
    store: Mapping[str, Any] = _moto(manager)._activity_store
    return store


def logs_backend_of(logging_session: object) -> LogsBackend:
    """The CloudWatch Logs backend an execution's logging session writes to."""
    backend: LogsBackend = _moto(logging_session)._logs_client
    return backend


# ---------------------------------------------------------------------------------------------- states


def is_jsonpath_state(state: object) -> bool:
    """Whether the state is evaluated in JSONPath (else JSONata)."""
    jsonpath: bool = _moto(state)._is_language_query_jsonpath()
    return jsonpath


def error_and_cause_of(failure_event: object) -> tuple[str, str]:
    """The ``Error`` and ``Cause`` of the error output a state's failure event gives a catcher."""
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionState

    output = _moto(ExecutionState)._construct_error_output_value(failure_event)
    error: str = output.get("Error")
    cause: str = output.get("Cause")
    return error, cause


def lambda_error_and_cause(client_error: Exception) -> tuple[str, str]:
    """The error and cause a Lambda Task reports for botocore's ``ClientError``."""
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskServiceLambda

    error_and_cause: tuple[str, str] = _moto(StateTaskServiceLambda)._error_cause_from_client_error(
        client_error
    )
    return error_and_cause


def format_argument_text(value: object) -> str:
    """States.Format's text of one argument."""
    from sam_local_cloud.moto_seam.stepfunctions import StringFormat

    text: str = StringFormat._to_str_repr(value)
    return text


def to_sfn_cased(name: str) -> str:
    """A boto member name as Step Functions spells it in a service integration's parameters."""
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskService

    cased: str = StateTaskService._to_sfn_cased(name)
    return cased


def supported_integration_patterns(task: object) -> Collection[object]:
    """The integration patterns (``.sync``, ``.waitForTaskToken``) a service Task offers (none if unsaid)."""
    patterns: Collection[object] = getattr(task, "_supported_integration_patterns", ())
    return patterns


def sfn_resource(task: object) -> tuple[str, str]:
    """A service Task's resource name and resource type, as its failure events name them."""
    moto_task = _moto(task)
    return moto_task._get_sfn_resource(), moto_task._get_sfn_resource_type()


def boto_service_name(task: object, boto_service_name: str | None = None) -> str:
    name: str = _moto(task)._get_boto_service_name(boto_service_name=boto_service_name)
    return name


def boto_service_action(task: object, service_action_name: str | None = None) -> str:
    action: str = _moto(task)._get_boto_service_action(service_action_name=service_action_name)
    return action


def to_boto_request(task: object, parameters: dict[str, Any], input_shape: object) -> None:
    """The Task's parameters renamed and converted in place to what boto's operation takes."""
    _moto(task)._to_boto_request(parameters, input_shape)


def from_boto_response(task: object, response: dict[str, Any], output_shape: object) -> None:
    """boto's response renamed and converted in place to what the Task's state output has."""
    _moto(task)._from_boto_response(response, output_shape)


def sync2_output(task: object, output_type: object, value: object) -> None:
    """An ``.sync:2`` Task's output of a described resource, converted in place."""
    _moto(task)._sync2_api_output_of(typ=output_type, value=value)


def normalised_response(task: object, response: object, service_action_name: str) -> None:
    _moto(task)._normalise_response(response=response, service_action_name=service_action_name)


# ---------------------------------------------------------------------------------------------- the parser


def inner_string_of(preprocessor: object, parser_rule_context: object) -> str | None:
    """The text of a string literal in the definition, its quotes taken off."""
    text: str | None = _moto(preprocessor)._inner_string_of(parser_rule_context=parser_rule_context)
    return text


def common_state_field_of(preprocessor: object, state_props: object) -> Any:
    """The state (moto's ``CommonStateField``) the preprocessor builds of a state's properties."""
    return _moto(preprocessor)._common_state_field_of(state_props=state_props)


def open_query_language_scope(preprocessor: object, parse_tree: object) -> None:
    _moto(preprocessor)._open_query_language_scope(parse_tree)


def close_query_language_scope(preprocessor: object) -> None:
    _moto(preprocessor)._close_query_language_scope()


def current_query_language(preprocessor: object) -> object:
    """The ``QueryLanguage`` declaration in force where the preprocessor is."""
    return _moto(preprocessor)._get_current_query_language()


def motos_argument_values(argument_list: object, env: object) -> list[Any]:
    """moto's evaluation of an intrinsic function's arguments, for a subclass that checks them."""
    from sam_local_cloud.moto_seam.stepfunctions import ArgumentList

    values: list[Any] = _moto(ArgumentList)._eval_argument(argument_list, env)
    return values
