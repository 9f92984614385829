"""Express state machines, run and answered for as AWS does.

- ``StartSyncExecution`` runs an execution of an EXPRESS state machine to its end and answers with it:
  ``executionArn`` (``express:<machine>:<name>:<id>``), ``stateMachineArn``, ``name``, ``startDate``,
  ``stopDate``, ``status`` (SUCCEEDED, FAILED or TIMED_OUT), ``output`` (SUCCEEDED only), ``error`` and
  ``cause``, ``input``, ``inputDetails``/``outputDetails`` and ``billingDetails`` (the duration rounded up
  to 100 ms, 64 MB as AWS reports for a small execution). A STANDARD machine is refused with
  StateMachineTypeNotSupported, a missing one with StateMachineDoesNotExist, bad JSON input with
  InvalidExecutionInput.
- ``StartExecution`` on an EXPRESS machine starts the same kind of execution in the background and answers
  at once; every call starts a new execution (AWS: StartExecution is not idempotent for EXPRESS).
- An Express execution lasts at most five minutes (``EXPRESS_MAX_DURATION_SECONDS``); past that it ends
  TIMED_OUT with ``States.Timeout``. The local cloud can be given a shorter limit for tests.
- AWS keeps no history and no description of Express executions: the execution ARN is not valid for
  DescribeExecution, GetExecutionHistory, StopExecution, RedriveExecution or
  DescribeStateMachineForExecution (InvalidArn, "Resource type not valid in this context: express"), and
  ListExecutions of an EXPRESS machine is StateMachineTypeNotSupported. Nothing of a finished execution
  stays in memory here either: its events are not collected while it runs, and the execution is dropped
  when it ends.
- What an Express execution leaves is its CloudWatch Logs record, as on AWS: with a
  ``loggingConfiguration`` (level ALL, ERROR or FATAL, one log group destination) every history event of
  that level goes to the log group as AWS writes it (``id``, ``type``, ``details``, ``previous_event_id``,
  ``event_timestamp``, ``execution_arn``, ``redrive_count``; input and output only with
  ``includeExecutionData``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import threading
import uuid
import weakref
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Protocol

from sam_local_cloud.accounts import parts_for_arn
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import (
    ExecutionRecord,
    HistoryEvent,
    ProgramEnvironment,
    StateMachineRecord,
    StepFunctionsBackend,
    StepFunctionsRequest,
)
from sam_local_cloud.moto_seam.records import EngineRecords

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sam_local_cloud.moto_seam.stepfunctions import Execution

EXPRESS: Final = "EXPRESS"
# AWS's quota for an Express execution's duration.
EXPRESS_MAX_DURATION_SECONDS: Final = 300.0
BILLING_INCREMENT_MS: Final = 100
BILLED_MEMORY_MB: Final = 64
NOT_SUPPORTED_BY_TYPE: Final = "This operation is not supported by this type of state machine"
EXPRESS_ARN_NOT_VALID: Final = "Invalid Arn: 'Resource type not valid in this context: express'"
# moto's APIs that take an execution ARN and know nothing of top-level Express executions. RedriveExecution,
# which moto lacks, asks ``refuse_express_execution_arn`` itself (redrive adds it; there is no moto code of
# it to listen around).
_EXECUTION_ARN_APIS: Final = (
    "describe_execution",
    "get_execution_history",
    "stop_execution",
    "describe_state_machine_for_execution",
)

# Every Express execution not yet collected: what a finished execution still holds shows here.
_alive: weakref.WeakSet[ExpressRun] = weakref.WeakSet()
# Per backend, its Express executions by ARN while something holds them: a ``.sync`` parent follows its
# child here, since no API describes an Express execution.
_by_arn: EngineRecords[weakref.WeakValueDictionary[str, ExpressRun]] = EngineRecords(
    weakref.WeakValueDictionary
)


class ExpressRun(ExecutionRecord, Protocol):
    """An Express execution (``_execution_class``): moto's execution, ending by itself once."""

    synchronous: bool
    closed: threading.Event

    def start(self) -> None: ...

    def end_within(self, seconds: float) -> None: ...

    def close(self, broken_by: Exception | None = None) -> None: ...


