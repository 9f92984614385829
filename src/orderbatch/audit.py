"""The exactly-once audit of one batch: every order of the input, every effect in the tables.

`audit_batch` audits a state machine run; `audit_orders` runs the same per-order checks on any list of
orders with the outcomes their caller saw (for example orders a test invoked directly, step by step).
Each order's outcome comes from where it really is, and the report names that source per order: the batch
output of a succeeded execution (redriven or not); for an execution that ended otherwise (stopped, failed,
timed out, failed at its summary) the order records, which reconcile and the steps write and which are the
durable truth (``reconcile`` when reconcile finished the order); ``validation`` for an item without an order
ID, which is rejected without a record. Per order of the batch's input it checks: it has an outcome (else
it is lost);
the order has exactly one final status; a succeeded order has exactly one charge, no refund and one
active stock reservation per line; a failed or rejected order has nothing left standing (no active
reservation, every charge refunded). It also counts how many times each step's body ran per order,
from the functions' structured logs, so "ran twice, landed once" is visible.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from order_processing.contract import (
    FINAL_ORDER_STATUSES,
    ORDER_ID_PATTERN,
    TASK_BODY_RAN,
    Code,
    OrderStatus,
    Outcome,
)
from order_processing.durable_batches import durable_execution
from order_processing.validation import check_order

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, UniversalAttributeValueTypeDef
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

FINAL_STATUSES = {str(status) for status in FINAL_ORDER_STATUSES}
# Executions that may still finish orders: their outcomes are not in yet.
ACTIVE_EXECUTION_STATUSES = frozenset({"RUNNING", "PENDING_REDRIVE"})
# An order ID that can key records (the app's own rule); an order without one is only checked for an outcome.
USABLE_ORDER_ID = ORDER_ID_PATTERN
BODY_RAN_MESSAGE = TASK_BODY_RAN
# The stack output naming the durable variant of the workflow (its alias ARN).
DURABLE_FUNCTION_OUTPUT = "DurableOrderBatchFunctionAliasArn"
STEP_FUNCTIONS = "stepfunctions"
DURABLE = "durable"
# What every per-order invocation logs when it finishes (handlers.observability.log_finished).
STEP_FINISHED_MESSAGE = "order step finished"


@dataclass(frozen=True)
class Violation:
    order_id: str | None
    item_index: int | None
    check: str
    detail: str


@dataclass
class OrderFacts:
    order_id: str
    lines: int
    item_indexes: list[int] = field(default_factory=list)
    outcome: str | None = None
    status: str | None = None
    # The batch whose item holds the order record (the one that processes the order).
    holder_batch: str | None = None
    charges: int = 0
    refunds: int = 0
    active_reservations: int = 0
    released_reservations: int = 0
    # Reservation rows per order line: each row is one stock decrement.
    reservations_per_line: Counter[int] = field(default_factory=Counter)
    body_runs: dict[str, int] = field(default_factory=dict)


class OutcomeSource(StrEnum):
    """Where the audit read an order's outcome."""

    BATCH_OUTPUT = "batch output"
    ORDER_RECORD = "order record"
    RECONCILE = "reconcile"
    VALIDATION = "validation"
    GIVEN = "given"


@dataclass(frozen=True)
class AuditedOutcome:
    """One order's outcome as the report lists it, and where it came from (None: lost)."""

    item_index: int
    order_id: str | None
    outcome: str | None
    source: str | None
    reason: str | None = None


