"""Reconcile a batch whose execution ended before its orders did: stopped, failed or timed out.

An order whose Map iteration was cut short can hold reserved stock or a charge with no final status.
Reconcile walks every order of the batch's input and finishes each one with the steps the state machine
itself uses (order_processing.steps), so every write is keyed or conditional:

- charged and every line reserved, record still RECEIVED: confirmed (``COMPLETED``);
- anything short of that: recorded FAILED with code RECONCILED, stock released, charge refunded
  (``COMPENSATED``); an invalid order nobody recorded yet is recorded REJECTED, as validation would;
- already SUCCEEDED, or FAILED/REJECTED with nothing left standing: ``ALREADY_FINAL``;
- FAILED/REJECTED but stock still reserved or a charge unrefunded: released and refunded (``COMPENSATED``);
- the order ID held by another batch item (a duplicate or a conflict): ``HELD_ELSEWHERE``, left alone.

Running it twice changes nothing the second time. It refuses a RUNNING execution, and waits out the task
functions' timeout after the execution stopped: Step Functions starts no task after a stop, but a Lambda
invocation already running carries on until it returns or times out, and its write could otherwise land
after reconcile had decided the order.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from order_processing.batches import (
    BatchConflictError,
    BatchNotFoundError,
    BatchRequestError,
    Redrive,
    batch_status,
    describe_execution_or_none,
    execution_arn_for,
    redrive_batch,
    validate_batch_id,
)
from order_processing.contract import FINAL_ORDER_STATUSES, OrderStatus
from order_processing.inventory import InventoryStore, ReservationStatus
from order_processing.models import CancelRequest, Code, Outcome, PlacedOrderState, SourceFormat
from order_processing.orders import (
    Claimant,
    OrderRecord,
    OrderRecordConflictError,
    OrderRecordStore,
)
from order_processing.payments import EntryKind, EntryStatus, PaymentLedger
from order_processing.steps import compensate, confirm_order, plan_cancellation
from order_processing.validation import OrderCheck, check_order

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef

# Statuses in which the execution may still start or finish tasks.
ACTIVE_STATUSES = frozenset({"RUNNING", "PENDING_REDRIVE"})
# The statuses RedriveExecution accepts: the execution ended before its orders may have. A durable
# execution's are the same but for STOPPED (Step Functions' ABORTED).
UNSUCCESSFUL_STATUSES = frozenset({"FAILED", "ABORTED", "TIMED_OUT", "STOPPED"})
# A confirm that loses a race to another writer reads the order again; twice is plenty.
MAX_ORDER_ATTEMPTS = 2
OPEN_ORDER_IDS_SHOWN = 50


class ReconcileAction(StrEnum):
    COMPLETED = "COMPLETED"
    COMPENSATED = "COMPENSATED"
    ALREADY_FINAL = "ALREADY_FINAL"
    HELD_ELSEWHERE = "HELD_ELSEWHERE"


class BatchStillRunningError(BatchRequestError):
    status_code = 409


class BatchSettlingError(BatchRequestError):
    """The execution stopped so recently that a task it had started may still be writing."""

    status_code = 409

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message, field="batch_id")
        self.retry_after_seconds = retry_after_seconds

    def to_body(self) -> dict[str, object]:
        return {**super().to_body(), "retry_after_seconds": self.retry_after_seconds}


@dataclass(frozen=True)
class OrderStores:
    orders: OrderRecordStore
    inventory: InventoryStore
    ledger: PaymentLedger


@dataclass(frozen=True)
class BatchItem:
    """One order of the batch's input, where the Map would have put it."""

    item_index: int
    order: object
    source_format: SourceFormat


@dataclass(frozen=True)
class OrderReconciliation:
    item_index: int
    order_id: str | None
    action: ReconcileAction
    status: str
    reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "item_index": self.item_index,
            "order_id": self.order_id,
            "action": self.action.value,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass
class ReconcileReport:
    batch_id: str
    execution_status: str
    items_in_batch: int
    orders: list[OrderReconciliation] = field(default_factory=list)
    # Set when the time budget ran out: reconcile again from this item index.
    next_index: int | None = None

    ACTIONS: ClassVar[tuple[ReconcileAction, ...]] = tuple(ReconcileAction)

    @property
    def counts(self) -> dict[str, int]:
        found = Counter(order.action for order in self.orders)
        return {action.value.lower(): found[action] for action in self.ACTIONS}

    def to_dict(self) -> dict[str, object]:
        return {
            "batch_id": self.batch_id,
            "execution_status": self.execution_status,
            "items_in_batch": self.items_in_batch,
            "counts": self.counts,
            "next_index": self.next_index,
            "orders": [order.to_dict() for order in self.orders],
        }


# ---------------------------------------------------------------- the batch's orders


