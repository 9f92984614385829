"""The Distributed Map's data plane as AWS documents it: reading, batching, judging failures, writing.

moto's interpreter runs a Distributed Map's children; this module gives it what ``definition_support`` kept
from the definition and what moto does not do:

- ``ItemReader``: the items ``item_reader`` reads from S3, each limited by ``MaxItems(Path)``; an
  unreadable source fails the Map with ``States.ItemReaderFailed``;
- ``ItemBatcher``: ``ItemSelector`` applied to each item, then items grouped by ``MaxItemsPerBatch(Path)``
  and ``MaxInputBytesPerBatch(Path)``; each child gets ``{"BatchInput": ..., "Items": [...]}``;
- failures: moto counted a failed child and went on. Here a failed child's error and cause are kept, and
  the Map fails with ``States.ExceedToleratedFailureThreshold`` when more children failed than
  ``ToleratedFailureCount``/``ToleratedFailurePercentage`` (only the declared ones; none declared: none
  tolerated) allow;
- ``ExecutionType: EXPRESS`` children run as moto runs any child, each stopped with ``States.Timeout`` past
  Express's five minutes; Express is at-least-once, and a child the ``duplicate_children_by`` decider picks
  (the ``duplicate_execution`` fault) runs a second time with the same input, alongside the first or after
  it; the Map keeps the first run's outcome and DescribeMapRun counts the item once;
- ``ResultWriter``: the result files (SUCCEEDED_n, FAILED_n) and the manifest in AWS's format, with
  ``WriterConfig`` ``Transformation`` NONE/COMPACT/FLATTEN and ``OutputType`` JSON/JSONL; a ``WriterConfig``
  alone makes the transformed results the state's result. moto wrote an empty manifest.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, cast

from sam_local_cloud.accounts import parts_for_arn
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import (
    Evaluation,
    JobEvaluation,
    MapJob,
    MapRunRecord,
    ProgramEnvironment,
)
from sam_local_cloud.moto_seam.records import EngineRecords
from sam_local_cloud.stepfunctions.definition_support import (
    ItemBatcher,
    MapSupport,
    WriterConfig,
    support_of,
)
from sam_local_cloud.stepfunctions.item_reader import ItemReaderFailedError, read_items
from sam_local_cloud.stepfunctions.shared_inputs import share_map_input

if TYPE_CHECKING:
    from collections.abc import Callable

    from mypy_boto3_s3 import S3Client

RESULTS_PER_FILE = 1000
# AWS ends an Express execution after five minutes; a Distributed Map's Express child is one.
EXPRESS_CHILD_TIME_LIMIT_SECONDS = 300.0
EXCEEDED_CAUSE = "The specified tolerated failure threshold was exceeded"
EXPRESS_TIMEOUT_CAUSE = "The Express child execution ran past its five-minute limit."
_CONCERN = "distributed_map"
_LOG = logging.getLogger(__name__)

# Whether an EXPRESS child runs twice is the cloud's to say (``CloudParts.duplicate_decider``, set from its
# fault plan): (state machine name, a function giving the child's input) -> None for once, else whether the
# second run overlaps the first. It asks for the input (the item through ItemSelector, as the child gets
# it) only if it needs it.


def register_hooks() -> None:
    _read_items_as_documented()
    _run_children_with_batches_and_tolerance()
    _keep_each_child_outcome()
    _write_results_as_documented()


@dataclass
class ChildOutcome:
    index: int
    input: object
    succeeded: bool
    output: object = None
    error: str | None = None
    cause: str | None = None
    started: str = ""
    stopped: str = ""
    # How many items the child processed: its batch's size, else 1.
    items: int = 1


@dataclass
class MapRun:
    """One Map Run as this module sees it: its support and each child's outcome, by item (or batch) index."""

    support: MapSupport | None = None
    outcomes: dict[int, ChildOutcome] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


# By moto's Map Run record (``map_run_record``), which every child's worker holds.
_runs: EngineRecords[MapRun] = EngineRecords(MapRun)