@dataclass
class AuditReport:
    batch_id: str
    orders_in_input: int
    outcomes: dict[str, int]
    lost: list[str]
    doubled: list[str]
    body_runs_beyond_one: int
    orders_with_repeated_body_runs: list[str]
    violations: list[Violation]
    body_runs_by_step: dict[str, dict[str, int]] = field(default_factory=dict)
    execution_status: str | None = None
    # Which orchestrator ran the batch: "stepfunctions" or "durable".
    orchestrator: str | None = None
    # How many orders' outcomes came from each source, and every order's own.
    outcome_sources: dict[str, int] = field(default_factory=dict)
    orders: list[AuditedOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


@dataclass(frozen=True)
class BatchRun:
    """One batch's run, whichever orchestrator ran it: the same statuses (Step Functions' execution
    statuses and a durable execution's coincide), its input and, once it succeeded, its batch summary."""

    orchestrator: str
    status: str
    input: Mapping[str, Any]
    output: str | None


@dataclass(frozen=True)
class BatchLocations:
    """Where a batch's input, output and effects live: the stack's Outputs, local or deployed."""

    state_machine_arn: str
    orders_table: str
    reservations_table: str
    payments_table: str
    # The durable variant's alias ARN, where a batch the state machine never ran may have run instead.
    durable_function_arn: str | None = None

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, object]) -> BatchLocations:
        durable = outputs.get(DURABLE_FUNCTION_OUTPUT)
        return cls(
            state_machine_arn=str(outputs["OrderBatchStateMachineArn"]),
            orders_table=str(outputs["OrdersTableName"]),
            reservations_table=str(outputs["ReservationsTableName"]),
            payments_table=str(outputs["PaymentsTableName"]),
            durable_function_arn=str(durable) if durable else None,
        )

    def execution_arn(self, batch_id: str) -> str:
        return self.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{batch_id}"


@dataclass(frozen=True)
class AuditedOrder:
    """One order of a batch as its caller saw it: ``outcome`` is the final order state it got back
    (None when it got nothing: the order is lost, for ``missing`` as the reason). ``order`` is the order
    as submitted; ``source`` says where the outcome was read."""

    item_index: int
    order: object
    outcome: Mapping[str, object] | None
    source: str = OutcomeSource.GIVEN
    missing: str = "has no outcome in the batch output"

    @property
    def order_id(self) -> str | None:
        order_id = self.order.get("order_id") if isinstance(self.order, Mapping) else None
        return order_id if isinstance(order_id, str) and USABLE_ORDER_ID.fullmatch(order_id) else None


def audit_batch(
    batch_id: str,
    locations: BatchLocations,
    *,
    stepfunctions: SFNClient,
    dynamodb: DynamoDBClient,
    s3: S3Client,
    body_runs: Mapping[tuple[str, str], int] | None = None,
    by_order: bool = False,
    lambda_client: LambdaClient | None = None,
) -> AuditReport:
    """Audit a batch run by the state machine, or by the durable function when the state machine has no
    execution of it (``lambda_client`` given): its input, its output and the effect tables.

    ``by_order`` reads the records and effects of the batch's own orders only (one BatchGetItem per 100
    orders, one Query per order and ledger table) instead of scanning the tables: what it costs then
    depends on the batch, not on how many batches the tables already hold, as a soak needs.
    """
    run = find_batch_run(batch_id, locations, stepfunctions=stepfunctions, lambda_client=lambda_client)
    if run is None:
        violation = Violation(None, None, "execution", f"batch {batch_id} has no execution")
        return AuditReport(batch_id, 0, {}, [], [], 0, [], [violation])
    status = run.status
    items = list(_input_items(run.input, s3))
    problems: list[Violation] = []
    if status in ACTIVE_EXECUTION_STATUSES:
        detail = f"execution is {status}: its orders may still change; audit the batch once it has ended"
        problems.append(Violation(None, None, "execution", detail))
    if status == "SUCCEEDED":
        outcomes_by_index = _outcomes_by_index(run.output, s3)
        orders = [
            AuditedOrder(index, order, outcomes_by_index.get(index), OutcomeSource.BATCH_OUTPUT)
            for index, order, _ in items
        ]
    else:
        # No output: the order records say how each order ended (the steps' writes and reconcile's).
        order_ids = _usable_order_ids(order for _, order, _ in items) if by_order else None
        records = _order_records(locations, dynamodb, order_ids)
        orders = _outcomes_from_records(batch_id, status, items, records)
    report = audit_orders(
        batch_id,
        orders,
        locations,
        dynamodb=dynamodb,
        body_runs=body_runs,
        violations=problems,
        by_order=by_order,
    )
    report.execution_status = status
    report.orchestrator = run.orchestrator
    return report


