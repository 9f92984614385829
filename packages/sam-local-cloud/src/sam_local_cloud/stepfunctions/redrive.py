"""RedriveExecution, which moto does not have, as AWS defines it.

AWS restarts a FAILED, ABORTED or TIMED_OUT Standard execution from the top-level state it did not finish,
with that state's input, appending to the same history (``ExecutionRedriven``, then the rerun). A Map state
reruns only the iterations that did not succeed; the others keep the outputs they had. A Distributed Map's
Map Run is redriven under its own ARN (``MapRunRedriven``) and reruns only the child executions that did not
succeed. Eligibility and its refusals (``ExecutionNotRedrivable``) use AWS's reasons: not while RUNNING or
after SUCCEEDED, within 14 days of the stop, within a year of the start, under 24,999 history events.
``clientToken`` makes the call idempotent for the last 10 tokens, each for 15 minutes. DescribeExecution
and ListExecutions report ``redriveCount``/``redriveDate``/``redriveStatus``/``redriveStatusReason``, and the
context object carries ``$$.Execution.RedriveCount`` (and ``RedriveTime`` once redriven), as on AWS.

How: while an execution runs, each top-level state records its name, input and variables as it is entered,
and each successful iteration of that state's Map is recorded with its output (``ExecutionProgress``). A
redrive starts a new interpreter worker on the same execution whose history continues the old one, whose
program starts at the recorded state, and whose Map job pool starts with the recorded iterations already
closed. What is not done as on AWS: a Parallel state, or a Map nested inside an iteration, is rerun whole.
A Distributed Map whose children failed past its tolerance fails (``distributed_map``); its redrive reruns
those children like any unfinished one (tested for a stopped parent only).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam import interpreter_objects as sfn
from sam_local_cloud.moto_seam.records import EngineRecords

REDRIVABLE_STATUSES = frozenset({"FAILED", "ABORTED", "TIMED_OUT"})
REDRIVABLE_PERIOD = timedelta(days=14)
MAX_OPEN_TIME = timedelta(days=365)
# AWS: under 24,999 events, so the ExecutionRedriven event and at least one more fit in 25,000.
HISTORY_EVENTS_LIMIT = 24_999
CLIENT_TOKENS_KEPT = 10
CLIENT_TOKEN_LIFETIME = timedelta(minutes=15)
ATTEMPT_END_EVENTS = frozenset({"ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"})

REASON_RUNNING = "Execution is RUNNING and cannot be redriven"
REASON_SUCCEEDED = "Execution is SUCCEEDED and cannot be redriven"
REASON_PERIOD = "Execution redrivable period exceeded"
REASON_MAX_TIME = "Execution has exceeded the max execution time"
REASON_HISTORY = "Execution history event limit exceeded"
# AWS's API reference says EXPRESS state machines do not support redrive but gives no message: ours.
REASON_EXPRESS = "Executions of EXPRESS state machines cannot be redriven"


@dataclass(frozen=True)
class Checkpoint:
    """The top-level state an execution was in, with what it was entered with."""

    state_name: str
    state_input: object
    variables: object  # moto's VariableStore, as a deep copy


@dataclass
class MapRun:
    """One evaluation of a top-level Map: the iterations to skip (with their outputs), where to record
    the ones that succeed now, and whether it continues the Map of an earlier attempt (a redrive)."""

    carried: dict[int, object]
    successes: dict[int, object]
    resumed: bool


@dataclass
class ExecutionProgress:
    """What a redrive needs of one execution attempt, kept beside its interpreter environment."""

    checkpoint: Checkpoint | None = None
    # Successful iterations of the Map the checkpoint names, by item index.
    map_outputs: dict[int, object] = field(default_factory=dict)
    # The Distributed Map's run record, redriven rather than replaced.
    map_run_record: sfn.MapRunRecord | None = None
    # Set on a redriven attempt: the state it restarts at and the iterations that state already has.
    resume_state: str | None = None
    resume_outputs: dict[int, object] = field(default_factory=dict)
    _carry: dict[int, object] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def entered(self, state_name: str, state_input: object, variables: object) -> None:
        with self._lock:
            if self.resume_state == state_name:
                self._carry = self.resume_outputs
            else:
                self._carry = None
                self.map_run_record = None
            self.resume_state = None
            self.resume_outputs = {}
            self.map_outputs = {}
            self.checkpoint = Checkpoint(state_name, state_input, variables)

    def start_map(self, state_name: str) -> MapRun | None:
        """The Map run of the top-level state being evaluated; None for a Map nested in an iteration."""
        with self._lock:
            if self.checkpoint is None or self.checkpoint.state_name != state_name:
                return None
            # Carried once: a retry of the whole Map state reruns every iteration, as on AWS.
            resumed = self._carry is not None
            carried, self._carry = self._carry or {}, None
            self.map_outputs = dict(carried)
            return MapRun(carried, self.map_outputs, resumed)

    def for_redrive(self) -> ExecutionProgress:
        with self._lock:
            return ExecutionProgress(
                checkpoint=self.checkpoint,
                map_run_record=self.map_run_record,
                resume_state=self.checkpoint.state_name if self.checkpoint else None,
                resume_outputs=dict(self.map_outputs),
            )


@dataclass
class _AttemptProgress:
    progress: ExecutionProgress | None = None


@dataclass
class _Ending:
    """Whether an environment's program ended at an End state (not cut short by its Map's end)."""

    reached_end: bool = False


@dataclass
class MapRunRedrives:
    """What a Distributed Map's run record carries about its redrives."""

    count: int = 0
    date: datetime | None = None