# --- ItemReader ----------------------------------------------------------------------------------------


def _read_items_as_documented() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ItemReader, StateCredentials

    @hooks.around(ItemReader, "_eval_body", concern=_CONCERN)
    def eval_body(proceed: Evaluation, self: Any, env: ProgramEnvironment) -> None:  # moto's ItemReader
        support = support_of(self)
        if support is None or support.reader_config is None or self.reader_config is None:
            proceed(self, env)
            return
        # moto's reader configuration carries MaxItems(Path), evaluated (and checked) as moto does.
        self.reader_config.eval(env=env)
        max_items = env.stack.pop()["MaxItemsValue"]
        if self.parargs:
            self.parargs.eval(env=env)
        else:
            env.stack.append({})
        parameters = env.stack.pop()
        self.resource.eval(env=env)
        resource_runtime_part = env.stack.pop()
        s3 = internals.s3_client_of(
            self.resource_eval,
            resource_runtime_part=resource_runtime_part,
            state_credentials=StateCredentials(role_arn=env.aws_execution_details.role_arn),
        )
        try:
            items = read_items(s3, self.resource.api_action, parameters, support.reader_config, max_items)
        except ItemReaderFailedError as failed:
            _raise_failure(env, "StatesItemReaderFailed", str(failed))
        env.stack.append(items)


def _run_children_with_batches_and_tolerance() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import DistributedIterationComponent

    @hooks.around(DistributedIterationComponent, "_map_run", concern=_CONCERN)
    def map_run(
        proceed: Callable[[object, ProgramEnvironment, object], None],
        self: object,
        env: ProgramEnvironment,
        eval_input: Any,  # moto's Map input: copied and changed as moto's own
    ) -> None:
        support = support_of(self)
        _runs.forget(eval_input.map_run_record)
        run = _runs.of(eval_input.map_run_record)
        run.support = support
        if support is not None and support.item_batcher is not None:
            items = env.stack.pop()
            selected = _selected_items(env, eval_input, items)
            env.stack.append(_batches(env, support.item_batcher, selected))
            # The children get batches whose items were selected already.
            eval_input = copy.copy(eval_input)
            eval_input.item_selector = None
            eval_input.parameters = None
        child_inputs = env.stack[-1]
        proceed(self, env, eval_input)
        # moto's outputs, one per closed job: a failed child's is None, indistinguishable from a null
        # output, so a child that ran is judged by its outcome. A job closed without running (a redriven
        # Map Run keeps its succeeded children) succeeded with the output it had.
        outputs = env.stack.pop()
        kept: set[int] = set()
        with run.lock:
            for index, output in enumerate(outputs):
                if index not in run.outcomes:
                    child_input = child_inputs[index] if index < len(child_inputs) else None
                    run.outcomes[index] = ChildOutcome(index, child_input, succeeded=True, output=output)
                    kept.add(index)
            outcomes = [run.outcomes[index] for index in sorted(run.outcomes)]
        batched = support is not None and support.item_batcher is not None
        for outcome in outcomes:
            outcome.items = len(child_inputs[outcome.index]["Items"]) if batched else 1
        if batched:
            _count_items_not_batches(eval_input.map_run_record, outcomes, ran=set(run.outcomes) - kept)
        if _tolerance_exceeded(support, eval_input, outcomes):
            _release_outcomes(run)
            _raise_failure(env, "StatesExceedToleratedFailureThreshold", EXCEEDED_CAUSE)
        env.stack.append(_state_result(support, outcomes, eval_input.map_run_record.map_run_arn))
        if support is not None and not support.writes_results_to_s3:
            _release_outcomes(run)


def _release_outcomes(run: MapRun) -> None:
    """Drops every child's input and output once the Map has its result (and wrote it, if it writes it).

    moto keeps a Map Run's record as long as its execution, and this module's record lives as long: kept,
    the outcomes held every child's input and output for the process's life (a soak's S3 batches grew the
    local cloud with every batch). What DescribeMapRun reads are the counts on moto's record.
    """
    with run.lock:
        run.outcomes.clear()