def find_batch_run(
    batch_id: str,
    locations: BatchLocations,
    *,
    stepfunctions: SFNClient,
    lambda_client: LambdaClient | None = None,
) -> BatchRun | None:
    """The batch's state machine execution, else its durable execution (named after the batch ID)."""
    try:
        execution = stepfunctions.describe_execution(executionArn=locations.execution_arn(batch_id))
    except stepfunctions.exceptions.ExecutionDoesNotExist:
        pass
    else:
        return BatchRun(
            STEP_FUNCTIONS, str(execution["status"]), json.loads(execution["input"]), execution.get("output")
        )
    if lambda_client is None or locations.durable_function_arn is None:
        return None
    durable = durable_execution(batch_id, locations.durable_function_arn, lambda_client)
    if durable is None:
        return None
    return BatchRun(
        DURABLE, str(durable["Status"]), json.loads(durable["InputPayload"]), durable.get("Result")
    )


def _outcomes_from_records(
    batch_id: str,
    status: str,
    items: Sequence[tuple[int, object, str]],
    records: Mapping[str, Mapping[str, AttributeValueTypeDef]],
) -> list[AuditedOrder]:
    orders: list[AuditedOrder] = []
    for index, order, source_format in items:
        check = check_order(order, source_format, index)  # type: ignore[arg-type]
        if check.order_id is None:
            # Validation rejects an item without a usable ID and writes nothing; reconcile says the same.
            outcome = {
                "outcome": Outcome.REJECTED.value,
                "code": Code.INVALID_ORDER.value,
                "reason": check.reason,
            }
            orders.append(AuditedOrder(index, order, outcome, OutcomeSource.VALIDATION))
            continue
        record = records.get(check.order_id)
        if record is None:
            missing = f"has no order record, and the batch ended {status} without an output"
            orders.append(AuditedOrder(index, order, None, missing=missing))
            continue
        holder = (_string(record, "batch_id"), _number(record, "item_index"))
        if holder != (batch_id, index):
            # Another item holds the ID: the batch output would report this one a duplicate or a conflict.
            same_content = _string(record, "content_hash") == check.content_hash
            outcome = {
                "outcome": (Outcome.DUPLICATE if same_content else Outcome.REJECTED).value,
                "code": (Code.DUPLICATE_ORDER if same_content else Code.CONFLICTING_ORDER).value,
                "reason": f"order {check.order_id} is held by batch {holder[0]} item {holder[1]}",
            }
            orders.append(AuditedOrder(index, order, outcome, OutcomeSource.ORDER_RECORD))
            continue
        record_status = _string(record, "status")
        if record_status not in FINAL_STATUSES:
            missing = (
                f"has no final status (its record is {record_status}) after the batch ended {status}: "
                "reconcile or redrive the batch"
            )
            orders.append(AuditedOrder(index, order, None, missing=missing))
            continue
        code = _string(record, "code")
        source = OutcomeSource.RECONCILE if code == Code.RECONCILED else OutcomeSource.ORDER_RECORD
        orders.append(AuditedOrder(index, order, {"outcome": record_status, "code": code}, source))
    return orders


def _string(item: Mapping[str, AttributeValueTypeDef], name: str) -> str | None:
    value = item.get(name, {}).get("S")
    return str(value) if value is not None else None


def _number(item: Mapping[str, AttributeValueTypeDef], name: str) -> int | None:
    value = item.get(name, {}).get("N")
    return int(value) if value is not None else None


def _order_records(
    locations: BatchLocations, dynamodb: DynamoDBClient, order_ids: Iterable[str] | None = None
) -> dict[str, dict[str, AttributeValueTypeDef]]:
    """The order records by ID: every one (a scan), or only those of ``order_ids``."""
    return {item["order_id"]["S"]: item for item in _records(dynamodb, locations.orders_table, order_ids)}