class ExpressRequestError(Exception):
    """A request refused as AWS refuses it: the error code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def max_duration_seconds(execution_arn: str) -> float:
    """The longest an Express execution runs: AWS's five minutes, unless its cloud set a shorter limit."""
    parts = parts_for_arn(execution_arn)
    limit = parts.express_max_duration_seconds if parts is not None else None
    return EXPRESS_MAX_DURATION_SECONDS if limit is None else float(limit)


def express_executions_in_memory() -> int:
    """How many Express executions are still referenced (running, or kept by something)."""
    return len(_alive)


def express_execution_arn(state_machine_arn: str, name: str) -> str:
    """``arn:...:express:<machine>:<name>:<id>``: AWS adds an ID, since Express names may repeat."""
    prefix, _, machine_name = state_machine_arn.partition(":stateMachine:")
    return f"{prefix}:express:{machine_name.split(':')[0]}:{name}:{uuid.uuid4()}"


def is_top_level_express_arn(arn: str | None) -> bool:
    """An execution ARN of an Express machine started by StartExecution/StartSyncExecution.

    A Distributed Map's Express children have ``<machine>/<map run label>`` as their machine part and are
    answered by DescribeExecution on AWS, so they are not counted here.
    """
    parts = (arn or "").split(":")
    return len(parts) >= 8 and parts[5] == "express" and "/" not in parts[6]


# ---------------------------------------------------------------------------------------------- executions


def start_express_execution(
    backend: Any,  # moto's backend, deep-copied from with its own names
    state_machine: Any,  # moto's StateMachine, deep-copied
    name: str | None,
    execution_input: str | None,
    trace_header: str | None = None,
    *,
    synchronous: bool = False,
) -> ExpressRun:
    """Start an Express execution of ``state_machine`` (a moto StateMachine) and return it, running."""
    input_text = "{}" if execution_input is None else execution_input
    check_execution_input(input_text)
    if name:
        internals.validate_execution_name(backend, name)
    name = name or str(uuid.uuid4())
    # A snapshot of the definition, as moto's StartExecution takes: later updates leave this run alone.
    clone = copy.deepcopy(
        state_machine,
        {id(state_machine.executions): [], id(state_machine.backend): state_machine.backend},
    )
    clone.sm_type = EXPRESS
    execution_arn = express_execution_arn(state_machine.arn, name)
    execution: ExpressRun = _execution_class()(
        name=name,
        sm_type=EXPRESS,
        role_arn=clone.roleArn,
        exec_arn=execution_arn,
        account_id=backend.account_id,
        region_name=backend.region_name,
        state_machine=clone,
        start_date=datetime.now(UTC),
        cloud_watch_logging_session=_logging_session(state_machine, execution_arn),
        activity_store={},
        input_data=input_text,
        trace_header=trace_header,
    )
    execution.synchronous = synchronous
    _alive.add(execution)
    _by_arn.of(backend)[execution_arn] = execution
    execution.start()
    limit = max_duration_seconds(execution_arn)
    watchdog = threading.Thread(target=execution.end_within, args=(limit,), name="express-limit", daemon=True)
    watchdog.start()
    return execution


def express_execution(backend: object, execution_arn: str) -> ExpressRun | None:
    """The Express execution of that ARN started on ``backend``, while it is still referenced.

    Its ``closed`` event is set once it has ended; its status, output, error and cause are then final.
    """
    return _by_arn.of(backend).get(execution_arn)


def check_execution_input(input_text: str | None) -> None:
    """InvalidExecutionInput, worded as AWS words it, for input that is not JSON."""
    if input_text is None:
        return
    try:
        json.loads(input_text)
    except ValueError as error:
        raise ExpressRequestError(
            "InvalidExecutionInput", f"Invalid State Machine Execution Input: '{error}'"
        ) from None