def child_outcomes_held() -> int:
    """The children's outcomes the engine still holds, over every Map Run alive: 0 once all have ended."""
    return sum(len(run.outcomes) for run in _runs.records())


def _selected_items(env: ProgramEnvironment, eval_input: Any, items: list[object]) -> list[object]:
    """Each item through ``ItemSelector`` (or ``Parameters``) as a child would apply it, before batching."""
    selector = eval_input.item_selector or eval_input.parameters
    if selector is None:
        return items
    from sam_local_cloud.moto_seam.stepfunctions import ItemData, MapData

    map_state_input = env.stack[-1]
    frame = env.open_inner_frame()
    try:
        selected = []
        for index, item in enumerate(items):
            frame.states.context_object.context_object_data["Map"] = MapData(
                Item=ItemData(Index=index, Value=item)
            )
            share_map_input(frame.states, map_state_input)
            frame.stack.append(map_state_input)
            selector.eval(frame)
            selected.append(frame.stack.pop())
        return selected
    finally:
        env.delete_frame(frame)


def _batches(env: ProgramEnvironment, batcher: ItemBatcher, items: list[object]) -> list[dict[str, object]]:
    max_items = _batcher_limit(env, batcher.max_items_per_batch, batcher.max_items_per_batch_path)
    max_bytes = _batcher_limit(env, batcher.max_input_bytes_per_batch, batcher.max_input_bytes_per_batch_path)
    batch_input = _resolved_template(batcher.batch_input, env) if batcher.batch_input is not None else None

    def child_input(batch: list[object]) -> dict[str, object]:
        return {"BatchInput": batch_input, "Items": batch} if batch_input is not None else {"Items": batch}

    batches: list[dict[str, object]] = []
    current: list[object] = []
    for item in items:
        candidate = [*current, item]
        too_many = max_items is not None and len(candidate) > max_items
        too_big = max_bytes is not None and _size(child_input(candidate)) > max_bytes
        if current and (too_many or too_big):
            batches.append(child_input(current))
            candidate = [item]
        current = candidate
    if current:
        batches.append(child_input(current))
    return batches


def _batcher_limit(env: ProgramEnvironment, value: int | None, path: str | None) -> int | None:
    if path is None:
        return value
    resolved = _value_at(path, env)
    if isinstance(resolved, bool) or not isinstance(resolved, int) or resolved < 1:
        _raise_failure(
            env,
            "StatesRuntime",
            f"The {path} field refers to value {json.dumps(resolved)} which is not a valid positive integer",
        )
    return int(resolved)


def _size(value: object) -> int:
    return len(_compact(value).encode())


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _resolved_template(template: object, env: ProgramEnvironment) -> object:
    """A payload template (``"name.$": "$.path"``) resolved against the state's input and context."""
    if isinstance(template, dict):
        resolved = {}
        for key, value in template.items():
            if key.endswith(".$") and isinstance(value, str):
                resolved[key[:-2]] = _value_at(value, env)
            else:
                resolved[key] = _resolved_template(value, env)
        return resolved
    if isinstance(template, list):
        return [_resolved_template(value, env) for value in template]
    return template


def _value_at(path: str, env: ProgramEnvironment) -> object:
    from sam_local_cloud.moto_seam.stepfunctions import extract_json

    try:
        if path.startswith("$$"):
            return extract_json(path[1:], env.states.context_object.context_object_data)
        return extract_json(path, env.states.get_input())
    except Exception as error:
        _raise_failure(env, "StatesRuntime", f"Invalid path '{path}': {error}")