def _usable_order_ids(orders: Iterable[object]) -> list[str]:
    ids = (order.get("order_id") if isinstance(order, Mapping) else None for order in orders)
    return [order_id for order_id in ids if isinstance(order_id, str) and USABLE_ORDER_ID.fullmatch(order_id)]


def audit_orders(
    batch_id: str,
    orders: Sequence[AuditedOrder],
    locations: BatchLocations,
    *,
    dynamodb: DynamoDBClient,
    body_runs: Mapping[tuple[str, str], int] | None = None,
    violations: Iterable[Violation] = (),
    by_order: bool = False,
) -> AuditReport:
    """The per-order checks on any list of orders: a batch's, or orders a test invoked directly.
    ``by_order``: the effects are read per order (keyed reads) rather than by scanning each table."""
    found_violations = list(violations)
    facts: dict[str, OrderFacts] = {}
    lost: list[str] = []
    outcome_counts: Counter[str] = Counter()
    source_counts: Counter[str] = Counter()
    listed: list[AuditedOutcome] = []
    for audited in orders:
        order_id, index = audited.order_id, audited.item_index
        if audited.outcome is None:
            raw_id = audited.order.get("order_id") if isinstance(audited.order, Mapping) else None
            label = f"order {raw_id}" if raw_id else f"item {index}"
            lost.append(str(raw_id) if raw_id else label)
            detail = f"{label} (item {index}) {audited.missing}"
            found_violations.append(Violation(order_id, index, "lost", detail))
            listed.append(AuditedOutcome(index, order_id, None, None, audited.missing))
            continue
        outcome = audited.outcome
        outcome_counts[str(outcome.get("outcome", "UNKNOWN"))] += 1
        source_counts[str(audited.source)] += 1
        listed.append(
            AuditedOutcome(
                index,
                order_id,
                str(outcome.get("outcome", "UNKNOWN")),
                str(audited.source),
                _text(outcome.get("reason")),
            )
        )
        if order_id is None:
            continue
        entry = facts.setdefault(order_id, OrderFacts(order_id=order_id, lines=_line_count(audited.order)))
        entry.item_indexes.append(index)
        if outcome.get("code") != Code.CONFLICTING_ORDER and outcome.get("outcome") != Outcome.DUPLICATE:
            if entry.outcome == Outcome.SUCCEEDED and outcome.get("outcome") == Outcome.SUCCEEDED:
                detail = f"items {entry.item_indexes} of the batch all report it succeeded"
                found_violations.append(_violation(entry, "final status", detail))
            entry.outcome = _text(outcome.get("outcome"))

    _load_effects(facts, locations, dynamodb, list(facts) if by_order else None)
    for (step, order_id), runs in (body_runs or {}).items():
        if order_id in facts:
            facts[order_id].body_runs[step] = runs

    doubled: list[str] = []
    for entry in facts.values():
        if _processed_by_nobody(entry, batch_id):
            lost.append(entry.order_id)
            holder = "no batch holds its record" if entry.status is None else "this batch holds its record"
            detail = f"every item of it reports a duplicate or a conflict, yet {holder}: nobody processed it"
            found_violations.append(_violation(entry, "lost", detail))
            continue
        order_violations = list(_check_order(entry))
        found_violations.extend(order_violations)
        if any(v.check.startswith("doubled") for v in order_violations):
            doubled.append(entry.order_id)

    repeated = sorted(
        order_id for order_id, entry in facts.items() if any(runs > 1 for runs in entry.body_runs.values())
    )
    beyond_one = sum(max(0, runs - 1) for entry in facts.values() for runs in entry.body_runs.values())
    return AuditReport(
        batch_id=batch_id,
        orders_in_input=len(orders),
        outcomes=dict(outcome_counts),
        lost=lost,
        doubled=sorted(doubled),
        body_runs_beyond_one=beyond_one,
        orders_with_repeated_body_runs=repeated,
        violations=found_violations,
        body_runs_by_step=_body_run_histogram(facts.values()),
        outcome_sources=dict(source_counts),
        orders=listed,
    )