# Keyed by the attempt's EventManager: every frame of an execution (Map iterations included) shares it,
# while a Distributed Map's children get their own.
_progress: EngineRecords[_AttemptProgress] = EngineRecords(_AttemptProgress)
# Keyed by the environment (the execution's, or an iteration's frame).
_endings: EngineRecords[_Ending] = EngineRecords(_Ending)
# Keyed by moto's sfn.MapRunRecord.
_map_run_redrives: EngineRecords[MapRunRedrives] = EngineRecords(MapRunRedrives)
# The top-level Map run being evaluated in this thread, for the job pool its Map state builds.
_current_map_run: ContextVar[MapRun | None] = ContextVar("redrive_current_map_run", default=None)
# A Map Run record being redriven in this thread, until its MapRunRedriven event is logged.
_redriven_map_run: ContextVar[sfn.MapRunRecord | None] = ContextVar("redrive_redriven_map_run", default=None)
_redrive_lock = threading.Lock()


def _progress_of(env: sfn.ProgramEnvironment) -> ExecutionProgress | None:
    attempt = _progress.get(env.event_manager)
    return attempt.progress if attempt is not None else None


def _track_progress(env: sfn.ProgramEnvironment, progress: ExecutionProgress) -> None:
    _progress.of(env.event_manager).progress = progress


def map_run_redrives(map_run_record: sfn.MapRunRecord) -> MapRunRedrives:
    """The redrive count and date of a Distributed Map's run (zero and none until it is redriven)."""
    return _map_run_redrives.get(map_run_record) or MapRunRedrives()


@dataclass(frozen=True)
class _TokenUse:
    redrive_date: datetime
    first_used: datetime


@dataclass
class RedriveRecord:
    """What the engine keeps about an execution's redrives, beside moto's execution."""

    count: int = 0
    date: datetime | None = None
    history_events: int | None = None
    tokens: OrderedDict[str, _TokenUse] = field(default_factory=OrderedDict)


_redrives: EngineRecords[RedriveRecord] = EngineRecords(RedriveRecord)


def redrive_record(execution: sfn.ExecutionRecord) -> RedriveRecord:
    return _redrives.of(execution)


# ---------------------------------------------------------------------------------------------- eligibility