def start_sync_execution(backend: StepFunctionsBackend, parameters: Mapping[str, Any]) -> dict[str, object]:
    """StartSyncExecution's answer: the execution run to its end, or ExpressRequestError."""
    state_machine = backend.describe_state_machine(parameters.get("stateMachineArn"))
    if state_machine.type != EXPRESS:
        raise ExpressRequestError("StateMachineTypeNotSupported", NOT_SUPPORTED_BY_TYPE)
    execution = start_express_execution(
        backend,
        state_machine,
        parameters.get("name"),
        parameters.get("input"),
        parameters.get("traceHeader"),
        synchronous=True,
    )
    execution.closed.wait()
    return sync_answer(execution)


def sync_answer(execution: ExecutionRecord) -> dict[str, object]:
    """StartSyncExecution's response members for a finished execution."""
    stop_date = execution.stop_date or datetime.now(UTC)
    status = execution.status
    answer: dict[str, object] = {
        "executionArn": execution.exec_arn,
        "stateMachineArn": execution.state_machine_arn,
        "name": execution.name,
        "startDate": execution.start_date,
        "stopDate": stop_date,
        "status": status,
        "input": json.dumps(execution.input_data, separators=(",", ":")),
        "inputDetails": {"included": True},
        "outputDetails": {"included": True},
        "billingDetails": billing_details(execution.start_date, stop_date),
    }
    if status == "SUCCEEDED":
        answer["output"] = json.dumps(execution.output, separators=(",", ":"))
    if execution.error is not None:
        answer["error"] = execution.error
    if execution.cause is not None:
        answer["cause"] = execution.cause
    if execution.trace_header:
        answer["traceHeader"] = execution.trace_header
    return answer


def billing_details(start: datetime, stop: datetime) -> dict[str, int]:
    """AWS bills an Express execution's duration in 100 ms steps (at least one) and memory in 64 MB."""
    milliseconds = max(0.0, (stop - start).total_seconds() * 1000)
    steps = max(1, math.ceil(milliseconds / BILLING_INCREMENT_MS))
    return {
        "billedDurationInMilliseconds": steps * BILLING_INCREMENT_MS,
        "billedMemoryUsedInMB": BILLED_MEMORY_MB,
    }


class _KeepsNoEvents(list[HistoryEvent]):
    def append(self, event: HistoryEvent) -> None:
        """AWS keeps no history of an Express execution; its log record goes to CloudWatch Logs."""


@cache
def _worker_class() -> type:
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionWorker

    class ExpressWorker(ExecutionWorker):
        def _get_evaluation_environment(self) -> Any:  # moto's Environment, as moto's own returns it
            env: ProgramEnvironment = internals.motos_evaluation_environment(self)
            internals.replace_history_events(env.event_manager, _KeepsNoEvents())
            execution = internals.worker_execution(self)
            if getattr(execution, "synchronous", False):
                # AWS-recorded: a synchronous execution's $$.Execution has no RedriveCount (it can never
                # be redriven); an asynchronous one's has 0, as a Standard execution's.
                context = env.states.context_object.context_object_data["Execution"]
                context.pop("RedriveCount", None)
            return env

        def _execution_logic(self) -> None:
            try:
                internals.run_motos_execution_logic(self)
            except Exception as error:  # the interpreter broke before the program could end
                execution: ExpressRun | None = internals.worker_execution(self)
                if execution is not None:
                    execution.close(broken_by=error)

    return ExpressWorker


@cache
def _communication_class() -> type:
    from sam_local_cloud.moto_seam.stepfunctions import BaseExecutionWorkerCommunication

    class ExpressCommunication(BaseExecutionWorkerCommunication):
        """Closes the execution once: at its end, or at the duration limit, whichever comes first."""

        def terminated(self) -> None:
            execution: Any = self.execution  # an ExpressExecution, which moto's annotation does not know
            execution.close()

    return ExpressCommunication


