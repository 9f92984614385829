"""Reconcile against moto: orders cut short at every step of the workflow are finished exactly once.

Each order is taken as far as a stopped execution could have left it, by the real task handlers; reconcile
then finishes the batch, the exactly-once audit checks every effect, and a second reconcile changes no row.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from task_events import an_order, map_item

from handlers import (
    batches_api,
    cancel_order,
    charge_payment,
    confirm_order,
    reserve_inventory,
    validate_order,
)
from handlers.stores import inventory, order_records, payment_ledger
from order_processing.models import Order
from order_processing.reconcile import (
    BatchSettlingError,
    BatchStillRunningError,
    OrderStores,
    ReconcileAction,
    batch_items,
    ended_batch,
    reconcile_batch,
    survey_orders,
)
from orderbatch.audit import AuditReport, BatchLocations, audit_batch
from sam_local_cloud.moto_seam.testing import default_user_config

BATCH = "b-1"
SETTLE_SECONDS = 10
PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def stores() -> OrderStores:
    """The stores as the API function builds them for reconcile."""
    environment = batches_api.Environment.load()
    return OrderStores(order_records(environment), inventory(environment), payment_ledger(environment))


def take(order: dict[str, Any], index: int, context: Any, *steps: Any) -> dict[str, Any]:
    """Validate the order, then run ``steps`` in turn, as far as a stopped execution got."""
    state = validate_order.lambda_handler(map_item(order, batch_id=BATCH, item_index=index), context)
    for handler in steps:
        state = handler.lambda_handler(state, context)
    return state


@pytest.fixture
def stopped_batch(task_env: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A state machine and a function to start-and-stop the batch's execution (moto does not run it)."""
    # Off even if a local cloud in this process turned moto's interpreter on.
    monkeypatch.setitem(default_user_config, "stepfunctions", {"execute_state_machine": False})
    sfn = boto3.client("stepfunctions")
    arn = sfn.create_state_machine(
        name="order-batch", definition=PASS_DEFINITION, roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="uploads")

    def start(orders: list[Any], *, stop: bool = True) -> Any:
        execution = sfn.start_execution(
            stateMachineArn=arn, name=BATCH, input=json.dumps({"batch_id": BATCH, "orders": orders})
        )["executionArn"]
        if stop:
            sfn.stop_execution(executionArn=execution)
        return execution

    return type("StoppedBatch", (), {"sfn": sfn, "s3": s3, "arn": arn, "start": staticmethod(start)})


def settled(stopped_batch: Any) -> Any:
    later = datetime.now(UTC) + timedelta(seconds=SETTLE_SECONDS + 1)
    return ended_batch(
        BATCH,
        state_machine_arn=stopped_batch.arn,
        sfn=stopped_batch.sfn,
        settle_seconds=SETTLE_SECONDS,
        now=lambda: later,
    )


def table_rows(task_env: Any) -> dict[str, list[dict[str, Any]]]:
    names = task_env.names
    return {
        table: sorted(
            (json.dumps(item, sort_keys=True) for item in task_env.client.scan(TableName=table)["Items"]),
        )
        for table in (names.orders, names.reservations, names.payments, names.inventory)
    }