def _history_event_count(execution: sfn.ExecutionRecord) -> int:
    recorded = redrive_record(execution).history_events
    if recorded is not None:
        return recorded
    if getattr(execution, "exec_worker", None) is None:
        return 0  # moto with execution off keeps no history
    return len(execution.to_history_output()["events"])


def _aware(moment: datetime) -> datetime:
    """moto's executions carry UTC times, naive ones when state machine execution is off."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def not_redrivable_reason(execution: sfn.ExecutionRecord, now: datetime | None = None) -> str | None:
    """AWS's redriveStatusReason for an execution that cannot be redriven, None when it can."""
    now = now or datetime.now(UTC)
    status = execution.status
    if status not in REDRIVABLE_STATUSES:
        return REASON_SUCCEEDED if status == "SUCCEEDED" else REASON_RUNNING
    if getattr(execution, "sm_type", "STANDARD") == "EXPRESS":
        return REASON_EXPRESS
    if execution.start_date is not None and now - _aware(execution.start_date) > MAX_OPEN_TIME:
        return REASON_MAX_TIME
    if execution.stop_date is not None and now - _aware(execution.stop_date) > REDRIVABLE_PERIOD:
        return REASON_PERIOD
    if _history_event_count(execution) >= HISTORY_EVENTS_LIMIT:
        return REASON_HISTORY
    return None


def redrive_fields(execution: sfn.ExecutionRecord) -> dict[str, object]:
    """The redrive members of DescribeExecution, as AWS fills them."""
    record = redrive_record(execution)
    fields: dict[str, object] = {"redriveCount": record.count}
    if record.date is not None:
        fields["redriveDate"] = record.date
    reason = not_redrivable_reason(execution)
    fields["redriveStatus"] = "REDRIVABLE" if reason is None else "NOT_REDRIVABLE"
    if reason is not None:
        fields["redriveStatusReason"] = reason
    return fields


# ---------------------------------------------------------------------------------------------- the redrive


@cache
def _not_redrivable_error() -> type[Exception]:
    from sam_local_cloud.moto_seam.stepfunctions import AWSError

    class ExecutionNotRedrivable(AWSError):  # noqa: N818 - AWS's error code, which moto answers with
        TYPE = "ExecutionNotRedrivable"
        STATUS = 400

    return ExecutionNotRedrivable


def _not_redrivable(message: str) -> Exception:
    return _not_redrivable_error()(message)


def _previous_events(execution: sfn.ExecutionRecord) -> list[sfn.HistoryEvent]:
    """The history so far, taken from where the finished execution left it (it grows from here on)."""
    from sam_local_cloud.stepfunctions.histories import store_for

    store = store_for(execution.exec_arn)
    events = store.take(execution.exec_arn) if store is not None else None
    if events is None:
        events = list(internals.history_events(execution.exec_worker.env.event_manager))
    return events


def redrive_execution(
    backend: sfn.StepFunctionsBackend, execution_arn: str, client_token: str | None = None
) -> datetime:
    """RedriveExecution: restart the execution where it stopped; returns the redriveDate."""
    execution = backend.describe_execution(execution_arn)
    if getattr(execution, "exec_worker", None) is None:
        raise _not_redrivable("Executions run only with state machine execution on (the local cloud's mode)")
    now = datetime.now(UTC)
    with _redrive_lock:
        record = redrive_record(execution)
        for token, use in list(record.tokens.items()):
            if now - use.first_used > CLIENT_TOKEN_LIFETIME:
                del record.tokens[token]
        if client_token is not None and client_token in record.tokens:
            return record.tokens[client_token].redrive_date
        reason = not_redrivable_reason(execution, now)
        if reason is not None:
            raise _not_redrivable(reason)
        old_env: sfn.ProgramEnvironment | None = execution.exec_worker.env
        progress = _progress_of(old_env) if old_env is not None else None
        # The worker starts from the execution's input, kept compressed since the execution ended.
        from sam_local_cloud.stepfunctions.histories import restore_details

        restore_details(execution)
        worker: sfn.ExecutionRun = internals.new_execution_worker(
            _worker_class(),
            execution,
            previous_events=_previous_events(execution),
            progress=progress.for_redrive() if progress is not None else ExecutionProgress(),
            map_runs=old_env.map_run_record_pool_manager if old_env is not None else None,
            redrive_count=record.count + 1,
            redrive_date=now,
        )
        from sam_local_cloud.moto_seam.stepfunctions import ExecutionStatus

        record.count += 1
        record.date = now
        record.history_events = None
        execution.exec_status = ExecutionStatus.RUNNING
        execution.stop_date = None
        execution.error = None
        execution.cause = None
        execution.output = None
        execution.exec_worker = worker
        if client_token is not None:
            record.tokens[client_token] = _TokenUse(now, now)
            while len(record.tokens) > CLIENT_TOKENS_KEPT:
                record.tokens.popitem(last=False)
        worker.start()
    return now


