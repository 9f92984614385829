"""What a finished execution keeps: its description and its history, within a memory budget.

moto keeps a finished execution's whole evaluation environment: its event history (every state's input
and output), its frames, stack and state data. Here, when an execution ends, its history moves to a
``HistoryStore`` and the environment lets go of everything else but what later API calls read (Map Run
records for DescribeMapRun/ListMapRuns, the callback registry for SendTask* calls). The store keeps the
newest histories in memory up to ``max_events_in_memory`` events in all and writes older ones to disk
(gzipped JSON, one file per execution), from where GetExecutionHistory reads them back.

A finished STANDARD execution also keeps its input and output, which DescribeExecution answers with for
as long as AWS keeps the execution (90 days). moto holds both parsed, several times the size of their
JSON: an inline batch of 200 orders kept about 0.4 MiB of dicts and lists. Here they are kept as
compressed compact JSON text instead (``CompactDetails``), a few KiB per batch, and parsed again only for
a redrive, which runs from them.

moto also appends every thread the interpreter starts (one per Task evaluation, Map worker, branch) to a
module-level list that nothing ever reads or empties: about five finished threads per order, kept for
the life of the process. The local cloud gives the interpreter a list that keeps none.
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sam_local_cloud.accounts import HistoryKeeper, parts_for_arn
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import (
    ExecutionCommunication,
    ExecutionRecord,
    HistoryEvent,
)
from sam_local_cloud.moto_seam.records import EngineRecords
from sam_local_cloud.stepfunctions.context_object import millisecond_timestamp

if TYPE_CHECKING:
    from collections.abc import Callable

# About 44 events per order of an inline batch at 1 to 2 KB each (payloads included): 10,000 events keep
# the last one or two batches' histories at hand (about 15 MB) and send the rest to disk, so memory does
# not grow with the executions that have finished.
DEFAULT_MAX_EVENTS_IN_MEMORY = 10_000


class HistoryStore:
    def __init__(self, spill_dir: Path, max_events_in_memory: int = DEFAULT_MAX_EVENTS_IN_MEMORY) -> None:
        self.spill_dir = spill_dir
        self.max_events_in_memory = max_events_in_memory
        self._in_memory: OrderedDict[str, list[HistoryEvent]] = OrderedDict()
        self._events_in_memory = 0
        self._on_disk: dict[str, Path] = {}
        self._lock = threading.Lock()

    def keep(self, execution_arn: str, events: list[HistoryEvent]) -> None:
        with self._lock:
            self._in_memory[execution_arn] = events
            self._events_in_memory += len(events)
            while self._events_in_memory > self.max_events_in_memory and len(self._in_memory) > 1:
                oldest_arn, oldest = self._in_memory.popitem(last=False)
                self._events_in_memory -= len(oldest)
                self._on_disk[oldest_arn] = self._write(oldest_arn, oldest)

    def events(self, execution_arn: str) -> list[HistoryEvent] | None:
        """The history, or None for an execution this store never kept (still running, or not here)."""
        with self._lock:
            if execution_arn in self._in_memory:
                return list(self._in_memory[execution_arn])
            path = self._on_disk.get(execution_arn)
        if path is None:
            return None
        with gzip.open(path, "rt", encoding="utf-8") as spilled:
            events: list[HistoryEvent] = json.load(spilled)
        return events

    def take(self, execution_arn: str) -> list[HistoryEvent] | None:
        """Remove and return a kept history: a redriven execution appends to it and keeps it again."""
        with self._lock:
            events = self._in_memory.pop(execution_arn, None)
            if events is not None:
                self._events_in_memory -= len(events)
                return events
            path = self._on_disk.pop(execution_arn, None)
        if path is None:
            return None
        with gzip.open(path, "rt", encoding="utf-8") as spilled:
            spilled_events: list[HistoryEvent] = json.load(spilled)
        path.unlink(missing_ok=True)
        return spilled_events

    def clear(self) -> None:
        """Forget every kept history, those on disk too."""
        with self._lock:
            spilled = list(self._on_disk.values())
            self._in_memory.clear()
            self._on_disk.clear()
            self._events_in_memory = 0
        for path in spilled:
            path.unlink(missing_ok=True)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "histories_in_memory": len(self._in_memory),
                "events_in_memory": self._events_in_memory,
                "histories_on_disk": len(self._on_disk),
            }

    def _write(self, execution_arn: str, events: list[HistoryEvent]) -> Path:
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        path = self.spill_dir / (hashlib.sha1(execution_arn.encode()).hexdigest() + ".json.gz")
        with gzip.open(path, "wt", encoding="utf-8") as spilled:
            json.dump(events, spilled, default=str)
        return path


@dataclass
class CompactDetails:
    """A finished execution's input (its text as given) and output (compact JSON text), zlib-compressed;
    ``input_text`` is None while the execution holds them itself (running, or redriven)."""

    input_text: bytes | None = None
    output_text: bytes | None = None


_details: EngineRecords[CompactDetails] = EngineRecords(CompactDetails)


def _text(compressed: bytes) -> str:
    return zlib.decompress(compressed).decode()


def compact_details(execution: ExecutionRecord) -> None:
    """Keep a finished STANDARD execution's input and output compressed; Express executions are dropped
    when they end, and StartSyncExecution answers from their parsed values."""
    from sam_local_cloud.moto_seam.stepfunctions import StateMachineType

    if execution.sm_type != StateMachineType.STANDARD or execution.execution_input is None:
        return
    record = _details.of(execution)
    output = execution.output
    # DescribeExecution reads while this runs: ``input_text`` marks the record compacted, so it is set only
    # once the output is there, and the execution's own values are cleared last.
    record.output_text = (
        None if output is None else zlib.compress(json.dumps(output, separators=(",", ":")).encode())
    )
    record.input_text = zlib.compress(str(execution.execution_input).encode())
    execution.execution_input = execution.input_data = execution.output = None


def restore_details(execution: ExecutionRecord) -> None:
    """Parse a compacted execution's input and output back (a redrive runs from them)."""
    record = _details.get(execution)
    if record is None or record.input_text is None:
        return
    execution.execution_input = _text(record.input_text)
    execution.input_data = json.loads(execution.execution_input)
    if record.output_text is not None:
        execution.output = json.loads(_text(record.output_text))
    record.input_text = record.output_text = None


