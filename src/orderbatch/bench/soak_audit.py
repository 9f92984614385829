"""The soak's audit: each finished batch audited once, at a cost that does not grow with the run.

A batch's records and effects are read by its own order IDs (``audit_batch(by_order=True)``) and the
functions' logs from where the last audit stopped reading (``BodyRunTally``), so the work of one audit
step depends on the batch and on what was logged since the step before, not on how many batches the
tables and logs already hold. ``AuditWork`` counts that work (API calls, items and log lines read), so
a test can show it stays flat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from botocore.client import BaseClient

from orderbatch.audit import AuditReport, BatchLocations, audit_batch
from orderbatch.audit_logs import BodyRunTally, LogTail


@dataclass
class AuditWork:
    """What audits read: requests made, items the answers held, log lines and bytes read."""

    api_calls: int = 0
    items_read: int = 0
    log_lines_read: int = 0
    log_bytes_read: int = 0

    def minus(self, earlier: AuditWork) -> AuditWork:
        return AuditWork(**{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)})


ClientT = TypeVar("ClientT", bound=BaseClient)


class _RequestCounter:
    """Counts the requests a client makes and the items its answers carry (botocore's event hooks)."""

    def __init__(self) -> None:
        self.calls = 0
        self.items = 0

    def watch(self, client: ClientT) -> ClientT:
        client.meta.events.register("before-call", self._before_call)
        client.meta.events.register("after-call", self._after_call)
        return client

    def _before_call(self, **_kwargs: object) -> None:
        self.calls += 1

    def _after_call(self, parsed: object = None, **_kwargs: object) -> None:
        if not isinstance(parsed, dict):
            return
        self.items += len(parsed.get("Items") or ())
        self.items += sum(len(items) for items in (parsed.get("Responses") or {}).values())


class IncrementalAuditor:
    """Audits one finished batch at a time, keeping only what batches still in flight need."""

    def __init__(self, locations: BatchLocations, client: Callable[[str], Any], log_dir: Path | None) -> None:
        self.locations = locations
        self._requests = _RequestCounter()
        # Clients of its own, so that only the audit's requests are counted.
        self._stepfunctions = self._requests.watch(client("stepfunctions"))
        self._dynamodb = self._requests.watch(client("dynamodb"))
        self._s3 = self._requests.watch(client("s3"))
        self._tally = BodyRunTally(LogTail(log_dir)) if log_dir is not None else None
        self.audits = 0
        self.last_step = AuditWork()

    @property
    def work(self) -> AuditWork:
        """Everything the audits have read so far."""
        tail = self._tally.tail if self._tally is not None else None
        return AuditWork(
            api_calls=self._requests.calls,
            items_read=self._requests.items,
            log_lines_read=tail.lines_read if tail is not None else 0,
            log_bytes_read=tail.bytes_read if tail is not None else 0,
        )

    @property
    def pending_body_runs(self) -> int:
        """(step, order) counts held for orders not audited yet."""
        return len(self._tally.pending) if self._tally is not None else 0

    def audit(self, batch_id: str) -> AuditReport:
        before = self.work
        body_runs = self._tally.update() if self._tally is not None else None
        report = audit_batch(
            batch_id,
            self.locations,
            stepfunctions=self._stepfunctions,
            dynamodb=self._dynamodb,
            s3=self._s3,
            body_runs=body_runs,
            by_order=True,
        )
        if self._tally is not None:
            self._tally.forget(order.order_id for order in report.orders if order.order_id)
        self.audits += 1
        self.last_step = self.work.minus(before)
        return report