def test_every_order_a_stopped_batch_left_half_done_ends_final_exactly_once(
    task_env: Any, lambda_context: Any, stopped_batch: Any
) -> None:
    done = an_order("o-done", ("SKU-001", 2, "9.99"))
    charged = an_order("o-charged", ("SKU-001", 1, "5.00"), ("SKU-002", 3, "1.50"))
    reserved = an_order("o-reserved", ("SKU-003", 4, "2.00"))
    validated = an_order("o-validated", ("SKU-004", 1, "3.00"))
    untouched = an_order("o-untouched", ("SKU-005", 1, "3.00"))
    invalid = an_order("o-invalid", ("SKU-001", 0, "3.00"))
    no_id = {"customer_id": "c-1"}
    leaked = an_order("o-leaked", ("SKU-002", 2, "4.00"))
    orders = [done, charged, reserved, validated, untouched, invalid, no_id, leaked, done]
    stock_before = {sku: task_env.stock(sku) for sku in ("SKU-001", "SKU-002", "SKU-003", "SKU-004")}

    take(done, 0, lambda_context, reserve_inventory, charge_payment, confirm_order)
    take(charged, 1, lambda_context, reserve_inventory, charge_payment)
    take(reserved, 2, lambda_context, reserve_inventory)
    take(validated, 3, lambda_context)
    # Cancelled by the workflow, then a reservation from a task still in flight landed after it.
    cancelled = take(leaked, 7, lambda_context)
    cancel_order.lambda_handler(cancelled | {"outcome": "FAILED", "code": "TASK_FAILED"}, lambda_context)
    stores().inventory.reserve("o-leaked", BATCH, Order.model_validate(leaked).items)
    stopped_batch.start(orders)

    report = reconcile_batch(settled(stopped_batch), stores(), stopped_batch.s3)

    by_index = {order.item_index: order for order in report.orders}
    assert {index: (o.action, o.status) for index, o in by_index.items()} == {
        0: (ReconcileAction.ALREADY_FINAL, "SUCCEEDED"),
        1: (ReconcileAction.COMPLETED, "SUCCEEDED"),
        2: (ReconcileAction.COMPENSATED, "FAILED"),
        3: (ReconcileAction.COMPENSATED, "FAILED"),
        4: (ReconcileAction.COMPENSATED, "FAILED"),
        5: (ReconcileAction.COMPENSATED, "REJECTED"),
        6: (ReconcileAction.ALREADY_FINAL, "REJECTED"),
        7: (ReconcileAction.COMPENSATED, "FAILED"),
        8: (ReconcileAction.HELD_ELSEWHERE, "NOT_HELD"),
    }
    assert report.counts == {"completed": 1, "compensated": 5, "already_final": 2, "held_elsewhere": 1}
    assert report.next_index is None
    record = task_env.order_record("o-reserved")
    assert (record["status"], record["code"], record["reason"]) == (
        "FAILED",
        "RECONCILED",
        "order o-reserved was reconciled after batch ABORTED",
    )
    assert task_env.order_record("o-invalid")["code"] == "INVALID_ORDER"
    # What stays taken is exactly what the two succeeded orders bought.
    assert task_env.stock("SKU-001") == stock_before["SKU-001"] - 2 - 1
    assert task_env.stock("SKU-002") == stock_before["SKU-002"] - 3
    assert task_env.stock("SKU-003") == stock_before["SKU-003"]
    assert task_env.stock("SKU-004") == stock_before["SKU-004"]

    names = task_env.names
    locations = BatchLocations(stopped_batch.arn, names.orders, names.reservations, names.payments)
    audit = audit_stopped(stopped_batch, task_env, locations)
    assert audit.ok, audit.violations
    assert (audit.execution_status, audit.doubled, audit.lost) == ("ABORTED", [], [])
    assert [(o.item_index, o.outcome, o.source) for o in audit.orders] == [
        (0, "SUCCEEDED", "order record"),
        (1, "SUCCEEDED", "order record"),
        (2, "FAILED", "reconcile"),
        (3, "FAILED", "reconcile"),
        (4, "FAILED", "reconcile"),
        (5, "REJECTED", "order record"),
        (6, "REJECTED", "validation"),
        # Failed by the workflow's own Cancel order; reconcile only released the late reservation.
        (7, "FAILED", "order record"),
        (8, "DUPLICATE", "order record"),
    ]
    assert audit.outcome_sources == {"order record": 5, "reconcile": 3, "validation": 1}


def audit_stopped(stopped_batch: Any, task_env: Any, locations: BatchLocations) -> AuditReport:
    return audit_batch(
        BATCH, locations, stepfunctions=stopped_batch.sfn, dynamodb=task_env.client, s3=stopped_batch.s3
    )


def test_the_audit_of_a_stopped_batch_reports_orders_left_open_and_a_deleted_record_as_lost(
    task_env: Any, lambda_context: Any, stopped_batch: Any
) -> None:
    done = an_order("o-done", ("SKU-001", 1, "9.99"))
    reserved = an_order("o-reserved", ("SKU-003", 1, "2.00"))
    gone = an_order("o-gone", ("SKU-002", 1, "4.00"))
    take(done, 0, lambda_context, reserve_inventory, charge_payment, confirm_order)
    take(reserved, 1, lambda_context, reserve_inventory)
    take(gone, 2, lambda_context, reserve_inventory, charge_payment, confirm_order)
    stopped_batch.start([done, reserved, gone])
    names = task_env.names
    locations = BatchLocations(stopped_batch.arn, names.orders, names.reservations, names.payments)

    before = audit_stopped(stopped_batch, task_env, locations)
    reconcile_batch(settled(stopped_batch), stores(), stopped_batch.s3)
    task_env.client.delete_item(TableName=names.orders, Key={"order_id": {"S": "o-gone"}})
    after = audit_stopped(stopped_batch, task_env, locations)

    assert before.lost == ["o-reserved"]
    assert [v.detail for v in before.violations if v.check == "lost"] == [
        "order o-reserved (item 1) has no final status (its record is RECEIVED) after the batch ended "
        "ABORTED: reconcile or redrive the batch"
    ]
    assert after.lost == ["o-gone"]
    assert [v.detail for v in after.violations] == [
        "order o-gone (item 2) has no order record, and the batch ended ABORTED without an output"
    ]
    assert [(o.order_id, o.outcome, o.source) for o in after.orders] == [
        ("o-done", "SUCCEEDED", "order record"),
        ("o-reserved", "FAILED", "reconcile"),
        ("o-gone", None, None),
    ]


