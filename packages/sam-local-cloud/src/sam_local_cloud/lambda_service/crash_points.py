"""Crash points of a function, enumerated from the AWS calls a real invocation of it made.

A ``record_calls`` fault rule makes the runtime log every AWS call of the invocations it fires on
(``runtime_shim``: one JSON line under ``CALL_LOG_KEY`` per call, in the environment's log). From one
recorded invocation this module lists every point where the runtime can die, each with the ``point`` a
``crash`` rule takes:

- ``before_body``: the invocation reached the runtime, nothing ran;
- ``after_call:N`` for every call N of the sequence, named after the call, e.g.
  "after dynamodb.TransactWriteItems #2 (inventory, reservations)";
- ``before_call:N`` where N is Powertools idempotency's save (the UpdateItem that marks the record
  COMPLETED after the PutItem that made it INPROGRESS): after the body, before the save;
- ``before_response``: the handler returned (after the save), its response not yet sent;
- ``response_lost``: the response was on its way to the Runtime API, and never arrives.

A crash that fired logs one line under ``CRASH_LOG_KEY`` with the call it followed or preceded, so a run
can prove that it crashed where it meant to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sam_local_cloud.runtime_shim import (
    AFTER_CALL,
    BEFORE_BODY,
    BEFORE_CALL,
    BEFORE_RESPONSE,
    CALL_LOG_KEY,
    CHECKPOINT_UPDATES,
    CRASH_LOG_KEY,
    RESPONSE_LOST,
)

# Powertools idempotency's record statuses, as its DynamoDB persistence layer writes them.
RECORD_IN_PROGRESS = "INPROGRESS"
RECORD_COMPLETED = "COMPLETED"
TABLE_OUTPUT_SUFFIX = "TableName"
BUCKET_OUTPUT_SUFFIX = "BucketName"


@dataclass(frozen=True)
class CheckpointOperation:
    """One operation update a durable checkpoint carried: enough to name it in a report."""

    id: str
    action: str
    type: str
    name: str | None = None
    sub_type: str | None = None
    parent_id: str | None = None

    @classmethod
    def from_update(cls, update: Mapping[str, Any]) -> CheckpointOperation:
        return cls(
            id=str(update.get("Id")),
            action=str(update.get("Action")),
            type=str(update.get("Type")),
            name=update.get("Name"),
            sub_type=update.get("SubType"),
            parent_id=update.get("ParentId"),
        )

    @property
    def key(self) -> str:
        return f"{self.id}:{self.action}"


@dataclass(frozen=True)
class RecordedCall:
    """One AWS call of an invocation: where it went and which ``status`` it wrote, never item contents."""

    number: int
    service: str
    operation: str
    tables: tuple[str, ...] = ()
    # The ``status`` a single-item write set; for a transaction, each action's (``writes``).
    status: str | None = None
    writes: tuple[tuple[str, str | None, str | None], ...] = ()
    bucket: str | None = None
    error: str | None = None
    # A durable checkpoint's operation updates, ``<Id>:<Action>`` each, and what names them.
    checkpoint: tuple[str, ...] = ()
    operations: tuple[CheckpointOperation, ...] = ()

    @classmethod
    def from_log(cls, document: Mapping[str, Any]) -> RecordedCall:
        writes = tuple(
            (str(write.get("action")), write.get("table"), write.get("status"))
            for write in document.get("writes") or ()
        )
        return cls(
            number=int(document["number"]),
            service=str(document["service"]),
            operation=str(document["operation"]),
            tables=tuple(document.get("tables") or ()),
            status=document.get("status"),
            writes=writes,
            bucket=document.get("bucket"),
            error=document.get("error"),
            checkpoint=tuple(document.get(CHECKPOINT_UPDATES) or ()),
            operations=tuple(
                CheckpointOperation.from_update(update)
                for update in document.get("operations") or ()
                if isinstance(update, Mapping)
            ),
        )

    @property
    def name(self) -> str:
        return f"{self.service}.{self.operation}"

    def statuses(self) -> tuple[str, ...]:
        written = [self.status] if self.status else [status for _, _, status in self.writes if status]
        return tuple(dict.fromkeys(written))

    def spec(self) -> str:
        """The call as a crash rule's ``call`` names it: ``service.Operation:table+table[!ErrorCode]``."""
        tables = ":" + "+".join(self.tables) if self.tables else ""
        return f"{self.name}{tables}" + (f"!{self.error}" if self.error else "")

    def same_call(self, other: RecordedCall) -> bool:
        """The same operation on the same tables or bucket, writing the same statuses (number aside)."""
        return (self.name, self.tables, self.bucket, self.statuses()) == (
            other.name,
            other.tables,
            other.bucket,
            other.statuses(),
        )