def batch_items(execution_input: Mapping[str, Any], s3: S3Client) -> list[BatchItem]:
    """Every order of the batch, indexed as the Map indexes them (array position, or CSV row)."""
    if "orders" in execution_input:
        return [BatchItem(index, order, "inline") for index, order in enumerate(execution_input["orders"])]
    source = execution_input["source"]
    body = s3.get_object(Bucket=source["bucket"], Key=source["key"])["Body"].read().decode("utf-8")
    if source.get("format") == "csv":
        rows: list[dict[str, str]] = list(csv.DictReader(io.StringIO(body)))
        return [BatchItem(index, row, "csv") for index, row in enumerate(rows)]
    return [BatchItem(index, order, "json") for index, order in enumerate(json.loads(body))]


# ---------------------------------------------------------------- one order


def _claimant(batch_id: str, item: BatchItem, check: OrderCheck) -> Claimant:
    return Claimant(batch_id, item.item_index, check.content_hash)


def _fully_reserved(order_id: str, line_count: int, inventory: InventoryStore) -> bool:
    rows = inventory.reservations(order_id)
    return len(rows) == line_count and all(row["status"] == ReservationStatus.RESERVED for row in rows)


def _charged(order_id: str, ledger: PaymentLedger) -> bool:
    entries = ledger.entries(order_id)
    if any(entry.kind is EntryKind.REFUND for entry in entries):
        return False
    return any(entry.kind is EntryKind.CHARGE and entry.status == EntryStatus.CHARGED for entry in entries)


class _CancelVerdict(TypedDict):
    outcome: Outcome
    code: str
    reason: str | None


def _compensate(
    batch_id: str, batch_status: str, item: BatchItem, check: OrderCheck, stores: OrderStores
) -> OrderReconciliation:
    """Cancel order's own compensation: final status first, then stock back and the charge refunded."""
    if check.order is None:
        request_fields: _CancelVerdict = {
            "outcome": Outcome.REJECTED,
            "code": Code.INVALID_ORDER.value,
            "reason": check.reason,
        }
    else:
        request_fields = {
            "outcome": Outcome.FAILED,
            "code": Code.RECONCILED.value,
            "reason": f"{check.subject} was reconciled after batch {batch_status}",
        }
    plan = plan_cancellation(
        CancelRequest(
            batch_id=batch_id,
            item_index=item.item_index,
            source_format=item.source_format,
            order_id=check.order_id,
            order=item.order,
            **request_fields,
        )
    )
    state = compensate(plan, stores.orders, stores.inventory, stores.ledger)
    action = ReconcileAction.COMPENSATED
    if state.outcome is Outcome.SUCCEEDED:
        action = ReconcileAction.ALREADY_FINAL
    elif state.outcome is Outcome.DUPLICATE or state.code is Code.CONFLICTING_ORDER:
        action = ReconcileAction.HELD_ELSEWHERE
    return OrderReconciliation(item.item_index, check.order_id, action, state.outcome.value, state.reason)


def _settle_final(
    item: BatchItem, order_id: str, record: OrderRecord, stores: OrderStores
) -> OrderReconciliation:
    """A failed or rejected order must have nothing standing; put back whatever a late write left."""
    released = stores.inventory.release(order_id)
    refunds = stores.ledger.refund(order_id, record.holder.batch_id)
    action = ReconcileAction.COMPENSATED if released or refunds else ReconcileAction.ALREADY_FINAL
    return OrderReconciliation(item.item_index, order_id, action, record.status.value)


def _reconcile_once(
    batch_id: str, batch_status: str, item: BatchItem, check: OrderCheck, stores: OrderStores
) -> OrderReconciliation:
    order_id = check.order_id
    assert order_id is not None
    record = stores.orders.get(order_id)
    if record is None:
        return _compensate(batch_id, batch_status, item, check, stores)
    if not _claimant(batch_id, item, check).same_item(record.holder):
        holder = record.holder
        reason = f"order {order_id} is held by batch {holder.batch_id} item {holder.item_index}"
        return OrderReconciliation(
            item.item_index, order_id, ReconcileAction.HELD_ELSEWHERE, "NOT_HELD", reason
        )
    if record.status is OrderStatus.SUCCEEDED:
        return OrderReconciliation(
            item.item_index, order_id, ReconcileAction.ALREADY_FINAL, record.status.value
        )
    if record.status in FINAL_ORDER_STATUSES:
        return _settle_final(item, order_id, record, stores)
    order = check.order
    if (
        order is not None
        and _fully_reserved(order_id, len(order.items), stores.inventory)
        and _charged(order_id, stores.ledger)
    ):
        placed = PlacedOrderState.for_valid_order(batch_id, item.item_index, order)
        state = confirm_order(placed.model_copy(update={"outcome": Outcome.CHARGED}), stores.orders)
        return OrderReconciliation(item.item_index, order_id, ReconcileAction.COMPLETED, state.outcome.value)
    return _compensate(batch_id, batch_status, item, check, stores)