def compacted_texts(execution: object) -> tuple[str, str | None] | None:
    """A compacted execution's input text and output text (None: no output); None if not compacted."""
    record = _details.get(execution)
    if record is None or record.input_text is None:
        return None
    output = _text(record.output_text) if record.output_text is not None else None
    return _text(record.input_text), output


def store_for(execution_arn: str) -> HistoryKeeper | None:
    """Where the cloud of the execution's account keeps finished histories (None: moto keeps everything,
    as it does)."""
    parts = parts_for_arn(execution_arn)
    return parts.history_store if parts is not None else None


class _KeepsNoThreads(list[object]):
    def append(self, thread: object) -> None:
        """LocalStack joins these at shutdown; moto never reads them, so keeping them only leaks."""


def _forget_finished_threads() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import (
        branch_worker,
        execute_state,
        execution_worker,
        inline_iteration_component,
        program,
        state_task_service_callback,
        test_state_program,
        utils,
    )

    replacement = _KeepsNoThreads()
    # Each of these took moto's list by name at import; utils holds the list itself.
    for module in (
        utils,
        program,
        test_state_program,
        inline_iteration_component,
        state_task_service_callback,
        branch_worker,
        execute_state,
        execution_worker,
    ):
        hooks.replace(module, "TMP_THREADS", replacement, concern="histories")
    utils.TMP_THREADS.clear()


# The interpreter writes these, and they take an event ID, but AWS's GetExecutionHistory never lists
# them: a Parallel state's history goes ParallelStateStarted, the branches, then ParallelStateExited, with
# a gap in the IDs where ParallelStateSucceeded was (AWS-recorded histories show the same gap).
_UNLISTED_EVENT_TYPES = frozenset({"ParallelStateSucceeded"})


def event_timestamp(value: datetime.datetime | None = None) -> str:
    """moto's ``iso_8601_datetime_with_milliseconds``, the same text without ``strftime``.

    Every history event is stamped with it while the execution's event lock is held, so its cost is
    paid by every state of every running execution waiting for that lock.
    """
    return millisecond_timestamp(value if value is not None else datetime.datetime.now(datetime.UTC))


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import (
        BaseExecutionWorkerCommunication,
        Execution,
        event_manager,
    )

    _forget_finished_threads()
    hooks.replace(event_manager, "iso_8601_datetime_with_milliseconds", event_timestamp, concern="histories")

    @hooks.around(BaseExecutionWorkerCommunication, "terminated", concern="histories")
    def terminated_and_retired(
        proceed: Callable[[ExecutionCommunication], None], self: ExecutionCommunication
    ) -> None:
        proceed(self)
        store = store_for(self.execution.exec_arn)
        if store is not None:
            _retire(self.execution, store)

    @hooks.around(Execution, "to_describe_output", concern="histories")
    def describe_output(
        proceed: Callable[[ExecutionRecord], dict[str, object]], self: ExecutionRecord
    ) -> dict[str, object]:
        answer = proceed(self)
        texts = compacted_texts(self)
        if texts is not None:
            input_text, output = texts
            answer["input"] = json.dumps(json.loads(input_text), separators=(",", ":"))
            if output is not None and self.exec_status == "SUCCEEDED":
                answer["output"] = output
        return answer

    @hooks.around(Execution, "to_history_output", concern="histories")
    def history_output(
        proceed: Callable[[ExecutionRecord], dict[str, list[HistoryEvent]]], self: ExecutionRecord
    ) -> dict[str, list[HistoryEvent]]:
        store = store_for(self.exec_arn)
        events = store.events(self.exec_arn) if store is not None else None
        if events is None:
            events = proceed(self)["events"]
        return {"events": [event for event in events if event["type"] not in _UNLISTED_EVENT_TYPES]}


def _retire(finished: ExecutionRecord, store: HistoryKeeper) -> None:
    environment = finished.exec_worker.env
    if environment is None:
        return
    events = internals.replace_history_events(environment.event_manager, [])
    store.keep(finished.exec_arn, events)
    # Nothing reads these once the execution has ended; the final output is already on the execution.
    environment.stack.clear()
    environment.heap.clear()
    internals.frames_of(environment).clear()
    environment.states.reset(input_value=None)
    compact_details(finished)