@dataclass(frozen=True)
class ResourceNames:
    """Short names for a stack's tables and buckets (``OrdersTableName`` -> ``orders``), for labels."""

    by_physical_name: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, object]) -> ResourceNames:
        names: dict[str, str] = {}
        for output, value in outputs.items():
            for suffix, kind in ((TABLE_OUTPUT_SUFFIX, ""), (BUCKET_OUTPUT_SUFFIX, " bucket")):
                if output.endswith(suffix) and isinstance(value, str):
                    names[value] = output.removesuffix(suffix).lower() + kind
        return cls(names)

    def short(self, physical_name: str) -> str:
        return self.by_physical_name.get(physical_name, physical_name)


def describe_call(call: RecordedCall, names: ResourceNames, *, numbered: bool = True) -> str:
    """``dynamodb.PutItem #1 (idempotency INPROGRESS)``; without the number when ``numbered`` is False."""
    where = [names.short(table) for table in sorted(call.tables, key=names.short)]
    if call.bucket:
        where.append(names.short(call.bucket))
    details = ", ".join(where)
    statuses = call.statuses()
    if statuses:
        details += " " + "/".join(statuses)
    if call.error:
        details += f", {call.error}"
    number = f" #{call.number}" if numbered else ""
    return f"{call.name}{number}" + (f" ({details})" if details else "")


@dataclass(frozen=True)
class CrashPoint:
    """Where a runtime can die: the ``point`` of a crash rule, a label, and a key stable across runs
    whose call numbers differ (the same call without its number, e.g. with idempotency off)."""

    point: str
    label: str
    key: str


def idempotency_save(calls: Sequence[RecordedCall]) -> RecordedCall | None:
    """Powertools' save: an UpdateItem writing COMPLETED to the table an earlier PutItem wrote INPROGRESS."""
    in_progress_tables: set[tuple[str, ...]] = set()
    for call in calls:
        if call.operation == "PutItem" and call.status == RECORD_IN_PROGRESS:
            in_progress_tables.add(call.tables)
        elif (
            call.operation == "UpdateItem"
            and call.status == RECORD_COMPLETED
            and call.tables in in_progress_tables
        ):
            return call
    return None


def enumerate_crash_points(calls: Sequence[RecordedCall], names: ResourceNames) -> list[CrashPoint]:
    """Every point of one recorded invocation, in the order the runtime passes them."""
    points = [CrashPoint(BEFORE_BODY, "before the body", "before the body")]
    save = idempotency_save(calls)
    seen: dict[str, int] = {}
    for call in calls:
        if save is not None and call.number == save.number:
            before_save = describe_call(save, names)
            points.append(
                CrashPoint(
                    f"{BEFORE_CALL}:{call.number}",
                    f"after the body, before the save, {before_save}",
                    "after the body, before the save",
                )
            )
        unnumbered = describe_call(call, names, numbered=False)
        seen[unnumbered] = seen.get(unnumbered, 0) + 1
        repeat = f" [{seen[unnumbered]}]" if seen[unnumbered] > 1 else ""
        points.append(
            CrashPoint(
                f"{AFTER_CALL}:{call.number}",
                f"after {describe_call(call, names)}",
                f"after {unnumbered}{repeat}",
            )
        )
    points.append(
        CrashPoint(BEFORE_RESPONSE, "after the handler returned, before the response", "before the response")
    )
    points.append(CrashPoint(RESPONSE_LOST, "the response lost on its way", "the response lost"))
    return points