def _tolerance_exceeded(support: MapSupport | None, eval_input: Any, outcomes: list[ChildOutcome]) -> bool:
    """Whether more items failed than tolerated; every item of a failed child's batch counts as failed."""
    failed = sum(outcome.items for outcome in outcomes if not outcome.succeeded)
    if failed == 0:
        return False
    count_declared = support is None or support.tolerated_failure_count_declared
    percentage_declared = support is not None and support.tolerated_failure_percentage_declared
    if not count_declared and not percentage_declared:
        return True
    if count_declared and failed > eval_input.tolerated_failure_count:
        return True
    total = sum(outcome.items for outcome in outcomes)
    return percentage_declared and failed * 100.0 / total > eval_input.tolerated_failure_percentage


def _count_items_not_batches(record: MapRunRecord, outcomes: list[ChildOutcome], ran: set[int]) -> None:
    """moto counts one item per child; with batches DescribeMapRun's itemCounts count the batches' items."""
    counter = record.item_counter
    for outcome in outcomes:
        if outcome.index not in ran:
            continue
        more = outcome.items - 1
        counter.total.count(more)
        if outcome.succeeded:
            counter.succeeded.count(more)
            counter.results_written.count(more)
        else:
            counter.failed.count(more)


def _keep_each_child_outcome() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        DistributedItemProcessorWorker,
        DistributedIteratorWorker,
    )

    for worker in (DistributedItemProcessorWorker, DistributedIteratorWorker):
        hooks.around(worker, "_eval_job", concern=_CONCERN)(_eval_job_keeping_outcome)


def _eval_job_keeping_outcome(
    proceed: JobEvaluation, self: object, env: ProgramEnvironment, job: MapJob
) -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ProgramEnded, ProgramError

    record = internals.map_run_record_of(self)
    run = _runs.get(record)
    express = run is not None and run.support is not None and run.support.express_children
    overlap = _duplicate_overlap(self, job) if express else None
    twin: threading.Thread | None = None
    if overlap is True:
        twin = threading.Thread(
            target=_run_twin, args=(proceed, self, job), name="sfn-duplicate-child", daemon=True
        )
        twin.start()
    started = _now()
    _run_child(proceed, self, env, job, express=express)
    stopped = _now()
    if overlap is False:
        _run_twin(proceed, self, job)
    elif twin is not None:
        twin.join()
    if run is None:
        return
    state = env.program_state()
    outcome = ChildOutcome(index=job.job_index, input=job.job_input, succeeded=False, started=started)
    if isinstance(state, ProgramEnded):
        outcome.succeeded = True
        outcome.output = job.job_output
    else:
        if isinstance(state, ProgramError) and state.error:
            outcome.error = state.error.get("error")
            outcome.cause = state.error.get("cause")
        else:
            outcome.error = "States.Runtime"
        # moto stops counting a child as running only when it succeeds.
        record.execution_counter.running.offset(-1)
    outcome.stopped = stopped
    with run.lock:
        run.outcomes[job.job_index] = outcome


def _run_child(
    proceed: JobEvaluation, worker: object, env: ProgramEnvironment, job: MapJob, *, express: bool
) -> None:
    timer = None
    if express:
        timer = threading.Timer(EXPRESS_CHILD_TIME_LIMIT_SECONDS, _time_out, args=(env,))
        timer.daemon = True
        timer.start()
    try:
        proceed(worker, env, job)
    finally:
        if timer is not None:
            timer.cancel()


def _duplicate_overlap(worker: object, job: MapJob) -> bool | None:
    # arn:aws:states:<region>:<account>:mapRun:<state machine name>/<Map label>:<id>
    map_run_arn = internals.map_run_record_of(worker).map_run_arn
    parts = parts_for_arn(map_run_arn)
    decider = parts.duplicate_decider if parts is not None else None
    if decider is None:
        return None
    state_machine_name = map_run_arn.split(":")[6].split("/")[0]
    return decider(state_machine_name, lambda: _child_input(worker, job))


