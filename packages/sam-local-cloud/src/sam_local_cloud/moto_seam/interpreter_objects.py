"""What the engine reads of moto's Step Functions objects: ``Protocol``s with only the members it uses.

moto's classes are barely annotated, so an object the engine gets from moto is ``Any`` to mypy; a concern
annotates it with one of these instead, and mypy holds it to the members named here. They are public members
only: moto's private ones are read through ``interpreter_internals``, the seam's functions, never by a
concern itself (``tests/test_private_reads.py``). Nothing here imports moto, so a concern may annotate with
them at no import cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from datetime import datetime
from typing import Any, Protocol

# A history event, as moto's EventManager keeps it (``id``, ``type``, ``timestamp``, its details).
HistoryEvent = MutableMapping[str, Any]


class EventHistoryPosition(Protocol):
    """moto's ``EventHistoryContext``: which event the next one follows."""

    source_event_id: int
    last_published_event_id: int


class HistoryEventManager(Protocol):
    """moto's ``EventManager``: the history of one execution attempt."""

    def add_event(
        self,
        context: EventHistoryPosition,
        event_type: str,
        event_details: object = None,
        timestamp: object = None,
        update_source_event_id: bool = True,
    ) -> int: ...


class ContextObject(Protocol):
    """moto's ``ContextObjectManager``: ``$$``, as the interpreter builds it."""

    context_object_data: MutableMapping[str, Any]


class StateData(Protocol):
    """moto's ``States``: the state's input, result and error output, and the context object."""

    context_object: ContextObject

    def reset(self, input_value: object) -> None: ...

    def get_input(self) -> object: ...


class MapRunRecordPool(Protocol):
    """moto's ``MapRunRecordPoolManager``: the Map Runs of one execution."""

    def add(self, map_run_record: MapRunRecord) -> None: ...

    def get_all(self) -> list[MapRunRecord]: ...


class AwsExecutionDetails(Protocol):
    """moto's ``AWSExecutionDetails``: whose execution it is."""

    @property
    def role_arn(self) -> str: ...


class ProgramEnvironment(Protocol):
    """moto's ``Environment``: an execution's (or an iteration's frame's) evaluation state."""

    event_manager: HistoryEventManager

    @property
    def event_history_context(self) -> EventHistoryPosition: ...

    @property
    def states(self) -> StateData: ...

    stack: list[Any]
    heap: dict[str, Any]
    variable_store: Any  # moto's VariableStore, copied and put back whole
    map_run_record_pool_manager: MapRunRecordPool

    @property
    def aws_execution_details(self) -> AwsExecutionDetails: ...

    @property
    def next_state_name(self) -> str | None: ...

    def is_frame(self) -> bool: ...

    def is_running(self) -> bool: ...

    def program_state(self) -> object: ...

    def set_error(self, error: object) -> None: ...

    def open_inner_frame(self) -> ProgramEnvironment: ...

    def close_frame(self, frame: ProgramEnvironment) -> None: ...

    def delete_frame(self, frame: ProgramEnvironment) -> None: ...


class ExecutionRun(Protocol):
    """moto's ``ExecutionWorker``: the thread running one attempt of an execution."""

    @property
    def env(self) -> ProgramEnvironment | None: ...

    def start(self) -> None: ...


class ExecutionRecord(Protocol):
    """moto's ``Execution``: the execution DescribeExecution describes."""

    exec_arn: str
    name: str
    sm_type: str
    state_machine_arn: str
    execution_input: str | None
    input_data: object
    trace_header: str | None
    exec_status: str
    start_date: datetime
    stop_date: datetime | None
    error: str | None
    cause: str | None
    output: object
    exec_worker: Any  # an ExecutionRun, or None when moto runs no state machines; assigned as either

    @property
    def status(self) -> str: ...

    def to_history_output(self) -> MutableMapping[str, Any]: ...

    def get_start_execution_details(self) -> object: ...

    def get_start_state_machine_details(self) -> object: ...