# ------------------------------------------------------------------------------- reading the logs


@dataclass(frozen=True)
class Labels:
    """Whose invocation a log line is from: the function, the order key (``tag``) and the batch."""

    function: str
    tag: str
    batch_id: str | None

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> Labels:
        batch_id = document.get("batch_id")
        return cls(
            str(document.get("function")), str(document.get("tag")), str(batch_id) if batch_id else None
        )

    def matches(self, function: str, *, tag: str | None = None, batch_id: str | None = None) -> bool:
        return (
            self.function == function
            and (tag is None or self.tag == tag)
            and (batch_id is None or self.batch_id == batch_id)
        )


@dataclass(frozen=True)
class RecordedInvocation:
    labels: Labels
    calls: tuple[RecordedCall, ...]


@dataclass(frozen=True)
class CrashRecord:
    """A crash that fired: whose invocation, the point, and the call it followed or preceded."""

    labels: Labels
    point: str
    call: RecordedCall | None


def _log_documents(log_dir: Path, marker: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    if not log_dir.exists():
        return
    needle = f'"{marker}"'
    for path in sorted(log_dir.rglob("*.log")):
        with path.open(errors="replace") as lines:
            for line in lines:
                start = line.find("{")
                if needle not in line or start < 0:
                    continue
                try:
                    document = json.loads(line[start:])
                except ValueError:
                    continue
                if isinstance(document, dict) and marker in document:
                    yield path, document


def recorded_invocations(log_dir: Path) -> list[RecordedInvocation]:
    """Every recorded invocation in the environments' logs (an environment runs one invocation at a
    time, so its calls are in order in its log, and call 1 starts the next invocation)."""
    by_path: dict[Path, list[RecordedInvocation]] = {}
    for path, document in _log_documents(log_dir, CALL_LOG_KEY):
        call = RecordedCall.from_log(document[CALL_LOG_KEY])
        labels = Labels.of(document)
        invocations = by_path.setdefault(path, [])
        last = invocations[-1] if invocations else None
        if last is None or call.number == 1 or last.labels != labels:
            invocations.append(RecordedInvocation(labels, (call,)))
        else:
            invocations[-1] = RecordedInvocation(labels, (*last.calls, call))
    return [invocation for invocations in by_path.values() for invocation in invocations]


def recorded_calls(
    log_dir: Path, function: str, *, tag: str | None = None, batch_id: str | None = None
) -> list[RecordedCall]:
    """The calls of the recorded invocation of ``function`` (for that order key or batch, if given).

    Raises LookupError when there is none, and ValueError when several differ (a recording must come
    from a run without faults, where each step runs once per order).
    """
    found = [
        invocation.calls
        for invocation in recorded_invocations(log_dir)
        if invocation.labels.matches(function, tag=tag, batch_id=batch_id)
    ]
    if not found:
        raise LookupError(f"no recorded invocation of {function} (order key {tag}, batch {batch_id})")
    first = found[0]
    if any(len(calls) != len(first) or not all(map(RecordedCall.same_call, calls, first)) for calls in found):
        raise ValueError(f"the recorded invocations of {function} made different calls")
    return list(first)


def crash_records(log_dir: Path) -> list[CrashRecord]:
    """Every crash that fired, from the environments' logs."""
    records = []
    for _path, document in _log_documents(log_dir, CRASH_LOG_KEY):
        call = document.get("call")
        records.append(
            CrashRecord(
                labels=Labels.of(document),
                point=str(document[CRASH_LOG_KEY]),
                call=RecordedCall.from_log(call) if isinstance(call, dict) else None,
            )
        )
    return records