def test_a_second_reconcile_reports_nothing_to_do_and_changes_no_row(
    task_env: Any, lambda_context: Any, stopped_batch: Any
) -> None:
    orders = [an_order(f"o-{n}", ("SKU-001", 1, "2.00")) for n in range(4)]
    take(orders[0], 0, lambda_context, reserve_inventory, charge_payment)
    take(orders[1], 1, lambda_context, reserve_inventory)
    stopped_batch.start(orders)
    first = reconcile_batch(settled(stopped_batch), stores(), stopped_batch.s3)
    assert first.counts["completed"] == 1
    assert first.counts["compensated"] == 3
    rows = table_rows(task_env)

    second = reconcile_batch(settled(stopped_batch), stores(), stopped_batch.s3)

    assert second.counts == {"completed": 0, "compensated": 0, "already_final": 4, "held_elsewhere": 0}
    assert [(o.order_id, o.status) for o in second.orders] == [(o.order_id, o.status) for o in first.orders]
    assert table_rows(task_env) == rows


def test_reconcile_refuses_a_running_batch_and_waits_out_tasks_still_in_flight(
    task_env: Any, stopped_batch: Any
) -> None:
    stopped_batch.start([an_order("o-1", ("SKU-001", 1, "1.00"))], stop=False)
    with pytest.raises(BatchStillRunningError, match="Stop it first"):
        ended_batch(BATCH, state_machine_arn=stopped_batch.arn, sfn=stopped_batch.sfn, settle_seconds=10)

    stopped_batch.sfn.stop_execution(
        executionArn=stopped_batch.arn.replace(":stateMachine:", ":execution:") + f":{BATCH}"
    )
    with pytest.raises(BatchSettlingError) as settling:
        ended_batch(BATCH, state_machine_arn=stopped_batch.arn, sfn=stopped_batch.sfn, settle_seconds=10)
    assert 1 <= settling.value.retry_after_seconds <= 11
    assert settling.value.status_code == 409
    assert settling.value.to_body()["retry_after_seconds"] == settling.value.retry_after_seconds
    assert settled(stopped_batch).status == "ABORTED"


def test_a_reconcile_cut_short_by_its_time_limit_says_where_to_continue(
    task_env: Any, lambda_context: Any, stopped_batch: Any
) -> None:
    orders = [an_order(f"o-{n}", ("SKU-001", 1, "2.00")) for n in range(5)]
    stopped_batch.start(orders)
    budget = iter([1.0, 1.0, 0.0])

    first = reconcile_batch(
        settled(stopped_batch), stores(), stopped_batch.s3, time_left=lambda: next(budget)
    )
    rest = reconcile_batch(
        settled(stopped_batch), stores(), stopped_batch.s3, start_index=first.next_index or 0
    )

    assert [o.item_index for o in first.orders] == [0, 1]
    assert first.next_index == 2
    assert [o.item_index for o in rest.orders] == [2, 3, 4]
    assert rest.next_index is None


def test_the_survey_names_the_orders_left_open_and_counts_the_reconciled(
    task_env: Any, lambda_context: Any, stopped_batch: Any
) -> None:
    orders: list[Any] = [an_order(f"o-{n}", ("SKU-001", 1, "2.00")) for n in range(3)]
    orders += [orders[0], {"customer_id": "c-1"}]
    take(orders[0], 0, lambda_context, reserve_inventory, charge_payment, confirm_order)
    take(orders[1], 1, lambda_context, reserve_inventory)
    stopped_batch.start(orders)
    batch = settled(stopped_batch)

    before = survey_orders(batch, stores().orders, stopped_batch.s3)
    reconcile_batch(batch, stores(), stopped_batch.s3)
    after = survey_orders(batch, stores().orders, stopped_batch.s3)

    assert before.to_dict() == {"count": 2, "order_ids": ["o-1", "o-2"], "reconciled": 0}
    assert before.outcomes_dict() == {
        "counts": {"DUPLICATE": 1, "REJECTED": 1, "SUCCEEDED": 1},
        "sources": {"order record": 2, "validation": 1},
        "open": 2,
    }
    assert after.to_dict() == {"count": 0, "order_ids": [], "reconciled": 2}
    assert after.outcomes_dict() == {
        "counts": {"DUPLICATE": 1, "FAILED": 2, "REJECTED": 1, "SUCCEEDED": 1},
        "sources": {"order record": 2, "reconcile": 2, "validation": 1},
        "open": 0,
    }


def test_batch_items_are_indexed_as_the_map_indexes_them(task_env: Any, stopped_batch: Any) -> None:
    s3 = stopped_batch.s3
    s3.put_object(
        Bucket="uploads",
        Key="b.csv",
        Body=b"order_id,customer_id,currency,items\no-1,c-1,USD,SKU-001:1:2.00\no-2,c-2,EUR,SKU-002:2:1\n",
    )
    s3.put_object(Bucket="uploads", Key="b.json", Body=json.dumps([{"order_id": "o-9"}]).encode())

    from_csv = batch_items({"source": {"bucket": "uploads", "key": "b.csv", "format": "csv"}}, s3)
    from_json = batch_items({"source": {"bucket": "uploads", "key": "b.json", "format": "json"}}, s3)

    assert [(i.item_index, i.order["order_id"], i.source_format) for i in from_csv] == [
        (0, "o-1", "csv"),
        (1, "o-2", "csv"),
    ]
    assert from_csv[1].order["items"] == "SKU-002:2:1"
    assert [(i.item_index, i.order, i.source_format) for i in from_json] == [(0, {"order_id": "o-9"}, "json")]