def reconcile_order(
    batch_id: str, batch_status: str, item: BatchItem, stores: OrderStores
) -> OrderReconciliation:
    check = check_order(item.order, item.source_format, item.item_index)
    if check.order_id is None:
        # No usable ID, nothing keyed: validation rejects it without a record and nothing can stand.
        return OrderReconciliation(
            item.item_index, None, ReconcileAction.ALREADY_FINAL, OrderStatus.REJECTED.value, check.reason
        )
    for attempt in range(1, MAX_ORDER_ATTEMPTS + 1):
        try:
            return _reconcile_once(batch_id, batch_status, item, check, stores)
        except OrderRecordConflictError:
            # Someone else finished the order between our read and the confirm: read it again.
            if attempt == MAX_ORDER_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- the batch


@dataclass(frozen=True)
class EndedBatch:
    batch_id: str
    execution: DescribeExecutionOutputTypeDef

    @property
    def status(self) -> str:
        return str(self.execution["status"])


DURABLE_EXECUTION_ARN_MARK = "/durable-execution/"
# batch ID -> its durable execution in DescribeExecution's shape, or None (order_processing.durable_batches).
DurableLookup = Callable[[str], "DescribeExecutionOutputTypeDef | None"]


def batch_execution(
    batch_id: str, state_machine_arn: str, sfn: SFNClient, durable: DurableLookup | None = None
) -> DescribeExecutionOutputTypeDef:
    """The execution named after the batch ID, the state machine's or else (``durable`` given) the durable
    function's; BatchNotFoundError when there is none."""
    validate_batch_id(batch_id)
    execution = describe_execution_or_none(sfn, execution_arn_for(state_machine_arn, batch_id))
    if execution is None and durable is not None:
        execution = durable(batch_id)
    if execution is None:
        raise BatchNotFoundError(f"batch {batch_id} not found", field="batch_id")
    return execution


def ended_batch(
    batch_id: str,
    *,
    state_machine_arn: str,
    sfn: SFNClient,
    settle_seconds: float,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    durable: DurableLookup | None = None,
) -> EndedBatch:
    """The batch's execution once nothing it started can still write; refusals name what to do."""
    execution = batch_execution(batch_id, state_machine_arn, sfn, durable)
    if execution["status"] in ACTIVE_STATUSES:
        stop = (
            "StopDurableExecution"
            if DURABLE_EXECUTION_ARN_MARK in execution["executionArn"]
            else "StopExecution"
        )
        raise BatchStillRunningError(
            f"batch {batch_id} is still {execution['status']}: its execution may still finish these orders. "
            f"Stop it first ({stop}), or let it end, then reconcile",
            field="batch_id",
        )
    stopped_at = execution.get("stopDate")
    if stopped_at is not None:
        remaining = (stopped_at.timestamp() + settle_seconds) - now().timestamp()
        if remaining > 0:
            wait = int(remaining) + 1
            raise BatchSettlingError(
                f"batch {batch_id} stopped at {stopped_at.isoformat()}; a task it started may run until its "
                f"function times out ({settle_seconds:g} s). Reconcile in {wait} s",
                retry_after_seconds=wait,
            )
    return EndedBatch(batch_id, execution)


def reconcile_batch(
    batch: EndedBatch,
    stores: OrderStores,
    s3: S3Client,
    *,
    start_index: int = 0,
    time_left: Callable[[], float] | None = None,
) -> ReconcileReport:
    """Reconcile every order from ``start_index``; stops early (at ``next_index``) when ``time_left`` runs
    out, so a caller with a time limit (the API's function) can continue in another call."""
    items = batch_items(json.loads(batch.execution["input"]), s3)
    report = ReconcileReport(batch.batch_id, batch.status, len(items))
    for item in items[start_index:]:
        if time_left is not None and time_left() <= 0:
            report.next_index = item.item_index
            break
        report.orders.append(reconcile_order(batch.batch_id, batch.status, item, stores))
    return report


# ---------------------------------------------------------------- what is still open


class OutcomeSource(StrEnum):
    """Where an ended batch's order outcome is read when the execution has no output."""

    ORDER_RECORD = "order record"
    RECONCILE = "reconcile"
    VALIDATION = "validation"


@dataclass(frozen=True)
class OrderSurvey:
    """Orders of an ended batch by standing, read from the order records alone (one BatchGetItem per 100):
    the ones still open, and the outcome of every other one with where it was read."""

    open_order_ids: list[str]
    reconciled: int
    outcomes: Counter[str] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, object]:
        return {
            "count": len(self.open_order_ids),
            "order_ids": self.open_order_ids[:OPEN_ORDER_IDS_SHOWN],
            "reconciled": self.reconciled,
        }

    def outcomes_dict(self) -> dict[str, object]:
        return {
            "counts": dict(sorted(self.outcomes.items())),
            "sources": dict(sorted(self.sources.items())),
            "open": len(self.open_order_ids),
        }