_worker_classes: list[type] = []


def _worker_class() -> type:
    """ExecutionWorker continued: the same execution's history, from the state it did not finish."""
    if _worker_classes:
        return _worker_classes[0]
    from sam_local_cloud.moto_seam.stepfunctions import (
        ExecutionWorker,
        HistoryEventType,
        Program,
        StartAt,
    )

    class RedriveWorker(ExecutionWorker):
        def __init__(
            self,
            *,
            previous_events: list[sfn.HistoryEvent],
            progress: ExecutionProgress,
            map_runs: sfn.MapRunRecordPool | None,
            redrive_count: int,
            redrive_date: datetime,
            **worker: Any,  # moto's ExecutionWorker's own arguments
        ) -> None:
            super().__init__(**worker)
            self._previous_events = previous_events
            self._progress = progress
            self._map_runs = map_runs
            self._redrive_count = redrive_count
            self._redrive_date = redrive_date

        def _get_evaluation_environment(self) -> Any:  # moto's Environment, as moto's own returns it
            env: sfn.ProgramEnvironment = internals.motos_evaluation_environment(self)
            _track_progress(env, self._progress)
            manager = env.event_manager
            last_id = max((event["id"] for event in self._previous_events), default=0)
            # ExecutionRedriven follows the attempt's end, even if moto logged a cut-short iteration after it.
            ended_id = max(
                (event["id"] for event in self._previous_events if event["type"] in ATTEMPT_END_EVENTS),
                default=last_id,
            )
            internals.history_events(manager).extend(self._previous_events)
            internals.continue_event_ids(manager, last_id + 1)
            env.event_history_context.source_event_id = ended_id
            env.event_history_context.last_published_event_id = ended_id
            if self._map_runs is not None:
                env.map_run_record_pool_manager = self._map_runs
            execution_context = env.states.context_object.context_object_data["Execution"]
            execution_context["RedriveCount"] = self._redrive_count
            execution_context["RedriveTime"] = self._redrive_date.isoformat()
            checkpoint = self._progress.checkpoint
            if checkpoint is not None:
                env.states.reset(input_value=checkpoint.state_input)
                env.variable_store = copy.deepcopy(checkpoint.variables)
            return env

        def _execution_logic(self) -> None:
            program = internals.evaluation_entrypoint(self)
            env = internals.start_environment(self)
            redriven = {"executionRedrivenEventDetails": {"redriveCount": self._redrive_count}}
            env.event_manager.add_event(
                context=env.event_history_context,
                event_type=HistoryEventType.ExecutionRedriven,
                event_details=redriven,
            )
            checkpoint = self._progress.checkpoint
            if checkpoint is not None:
                program = Program(
                    query_language=program.query_language,
                    start_at=StartAt(checkpoint.state_name),
                    states=program.states,
                    timeout_seconds=program.timeout_seconds,
                    comment=program.comment,
                    version=program.version,
                )
            program.eval(env)
            internals.report_terminated(self)

    _worker_classes.append(RedriveWorker)
    return RedriveWorker


# ---------------------------------------------------------------------------------------------- recording