@cache
def _execution_class() -> type:
    from sam_local_cloud.moto_seam.stepfunctions import Execution, ProgramTimedOut

    class ExpressExecution(Execution):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.synchronous = False
            self.closed = threading.Event()
            self._close_lock = threading.Lock()

        def _get_start_execution_worker_comm(self) -> Any:  # moto's communication, as moto's own returns
            return _communication_class()(self)

        def _get_start_execution_worker(self) -> Any:  # moto's ExecutionWorker, as moto's own returns
            return internals.new_execution_worker(_worker_class(), self)

        def close(self, broken_by: Exception | None = None) -> None:
            with self._close_lock:
                if self.closed.is_set():
                    return
                _record_the_end(self, broken_by)
                self.closed.set()

        def end_within(self, seconds: float) -> None:
            if self.closed.wait(timeout=seconds):
                return
            env = self.exec_worker.env if self.exec_worker is not None else None
            if env is None:
                self.close(broken_by=RuntimeError("the execution did not start within its time"))
                return
            with internals.state_mutex(env):  # re-entrant: set_timed_out takes it too
                if env.is_running():
                    env.set_timed_out()
            if isinstance(env.program_state(), ProgramTimedOut):
                self.close()

    return ExpressExecution


def _record_the_end(execution: Execution, broken_by: Exception | None) -> None:
    """The execution's status, stop date, output or error, from how its program ended."""
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionStatus

    env = execution.exec_worker.env if execution.exec_worker is not None else None
    if broken_by is not None or env is None:
        # As moto ends a program whose evaluation raised: FAILED with States.Runtime.
        execution.exec_status = ExecutionStatus.FAILED
        execution.stop_date = datetime.now(UTC)
        execution.error = "States.Runtime"
        execution.cause = f"{type(broken_by).__name__}({broken_by})" if broken_by else None
    else:
        internals.reflect_execution_status(execution)
    if execution.exec_status == ExecutionStatus.TIMED_OUT and execution.error is None:
        execution.error = "States.Timeout"


# ---------------------------------------------------------------------------------------------- logging


def _logging_session(state_machine: StateMachineRecord, execution_arn: str) -> object:
    from sam_local_cloud.moto_seam.stepfunctions import CloudWatchLoggingConfiguration

    configuration = dict(state_machine.loggingConfiguration or {})
    configuration.setdefault("includeExecutionData", False)
    cloud_watch = CloudWatchLoggingConfiguration.from_logging_configuration(
        state_machine_arn=state_machine.arn,
        logging_configuration=configuration,  # type: ignore[arg-type]
    )
    if cloud_watch is None:
        return None
    return _log_session_class()(execution_arn, cloud_watch, state_machine.name)


@cache
def _log_session_class() -> type:
    from sam_local_cloud.moto_seam.stepfunctions import (
        CloudWatchLoggingSession,
        ResourceAlreadyExistsException,
        ResourceNotFoundException,
    )

    class ExecutionLogSession(CloudWatchLoggingSession):
        """One execution's log stream, written as Step Functions writes its log records.

        moto's own session passes the record to CloudWatch Logs in a shape its Logs backend refuses (no
        ``timestamp``/``message``) and never creates the stream, so no record arrived.
        """

        def __init__(self, execution_arn: str, configuration: Any, machine_name: str) -> None:
            super().__init__(execution_arn, configuration)
            started = datetime.now(UTC)
            self.stream_name = f"states/{machine_name}/{started:%Y-%m-%d-%H-%M}/{uuid.uuid4().hex[:8]}"
            self._stream_ready = False

        def publish_history_log(self, history_log: Any) -> None:
            timestamp = _epoch_milliseconds(history_log["event_timestamp"])
            record = {
                "id": str(history_log["id"]),
                "type": getattr(history_log["type"], "value", str(history_log["type"])),
                "details": history_log.get("details") or {},
                "previous_event_id": str(history_log["previous_event_id"]),
                "event_timestamp": str(timestamp),
                "execution_arn": self.execution_arn,
                "redrive_count": "0",
            }
            event = {
                "timestamp": timestamp,
                "message": json.dumps(record, separators=(",", ":"), default=str),
            }
            group = self.configuration.log_group_name
            logs = internals.logs_backend_of(self)
            try:
                if not self._stream_ready:
                    with contextlib.suppress(ResourceAlreadyExistsException):
                        logs.create_log_stream(group, self.stream_name)
                    self._stream_ready = True
                logs.put_log_events(group, self.stream_name, [event])
            except ResourceNotFoundException:
                # AWS delivers logs on a best-effort basis; a missing group never fails the execution.
                return

    return ExecutionLogSession