def _child_input(worker: object, job: MapJob) -> object:
    """The child execution's input: the item through ``ItemSelector`` (or ``Parameters``), as the worker
    evaluates it when the child starts, in a scratch frame."""
    from sam_local_cloud.moto_seam.stepfunctions import ItemData, MapData

    worker_env = internals.worker_environment(worker)
    frame = worker_env.open_inner_frame()
    try:
        frame.states.context_object.context_object_data["Map"] = MapData(
            Item=ItemData(Index=job.job_index, Value=job.job_input)
        )
        frame.states.reset(job.job_input)
        frame.stack.append(frame.states.get_input())
        internals.eval_item_input(worker, frame)
        return frame.states.get_input()
    except Exception:  # a selector that fails here fails the child itself; decide on the item
        return job.job_input
    finally:
        worker_env.delete_frame(frame)


def _run_twin(proceed: JobEvaluation, worker: object, job: MapJob) -> None:
    """A second execution of the child: the same program and input, a frame of its own, its own time limit.

    It counts nothing in the Map Run (DescribeMapRun counts each item once) and its outcome is dropped:
    the Map collects one result per child, the first run's.
    """
    from sam_local_cloud.moto_seam.stepfunctions import job as job_module

    twin_worker = copy.copy(worker)
    internals.set_map_run_record(twin_worker, _UNCOUNTED)
    twin_job = job_module.Job(
        job_index=job.job_index, job_program=job.job_program, job_input=copy.deepcopy(job.job_input)
    )
    worker_env = internals.worker_environment(worker)
    frame = worker_env.open_inner_frame()
    try:
        _run_child(proceed, twin_worker, frame, twin_job, express=True)
    except Exception:  # the twin's failure is its own; the first run's outcome is the child's
        _LOG.exception("duplicate run of Map child %s failed", job.job_index)
    finally:
        worker_env.delete_frame(frame)


class _UncountedCounters:
    """Takes the Map Run counters' calls (``item_counter.total.count()``...) and counts nothing."""

    def __getattr__(self, name: str) -> _UncountedCounters:
        return self

    def count(self, increment: int = 1) -> None:
        return None

    def offset(self, offset: int) -> None:
        return None


_UNCOUNTED = _UncountedCounters()


def _time_out(env: ProgramEnvironment) -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionFailedEventDetails

    if env.is_running():
        env.set_error(ExecutionFailedEventDetails(error="States.Timeout", cause=EXPRESS_TIMEOUT_CAUSE))


def _now() -> str:
    return datetime.now(UTC).isoformat()


# --- Results: the state's result, the ResultWriter's files ---------------------------------------------


def _state_result(support: MapSupport | None, outcomes: list[ChildOutcome], map_run_arn: str) -> list[Any]:
    """The Map's result before a ResultWriter writes it (it writes from the run's outcomes)."""
    writer = support.writer_config if support is not None else None
    transformation = writer.transformation if writer is not None and not writer.writes_to_s3 else "COMPACT"
    return _transformed(outcomes, transformation, map_run_arn)


def _transformed(outcomes: list[ChildOutcome], transformation: str, map_run_arn: str) -> list[Any]:
    results: list[Any] = []
    for outcome in outcomes:
        if transformation == "NONE" or not outcome.succeeded:
            # A failed child is written in full whatever the transformation, as AWS documents for FLATTEN.
            results.append(_execution_entry(outcome, map_run_arn))
        elif transformation == "FLATTEN" and isinstance(outcome.output, list):
            results.extend(outcome.output)
        else:
            results.append(outcome.output)
    return results


def _execution_entry(outcome: ChildOutcome, map_run_arn: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ExecutionArn": f"{map_run_arn}:{outcome.index}",
        "Input": _compact(outcome.input),
        "InputDetails": {"Included": True},
        "Name": str(outcome.index),
        "Status": "SUCCEEDED" if outcome.succeeded else "FAILED",
        "StartDate": outcome.started,
        "StopDate": outcome.stopped,
    }
    if outcome.succeeded:
        entry["Output"] = _compact(outcome.output)
        entry["OutputDetails"] = {"Included": True}
    else:
        entry["Error"] = outcome.error
        entry["Cause"] = outcome.cause
    return entry