def _record_progress() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        CommonStateField,
        ContinueWithEnd,
        ExecutionWorker,
    )

    @hooks.around(ExecutionWorker, "_get_evaluation_environment", concern="redrive")
    def evaluation_environment(
        proceed: Callable[[sfn.ExecutionRun], sfn.ProgramEnvironment], self: sfn.ExecutionRun
    ) -> sfn.ProgramEnvironment:
        env = proceed(self)
        # A redriven attempt's worker registers its own (carried) progress over this one.
        _track_progress(env, ExecutionProgress())
        env.states.context_object.context_object_data["Execution"]["RedriveCount"] = 0
        return env

    # ``eval``, not ``_eval_body``: several state classes carry ``_eval_body`` listeners of their own.
    @hooks.around(CommonStateField, "eval", concern="redrive")
    def eval_recorded(
        proceed: sfn.Evaluation, self: sfn.StateDeclaration, env: sfn.ProgramEnvironment
    ) -> None:
        if not env.is_frame() and env.is_running():
            progress = _progress_of(env)
            if progress is not None:
                progress.entered(self.name, env.states.get_input(), copy.deepcopy(env.variable_store))
        proceed(self, env)

    @hooks.around(CommonStateField, "_set_next", concern="redrive")
    def set_next_marking_the_end(
        proceed: sfn.Evaluation, self: sfn.StateDeclaration, env: sfn.ProgramEnvironment
    ) -> None:
        # moto also ends an iteration's program when its Map fails or times out (the frame is "ended", and
        # the iteration reported succeeded with whatever its state held): only an End state ends it for real.
        ending = isinstance(self.continue_with, ContinueWithEnd) and env.next_state_name == self.name
        proceed(self, env)
        if ending:
            _endings.of(env).reached_end = True


def _reached_end(env: sfn.ProgramEnvironment) -> bool:
    ending = _endings.get(env)
    return ending is not None and ending.reached_end


@cache
def _redrivable_job_pool() -> type:
    from sam_local_cloud.moto_seam.stepfunctions import job

    class RedrivableJobPool(job.JobPool):
        """A Map's job pool whose already-successful iterations start closed, with their outputs."""

        def __init__(self, job_program: Any, job_inputs: list[object]) -> None:  # moto's Program
            super().__init__(job_program=job_program, job_inputs=job_inputs)
            run = _current_map_run.get()
            self.successes: dict[int, object] | None = run.successes if run is not None else None
            if run is None or not run.carried:
                return
            carried = {index: output for index, output in run.carried.items() if index < len(job_inputs)}
            internals.close_carried_jobs(self, carried)

    return RedrivableJobPool


def _skip_succeeded_iterations() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ProgramEnded,
        distributed_item_processor_worker,
        distributed_iteration_component,
        distributed_iterator_worker,
        inline_iteration_component,
        iteration_worker,
    )

    for component_module in (inline_iteration_component, distributed_iteration_component):
        hooks.replace(component_module, "JobPool", _redrivable_job_pool(), concern="redrive")

    def eval_job_recorded(
        proceed: sfn.JobEvaluation, self: object, env: sfn.ProgramEnvironment, job: sfn.MapJob
    ) -> None:
        proceed(self, env, job)
        successes = getattr(internals.job_pool_of(self), "successes", None)
        if successes is not None and _reached_end(env) and isinstance(env.program_state(), ProgramEnded):
            successes[job.job_index] = job.job_output

    for worker_class in (
        iteration_worker.IterationWorker,
        distributed_item_processor_worker.DistributedItemProcessorWorker,
        distributed_iterator_worker.DistributedIteratorWorker,
    ):
        hooks.around(worker_class, "_eval_job", concern="redrive")(eval_job_recorded)

    @hooks.around(inline_iteration_component.InlineIterationComponent, "_eval_body", concern="redrive")
    def inline_eval_body(proceed: sfn.Evaluation, self: object, env: sfn.ProgramEnvironment) -> None:
        progress = _progress_of(env)
        current = _current_map_run.set(progress.start_map(env.stack[-1].state_name) if progress else None)
        try:
            proceed(self, env)
        finally:
            _current_map_run.reset(current)

    @hooks.around(
        distributed_iteration_component.DistributedIterationComponent, "_eval_body", concern="redrive"
    )
    def distributed_eval_body(proceed: sfn.Evaluation, self: object, env: sfn.ProgramEnvironment) -> None:
        progress = _progress_of(env)
        eval_input = env.stack[-1]
        run = progress.start_map(eval_input.state_name) if progress else None
        if run is not None and progress is not None:
            previous = progress.map_run_record
            if previous is not None and run.resumed:
                _redrive_map_run(env, eval_input, previous)
            progress.map_run_record = eval_input.map_run_record
        current = _current_map_run.set(run)
        try:
            proceed(self, env)
        finally:
            _current_map_run.reset(current)
            _redriven_map_run.set(None)