def _body_run_histogram(facts: Iterable[OrderFacts]) -> dict[str, dict[str, int]]:
    """{step: {runs: orders}}: how many orders had their step body run once, twice ..."""
    histogram: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in facts:
        for step, runs in entry.body_runs.items():
            histogram[step][str(runs)] += 1
    return {step: dict(sorted(counts.items())) for step, counts in sorted(histogram.items())}


def _processed_by_nobody(entry: OrderFacts, batch_id: str) -> bool:
    """Only duplicates and conflicts of an order reached the output, and no other batch holds it: the item
    that claimed the order (or nothing at all) never reported it as its own."""
    return entry.outcome is None and (entry.status is None or entry.holder_batch == batch_id)


def _check_order(entry: OrderFacts) -> Iterator[Violation]:
    if entry.charges > 1:
        yield _violation(entry, "doubled charge", f"{entry.charges} charge entries in the payment ledger")
    repeated_lines = sorted(line for line, rows in entry.reservations_per_line.items() if rows > 1)
    reservations = entry.active_reservations + entry.released_reservations
    if repeated_lines or reservations > entry.lines:
        lines = ", ".join(f"line {line} x{entry.reservations_per_line[line]}" for line in repeated_lines)
        detail = f"{reservations} reservations for {entry.lines} lines" + (f" ({lines})" if lines else "")
        yield _violation(entry, "doubled stock decrement", detail)
    if entry.outcome is None:
        return  # only duplicates/conflicts of an order processed elsewhere: nothing of its own to check
    if entry.status not in FINAL_STATUSES:
        yield _violation(
            entry, "final status", f"status is {entry.status or 'missing'}, expected a final status"
        )
    elif entry.outcome in FINAL_STATUSES and entry.status != entry.outcome:
        detail = f"batch output says {entry.outcome} but the order record says {entry.status}"
        yield _violation(entry, "final status", detail)
    if entry.status == OrderStatus.SUCCEEDED:
        yield from _check_succeeded(entry)
    elif entry.status in (OrderStatus.FAILED, OrderStatus.REJECTED):
        yield from _check_compensated(entry)


def _check_succeeded(entry: OrderFacts) -> Iterator[Violation]:
    if entry.charges != 1 or entry.refunds != 0:
        detail = f"{entry.charges} charges and {entry.refunds} refunds, expected 1 and 0"
        yield _violation(entry, "payment", detail)
    if entry.active_reservations != entry.lines:
        detail = f"{entry.active_reservations} active reservations for {entry.lines} lines"
        yield _violation(entry, "stock", detail)


def _check_compensated(entry: OrderFacts) -> Iterator[Violation]:
    if entry.active_reservations:
        yield _violation(entry, "compensation", f"{entry.active_reservations} reservations left standing")
    if entry.charges != entry.refunds:
        yield _violation(entry, "compensation", f"{entry.charges} charges but {entry.refunds} refunds")


def _violation(entry: OrderFacts, check: str, detail: str) -> Violation:
    index = entry.item_indexes[0] if entry.item_indexes else None
    return Violation(entry.order_id, index, check, f"order {entry.order_id}: {detail}")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _line_count(order: object) -> int:
    items = order.get("items") if isinstance(order, Mapping) else None
    if isinstance(items, list):
        return len(items)
    if isinstance(items, str):  # CSV form: SKU:QTY:PRICE;...
        return len([part for part in items.split(";") if part.strip()])
    return 0