def _write_results_as_documented() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import result_writer_resource_eval_s3

    writer_resource = result_writer_resource_eval_s3.ResourceEvalS3

    def handle_put_object(
        env: ProgramEnvironment, resource_runtime_part: object, state_credentials: object
    ) -> None:
        parameters = env.stack.pop()
        results = env.stack.pop()
        record = env.map_run_record_pool_manager.get_all().pop()
        run = _runs.get(record)
        outcomes = (
            [run.outcomes[index] for index in sorted(run.outcomes)]
            if run is not None
            else [
                ChildOutcome(index=index, input=None, succeeded=True, output=result)
                for index, result in enumerate(results)
            ]
        )
        writer = run.support.writer_config if run is not None and run.support is not None else None
        try:
            s3 = internals.s3_client_of(
                writer_resource,
                resource_runtime_part=resource_runtime_part,
                state_credentials=state_credentials,
            )
            manifest = write_results(s3, parameters, record.map_run_arn, outcomes, writer)
        except Exception as error:  # S3 refused: AWS names it the writer's failure
            _raise_failure(env, "StatesResultWriterFailed", str(error))
        finally:
            if run is not None:
                _release_outcomes(run)
        env.stack.append(
            {
                "MapRunArn": record.map_run_arn,
                "ResultWriterDetails": {"Bucket": parameters["Bucket"], "Key": manifest},
            }
        )

    hooks.replace(writer_resource, "_handle_put_object", staticmethod(handle_put_object), concern=_CONCERN)


def write_results(
    s3: S3Client,
    parameters: dict[str, Any],
    map_run_arn: str,
    outcomes: list[ChildOutcome],
    writer: WriterConfig | None,
) -> str:
    """Writes the result files and the manifest AWS writes; returns the manifest's key."""
    bucket = parameters["Bucket"]
    prefix = str(parameters.get("Prefix", ""))
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    folder = prefix + map_run_arn.split(":")[-1] + "/"
    transformation = writer.transformation if writer is not None else "NONE"
    output_type = writer.output_type if writer is not None else "JSON"
    files: dict[str, list[dict[str, Any]]] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
    for status, succeeded in (("SUCCEEDED", True), ("FAILED", False)):
        entries = _transformed(
            [outcome for outcome in outcomes if outcome.succeeded is succeeded], transformation, map_run_arn
        )
        for number, start in enumerate(range(0, len(entries), RESULTS_PER_FILE)):
            chunk = entries[start : start + RESULTS_PER_FILE]
            if output_type == "JSONL":
                body = "".join(json.dumps(entry) + "\n" for entry in chunk).encode()
                key = f"{folder}{status}_{number}.jsonl"
            else:
                body = json.dumps(chunk).encode()
                key = f"{folder}{status}_{number}.json"
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            files[status].append({"Key": key, "Size": len(body)})
    manifest = {"DestinationBucket": bucket, "MapRunArn": map_run_arn, "ResultFiles": files}
    manifest_key = folder + "manifest.json"
    s3.put_object(Bucket=bucket, Key=manifest_key, Body=json.dumps(manifest).encode())
    return manifest_key


# --- Failing the Map -----------------------------------------------------------------------------------


def _raise_failure(env: Any, error_type: str, cause: str) -> NoReturn:  # moto's Environment, for FailureEvent
    from sam_local_cloud.moto_seam.stepfunctions import (
        EventDetails,
        FailureEvent,
        FailureEventException,
        HistoryEventType,
        MapRunFailedEventDetails,
        StatesErrorName,
        StatesErrorNameType,
    )

    error_name = StatesErrorName(typ=getattr(StatesErrorNameType, error_type))
    raise FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=error_name,
            event_type=HistoryEventType.TaskFailed,
            event_details=cast(
                EventDetails,
                {
                    "mapRunFailedEventDetails": MapRunFailedEventDetails(
                        error=error_name.error_name, cause=cause
                    )
                },
            ),
        )
    )