def _epoch_milliseconds(timestamp: object) -> int:
    if isinstance(timestamp, datetime):
        moment = timestamp
    else:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


# ---------------------------------------------------------------------------------------------- moto


def register_hooks() -> None:
    # An EXPRESS execution is answered from its own records, before the history pages and the executions'
    # bookkeeping of STANDARD ones see the call.
    hooks.order("express", outside=("history_pages", "executions"))
    _start_express_executions()
    _answer_the_express_apis()


def _start_express_executions() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import StepFunctionsParserBackend

    @hooks.around(StepFunctionsParserBackend, "start_execution", concern="express")
    def start_execution(
        proceed: Callable[..., object],
        self: Any,  # moto's backend, which start_express_execution copies from
        state_machine_arn: str,
        name: str | None = None,
        execution_input: str | None = None,
        trace_header: str | None = None,
    ) -> object:
        state_machine = self.describe_state_machine(state_machine_arn)
        try:
            # Both types: moto's own refusal names no error code and words the message unlike AWS.
            check_execution_input(execution_input)
            if state_machine.type != EXPRESS:
                return proceed(self, state_machine_arn, name, execution_input, trace_header)
            return start_express_execution(self, state_machine, name, execution_input, trace_header)
        except ExpressRequestError as refusal:
            raise _refused_class()(refusal) from None


def refuse_express_execution_arn(execution_arn: str | None) -> None:
    """InvalidArn, as AWS answers an API that takes an execution ARN, for a top-level Express execution's."""
    if is_top_level_express_arn(execution_arn):
        raise _refused_class()(ExpressRequestError("InvalidArn", EXPRESS_ARN_NOT_VALID))


@cache
def _refused_class() -> type[Exception]:
    from sam_local_cloud.moto_seam.stepfunctions import ServiceException

    class Refused(ServiceException):
        def __init__(self, refusal: ExpressRequestError) -> None:
            super().__init__(refusal.code, refusal.message)

    return Refused


def _answer_the_express_apis() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ActionResult, StepFunctionResponse

    Refused = _refused_class()  # noqa: N806 - an exception class

    def answer_start_sync_execution(self: Any) -> object:  # moto's StepFunctionResponse: its body
        parameters = json.loads(self.body or "{}")
        try:
            answer = start_sync_execution(self.stepfunction_backend, parameters)
        except ExpressRequestError as refusal:
            raise Refused(refusal) from None
        return ActionResult(answer)

    hooks.add(StepFunctionResponse, "start_sync_execution", answer_start_sync_execution, concern="express")

    def refusing_express_arns(
        proceed: Callable[[StepFunctionsRequest], object], self: StepFunctionsRequest
    ) -> object:
        refuse_express_execution_arn(internals.request_text(self, "executionArn"))
        return proceed(self)

    for api in _EXECUTION_ARN_APIS:
        hooks.around(StepFunctionResponse, api, concern="express")(refusing_express_arns)

    @hooks.around(StepFunctionResponse, "list_executions", concern="express")
    def list_executions(
        proceed: Callable[[StepFunctionsRequest], object], self: StepFunctionsRequest
    ) -> object:
        if not internals.request_param(self, "mapRunArn"):
            machine_arn = internals.required_text(self, "stateMachineArn")
            if self.stepfunction_backend.describe_state_machine(machine_arn).type == EXPRESS:
                raise Refused(ExpressRequestError("StateMachineTypeNotSupported", NOT_SUPPORTED_BY_TYPE))
        return proceed(self)