def _input_items(batch_input: Mapping[str, Any], s3: S3Client) -> Iterator[tuple[int, object, str]]:
    """(item index, order, source format) for every order of the batch, indexed as the Map indexes them."""
    if "orders" in batch_input:
        for index, order in enumerate(batch_input["orders"]):
            yield index, order, "inline"
        return
    source = batch_input["source"]
    body = s3.get_object(Bucket=source["bucket"], Key=source["key"])["Body"].read().decode()
    if source.get("format", "").lower() == "csv" or source["key"].lower().endswith(".csv"):
        for index, row in enumerate(csv.DictReader(io.StringIO(body))):
            yield index, row, "csv"
    else:
        for index, order in enumerate(json.loads(body)):
            yield index, order, "json"


def _outcomes_by_index(output: str | None, s3: S3Client) -> dict[int, dict[str, Any]]:
    if not output:
        return {}
    summary = json.loads(output)
    orders = summary.get("orders")
    if orders is None and summary.get("orders_location"):
        bucket, _, key = summary["orders_location"].removeprefix("s3://").partition("/")
        orders = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        if isinstance(orders, dict):
            orders = orders.get("orders", [])
    return {int(o["item_index"]): o for o in orders or [] if o.get("item_index") is not None}


def _scan(dynamodb: DynamoDBClient, table: str) -> Iterable[dict[str, AttributeValueTypeDef]]:
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=table):
        yield from page["Items"]


# BatchGetItem's limit of keys per request.
BATCH_GET_KEYS = 100


def _records(
    dynamodb: DynamoDBClient, table: str, order_ids: Iterable[str] | None
) -> Iterable[dict[str, AttributeValueTypeDef]]:
    """A table's items: all of them (a scan), or those of ``order_ids``, by key (the tables' partition
    key is the order ID): BatchGetItem for a table keyed by the order alone, a Query per order else."""
    if order_ids is None:
        yield from _scan(dynamodb, table)
        return
    ids = sorted(set(order_ids))
    key_schema = dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    if len(key_schema) == 1:
        for start in range(0, len(ids), BATCH_GET_KEYS):
            keys: Sequence[Mapping[str, UniversalAttributeValueTypeDef]] = [
                {"order_id": {"S": order_id}} for order_id in ids[start : start + BATCH_GET_KEYS]
            ]
            while keys:
                answer = dynamodb.batch_get_item(RequestItems={table: {"Keys": keys, "ConsistentRead": True}})
                yield from answer["Responses"].get(table, [])
                unprocessed = answer.get("UnprocessedKeys", {}).get(table)
                keys = unprocessed.get("Keys", []) if unprocessed else []
        return
    paginator = dynamodb.get_paginator("query")
    for order_id in ids:
        for page in paginator.paginate(
            TableName=table,
            KeyConditionExpression="order_id = :order_id",
            ExpressionAttributeValues={":order_id": {"S": order_id}},
            ConsistentRead=True,
        ):
            yield from page["Items"]


def _load_effects(
    facts: dict[str, OrderFacts],
    locations: BatchLocations,
    dynamodb: DynamoDBClient,
    order_ids: Sequence[str] | None = None,
) -> None:
    """The order records, reservations and ledger entries of the orders in ``facts``: read by scanning
    the tables, or by key for ``order_ids`` (the same orders) when given."""
    for item in _records(dynamodb, locations.orders_table, order_ids):
        entry = facts.get(item["order_id"]["S"])
        if entry is not None:
            entry.status = item.get("status", {}).get("S")
            entry.holder_batch = item.get("batch_id", {}).get("S")
    for item in _records(dynamodb, locations.reservations_table, order_ids):
        entry = facts.get(item["order_id"]["S"])
        if entry is None:
            continue
        line = item.get("line", {}).get("N")
        if line is not None:
            entry.reservations_per_line[int(line)] += 1
        if item.get("status", {}).get("S") == "RESERVED":
            entry.active_reservations += 1
        else:
            entry.released_reservations += 1
    for item in _records(dynamodb, locations.payments_table, order_ids):
        entry = facts.get(item["order_id"]["S"])
        if entry is None:
            continue
        kind = item.get("kind", {}).get("S", "").upper()
        if kind == "CHARGE":
            entry.charges += 1
        elif kind == "REFUND":
            entry.refunds += 1