def survey_orders(batch: EndedBatch, orders: OrderRecordStore, s3: S3Client) -> OrderSurvey:
    """Which orders have no final status yet (missing or RECEIVED for this item), how many reconcile
    finished, and how every other order ended: its record's final status, a duplicate or conflict of an
    order another item holds, or rejected by validation without a record (no usable order ID)."""
    checked = [
        (item, check_order(item.order, item.source_format, item.item_index))
        for item in batch_items(json.loads(batch.execution["input"]), s3)
    ]
    records = orders.get_many(check.order_id for _, check in checked if check.order_id is not None)
    survey = OrderSurvey([], 0)
    for item, check in checked:
        if check.order_id is None:
            # Validation rejects an item without a usable order ID and writes nothing.
            survey.outcomes[OrderStatus.REJECTED.value] += 1
            survey.sources[OutcomeSource.VALIDATION.value] += 1
            continue
        record = records.get(check.order_id)
        holder_is_this_item = record is not None and _claimant(batch.batch_id, item, check).same_item(
            record.holder
        )
        if record is None or (holder_is_this_item and record.status not in FINAL_ORDER_STATUSES):
            survey.open_order_ids.append(check.order_id)
            continue
        source = OutcomeSource.ORDER_RECORD
        if not holder_is_this_item:
            duplicate = record.holder.content_hash == check.content_hash
            outcome = (Outcome.DUPLICATE if duplicate else Outcome.REJECTED).value
        else:
            outcome = record.status.value
            if record.code == Code.RECONCILED:
                source = OutcomeSource.RECONCILE
        survey.outcomes[outcome] += 1
        survey.sources[source.value] += 1
    return OrderSurvey(
        survey.open_order_ids,
        survey.sources[OutcomeSource.RECONCILE.value],
        survey.outcomes,
        survey.sources,
    )


def seconds_left(deadline: float) -> Callable[[], float]:
    return lambda: deadline - time.monotonic()


# ---------------------------------------------------------------- what the API answers


@dataclass(frozen=True)
class BatchExecutions:
    """Where the API reads a batch: its execution (named after the batch ID) and its orders' records."""

    state_machine_arn: str
    sfn: SFNClient
    orders: Callable[[], OrderRecordStore]
    s3: S3Client
    durable: DurableLookup | None = None

    def describe(self, batch_id: str) -> DescribeExecutionOutputTypeDef:
        return batch_execution(batch_id, self.state_machine_arn, self.sfn, self.durable)

    def survey(self, batch_id: str, execution: DescribeExecutionOutputTypeDef) -> OrderSurvey:
        return survey_orders(EndedBatch(batch_id, execution), self.orders(), self.s3)


def batch_state(batch_id: str, batches: BatchExecutions) -> dict[str, object]:
    """The batch as Step Functions reports it; for an execution that ended unsuccessfully, the orders it left
    without a final status (what reconcile or a redrive would finish)."""
    execution = batches.describe(batch_id)
    state = batch_status(batch_id, execution)
    durable = DURABLE_EXECUTION_ARN_MARK in execution["executionArn"]
    state["orchestrator"] = "durable" if durable else "stepfunctions"
    if execution["status"] in UNSUCCESSFUL_STATUSES:
        survey = batches.survey(batch_id, execution)
        state["open_orders"] = survey.to_dict()
        # No output to summarise: the orders' outcomes as their records say, and where each was read.
        state["outcomes"] = survey.outcomes_dict()
    return state


def redrive_unless_reconciled(batch_id: str, batches: BatchExecutions) -> Redrive:
    """RedriveExecution, refused once reconcile has finished some of the batch's orders: the redrive would
    rerun them (reserve, charge) only for their confirm to fail against the final status and be undone."""
    execution = batches.describe(batch_id)
    if DURABLE_EXECUTION_ARN_MARK in execution["executionArn"]:
        raise BatchConflictError(
            f"batch {batch_id} ran on the durable function, which has no redrive: reconcile it, then submit "
            "the orders to retry as a new batch",
            field="batch_id",
        )
    if execution["status"] in UNSUCCESSFUL_STATUSES:
        survey = batches.survey(batch_id, execution)
        if survey.reconciled:
            raise BatchConflictError(
                f"batch {batch_id} was reconciled ({survey.reconciled} orders failed by reconcile); a "
                "redrive would run them again. Submit the orders to retry as a new batch",
                field="batch_id",
            )
    return redrive_batch(batch_id, state_machine_arn=batches.state_machine_arn, sfn_client=batches.sfn)