class ExecutionCommunication(Protocol):
    """moto's ``BaseExecutionWorkerCommunication``: how a worker reports its execution's end."""

    @property
    def execution(self) -> ExecutionRecord: ...

    def terminated(self) -> None: ...


class StepFunctionsBackend(Protocol):
    """moto's Step Functions backend, for the calls the engine makes of it."""

    def describe_execution(self, execution_arn: str) -> ExecutionRecord: ...

    def describe_activity(self, activity_arn: str) -> object: ...

    def describe_state_machine(self, state_machine_arn: str | None) -> StateMachineRecord: ...

    def send_task_failure(self, task_token: str, error: str | None, cause: str | None) -> object: ...


class StepFunctionsRequest(Protocol):
    """moto's ``StepFunctionResponse``: one API request being answered."""

    @property
    def stepfunction_backend(self) -> StepFunctionsBackend: ...


class MapRunCount(Protocol):
    """One of a Map Run's counts (moto's ``Counter``)."""

    def get(self) -> int: ...

    def count(self, increment: int = 1) -> None: ...

    def offset(self, offset: int) -> None: ...


class MapRunCounter(Protocol):
    """A Map Run's item or execution counts (moto's ``ItemCounter`` / ``ExecutionCounter``)."""

    total: MapRunCount
    succeeded: MapRunCount
    results_written: MapRunCount
    failed: MapRunCount
    aborted: MapRunCount
    timed_out: MapRunCount
    running: MapRunCount
    pending: MapRunCount


class MapRunRecord(Protocol):
    """moto's ``MapRunRecord``: a Distributed Map's run."""

    map_run_arn: str
    status: str
    stop_date: datetime | None
    max_concurrency: int
    item_counter: MapRunCounter
    execution_counter: MapRunCounter


class StateMachineRecord(Protocol):
    """moto's ``StateMachine``, as a Step Functions backend describes it."""

    arn: str
    name: str
    type: str
    loggingConfiguration: Mapping[str, object] | None  # noqa: N815 - moto's attribute


class StateDeclaration(Protocol):
    """moto's ``CommonStateField``: one state of a program."""

    @property
    def name(self) -> str: ...

    @property
    def continue_with(self) -> object: ...


class MapStateInput(Protocol):
    """What a Distributed Map state puts on the stack for its iteration component (moto's ``Map...Input``)."""

    state_name: str
    map_run_record: MapRunRecord


class MapJob(Protocol):
    """moto's ``Job``: one iteration of a Map."""

    @property
    def job_index(self) -> int: ...

    @property
    def job_input(self) -> object: ...

    @property
    def job_output(self) -> object: ...

    @property
    def job_program(self) -> Any: ...  # moto's Program, handed back to moto's own Job


class MapJobPool(Protocol):
    """moto's ``JobPool``: a Map's iterations, handed to its workers."""

    def next_job(self) -> MapJob | None: ...

    def close_job(self, job: MapJob) -> None: ...


class Component(Protocol):
    """Any of moto's evaluable components (a state's field, a selector): evaluates in an environment."""

    def eval(self, env: ProgramEnvironment) -> None: ...


class LogsBackend(Protocol):
    """moto's CloudWatch Logs backend, as an execution's logging session writes to it."""

    def create_log_stream(self, log_group_name: str, log_stream_name: str) -> object: ...

    def put_log_events(
        self, log_group_name: str, log_stream_name: str, log_events: list[dict[str, object]]
    ) -> object: ...


class MapWorker(Protocol):
    """moto's ``IterationWorker`` (and its distributed kinds): evaluates a Map's jobs in frames of its own."""

    def stopped(self) -> bool: ...


# moto's code a listener calls on: a component's (or a state's) evaluation in an environment.
Evaluation = Callable[[object, ProgramEnvironment], None]
# moto's code a listener calls on: a Map worker's evaluation of one job in a frame.
JobEvaluation = Callable[[object, ProgramEnvironment, MapJob], None]