def _redrive_map_run(
    env: sfn.ProgramEnvironment, eval_input: sfn.MapStateInput, previous: sfn.MapRunRecord
) -> None:
    """The Map Run keeps its ARN: unsuccessful items go back to pending, the run is RUNNING again."""
    from sam_local_cloud.moto_seam.stepfunctions import MapRunStatus

    fresh: sfn.MapRunRecord = eval_input.map_run_record
    internals.forget_map_run(env.map_run_record_pool_manager, fresh.map_run_arn)
    for counter in (previous.item_counter, previous.execution_counter):
        unsuccessful = counter.failed.get() + counter.aborted.get() + counter.timed_out.get()
        counter.total.offset(-unsuccessful)
        for name in ("failed", "aborted", "timed_out", "running", "pending"):
            part = getattr(counter, name)
            part.offset(-part.get())
    previous.status = MapRunStatus.RUNNING
    previous.stop_date = None
    previous.max_concurrency = fresh.max_concurrency
    redrives = _map_run_redrives.of(previous)
    redrives.count += 1
    redrives.date = datetime.now(UTC)
    env.map_run_record_pool_manager.add(previous)
    eval_input.map_run_record = previous
    _redriven_map_run.set(previous)


def _name_redriven_map_runs() -> None:
    """A redriven Map Run logs MapRunRedriven where a new one logs MapRunStarted."""
    from sam_local_cloud.moto_seam.stepfunctions import EventManager, HistoryEventType, map_run_record

    @hooks.around(EventManager, "add_event", concern="redrive")
    def add_event(
        proceed: Callable[..., int],
        self: sfn.HistoryEventManager,
        context: object,
        event_type: str,
        event_details: object = None,
        timestamp: object = None,
        update_source_event_id: bool = True,
    ) -> int:
        if event_type == HistoryEventType.MapRunStarted:
            redriven = _redriven_map_run.get()
            if redriven is not None:
                _redriven_map_run.set(None)
                event_type = HistoryEventType.MapRunRedriven
                event_details = {
                    "mapRunRedrivenEventDetails": {
                        "mapRunArn": redriven.map_run_arn,
                        "redriveCount": map_run_redrives(redriven).count,
                    }
                }
        return proceed(self, context, event_type, event_details, timestamp, update_source_event_id)

    @hooks.around(map_run_record.MapRunRecord, "describe", concern="redrive")
    def describe(
        proceed: Callable[[sfn.MapRunRecord], dict[str, object]], self: sfn.MapRunRecord
    ) -> dict[str, object]:
        described = proceed(self)
        redrives = map_run_redrives(self)
        described["redriveCount"] = redrives.count
        if redrives.date is not None:
            described["redriveDate"] = redrives.date.isoformat()
        return described


def _stopped_stays_stopped() -> None:
    """StopExecution ends an execution ABORTED, and a timeout TIMED_OUT, whatever is still in flight.

    moto lets a later failure overwrite either: an inline Map's iterations, cut short by the stop, fail the
    Map (on the way its error output trips over the stop's details, an AttributeError), and the execution
    ended FAILED, with a States.Runtime error, instead of ABORTED.
    """
    from sam_local_cloud.moto_seam.stepfunctions import Environment, ProgramStopped, ProgramTimedOut

    @hooks.around(Environment, "set_error", concern="redrive")
    def set_error(proceed: Callable[[object, object], None], self: object, error: object) -> None:
        if isinstance(internals.program_state_of(self), ProgramStopped | ProgramTimedOut):
            return
        proceed(self, error)


