"""Reading the functions' logs for the audit: how often each step's body ran per order, read whole or
incrementally (``LogTail``/``BodyRunTally``, so a soak's audit does not re-read what it already read)."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from orderbatch.audit import BODY_RAN_MESSAGE, STEP_FINISHED_MESSAGE


def body_runs_from_logs(log_dir: Path) -> dict[tuple[str, str], int]:
    """Counts `task body ran` lines per (step, order_id) in the execution environments' logs."""
    return log_lines_per_order(log_dir, BODY_RAN_MESSAGE)


def step_invocations_from_logs(log_dir: Path) -> dict[tuple[str, str], int]:
    """Counts `order step finished` lines per (step, order_id): each invocation that finished, replays
    (an idempotent step answering from its record) included, so a child workflow run twice shows as 2."""
    return log_lines_per_order(log_dir, STEP_FINISHED_MESSAGE)


def log_lines_per_order(log_dir: Path, message: str) -> dict[tuple[str, str], int]:
    """Counts the structured log lines with this message per (step, order_id) in the functions' logs."""
    runs: dict[tuple[str, str], int] = defaultdict(int)
    if not log_dir.exists():
        return runs
    for path in log_dir.rglob("*.log"):
        with path.open(errors="replace") as lines:
            for line in lines:
                key = _step_and_order(line, message)
                if key is not None:
                    runs[key] += 1
    return runs


def _step_and_order(line: str, message: str) -> tuple[str, str] | None:
    """(step, order_id) of a structured log line with this message, None for any other line."""
    if message not in line:
        return None
    start = line.find("{")
    try:
        record = json.loads(line[start:])
    except (ValueError, json.JSONDecodeError):
        return None
    if not isinstance(record, dict) or record.get("message") != message or not record.get("order_id"):
        return None
    return str(record.get("step")), str(record["order_id"])


@dataclass
class LogTail:
    """The functions' log files read from where the last read stopped: every line is read once.

    Environments append to their own file, a line at a time; a line not yet ended by a newline is left
    for the next read. What one read costs is what was written since the one before (plus listing the
    files), not the logs' whole length.
    """

    log_dir: Path
    offsets: dict[Path, int] = field(default_factory=dict)
    lines_read: int = 0
    bytes_read: int = 0

    def new_lines(self, containing: str | None = None) -> Iterator[str]:
        """The complete lines written since the last read (only those ``containing`` the text, if given:
        the rest are counted but not decoded, which matters for logs that record every AWS call)."""
        marker = containing.encode() if containing is not None else None
        if not self.log_dir.exists():
            return
        for path in sorted(self.log_dir.rglob("*.log")):
            offset = self.offsets.get(path, 0)
            try:
                if path.stat().st_size <= offset:
                    continue
                with path.open("rb") as log:
                    log.seek(offset)
                    chunk = log.read()
            except FileNotFoundError:
                self.offsets.pop(path, None)
                continue
            complete = chunk.rfind(b"\n") + 1
            self.offsets[path] = offset + complete
            self.bytes_read += complete
            self.lines_read += chunk.count(b"\n", 0, complete)
            for line in chunk[:complete].splitlines():
                if marker is None or marker in line:
                    yield line.decode(errors="replace")


@dataclass
class BodyRunTally:
    """Body runs per (step, order_id) counted from the logs as they grow, for orders not audited yet.

    ``update`` reads the lines written since the last update; ``forget`` drops a batch's orders once it
    is audited (lines of the last ``remembered_batches`` audited batches that still arrive, from
    invocations that outlived their execution, are dropped instead of held), so what the tally holds
    is bounded by the batches in flight.
    """

    tail: LogTail
    message: str = BODY_RAN_MESSAGE
    remembered_batches: int = 16
    pending: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    audited: deque[frozenset[str]] = field(default_factory=deque)

    def update(self) -> Mapping[tuple[str, str], int]:
        for line in self.tail.new_lines(containing=self.message):
            key = _step_and_order(line, self.message)
            if key is not None and not any(key[1] in orders for orders in self.audited):
                self.pending[key] += 1
        return self.pending

    def forget(self, order_ids: Iterable[str]) -> None:
        orders = frozenset(order_ids)
        for key in [key for key in self.pending if key[1] in orders]:
            del self.pending[key]
        self.audited.append(orders)
        while len(self.audited) > self.remembered_batches:
            self.audited.popleft()