def _finish_attempts() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import BaseExecutionWorkerCommunication

    @hooks.around(BaseExecutionWorkerCommunication, "terminated", concern="redrive")
    def terminated(proceed: Callable[[object], None], self: sfn.ExecutionCommunication) -> None:
        env: sfn.ProgramEnvironment | None = self.execution.exec_worker.env
        if env is not None:
            # Counted before histories (which runs inside redrive, see register_hooks) moves the history
            # out of the environment.
            redrive_record(self.execution).history_events = len(internals.history_events(env.event_manager))
        proceed(self)
        if env is not None and self.execution.status == "SUCCEEDED":
            _progress.forget(env.event_manager)


# ---------------------------------------------------------------------------------------------- the API


def _answer_redrive_and_its_fields() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ActionResult, StepFunctionResponse

    def redrive(self: sfn.StepFunctionsRequest) -> object:
        from sam_local_cloud.stepfunctions.express import refuse_express_execution_arn

        execution_arn = internals.required_text(self, "executionArn")
        refuse_express_execution_arn(execution_arn)
        redrive_date = redrive_execution(
            self.stepfunction_backend, execution_arn, internals.request_text(self, "clientToken")
        )
        return ActionResult({"redriveDate": redrive_date})

    hooks.add(StepFunctionResponse, "redrive_execution", redrive, concern="redrive")

    @hooks.around(StepFunctionResponse, "describe_execution", concern="redrive")
    def describe_execution(
        proceed: Callable[[sfn.StepFunctionsRequest], Any], self: sfn.StepFunctionsRequest
    ) -> object:
        answer = proceed(self)
        execution = self.stepfunction_backend.describe_execution(
            internals.required_text(self, "executionArn")
        )
        described: dict[str, object] = answer.result
        described.update(redrive_fields(execution))
        # moto leaves the stop date off a timed-out execution; AWS reports it.
        if execution.status == "TIMED_OUT":
            described["stopDate"] = execution.stop_date
        return answer

    @hooks.around(StepFunctionResponse, "list_executions", concern="redrive")
    def list_executions(
        proceed: Callable[[sfn.StepFunctionsRequest], Any], self: sfn.StepFunctionsRequest
    ) -> object:
        answer = proceed(self)
        redrive_filter = internals.request_text(self, "redriveFilter")
        listed: dict[str, list[dict[str, Any]]] = answer.result
        kept = []
        for item in listed["executions"]:
            execution = self.stepfunction_backend.describe_execution(item["executionArn"])
            record = redrive_record(execution)
            if redrive_filter == "REDRIVEN" and record.count == 0:
                continue
            if redrive_filter == "NOT_REDRIVEN" and record.count > 0:
                continue
            item["redriveCount"] = record.count
            if record.date is not None:
                item["redriveDate"] = record.date
            if execution.status == "TIMED_OUT":
                item["stopDate"] = execution.stop_date
            kept.append(item)
        listed["executions"] = kept
        return answer


def register_hooks() -> None:
    # Redrive skips what already succeeded before the Map's and the Distributed Map's own handling runs,
    # and records an execution's end before the history store moves its events out. EXPRESS answers its
    # own executions first (no redrive for them), and a MockConfigFile test case is known before redrive
    # reads the environment.
    hooks.order(
        "redrive",
        outside=("map_state", "distributed_map", "histories", "executions"),
        inside=("express", "mock_config"),
    )
    _stopped_stays_stopped()
    _record_progress()
    _skip_succeeded_iterations()
    _name_redriven_map_runs()
    _finish_attempts()
    _answer_redrive_and_its_fields()
