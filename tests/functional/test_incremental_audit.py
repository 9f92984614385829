"""The soak's audit step costs the same for the 1st batch and the 8th: it reads by order and from the logs'
last position, where a full audit scans every table and re-reads every log.

Each batch's orders are taken through the real task handlers against moto; its execution is started and
stopped (moto does not run it), so the audit reads the orders' records as it does for a stopped batch.
The functions' logs are files written as the local cloud's environments write them: one per environment,
appended to by later batches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from task_events import an_order, map_item

from handlers import charge_payment, confirm_order, reserve_inventory, validate_order
from order_processing.contract import STEP_LOG_NAMES, TASK_BODY_RAN
from orderbatch.audit import BatchLocations, audit_batch
from orderbatch.audit_logs import body_runs_from_logs
from orderbatch.bench.soak_audit import IncrementalAuditor, _RequestCounter
from sam_local_cloud.moto_seam.testing import default_user_config

PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
ORDERS_PER_BATCH = 3
BATCHES = 8
STEPS = [
    (handler, STEP_LOG_NAMES[name])
    for handler, name in (
        (validate_order, "ValidateOrderFunction"),
        (reserve_inventory, "ReserveInventoryFunction"),
        (charge_payment, "ChargePaymentFunction"),
        (confirm_order, "ConfirmOrderFunction"),
    )
]


class Batches:
    def __init__(self, task_env: Any, context: Any, log_dir: Path) -> None:
        self.context = context
        self.log_dir = log_dir
        self.sfn = boto3.client("stepfunctions")
        arn = self.sfn.create_state_machine(
            name="order-batch", definition=PASS_DEFINITION, roleArn="arn:aws:iam::123456789012:role/sfn"
        )["stateMachineArn"]
        names = task_env.names
        self.locations = BatchLocations(arn, names.orders, names.reservations, names.payments)

    def run(self, batch_id: str, *, body_run_twice: str | None = None) -> list[str]:
        """The batch's orders through every step, its body-ran lines logged, its execution stopped."""
        orders = [an_order(f"{batch_id}-o{n}", ("SKU-001", 1, "9.99")) for n in range(ORDERS_PER_BATCH)]
        lines = []
        for index, order in enumerate(orders):
            state = map_item(order, batch_id=batch_id, item_index=index)
            for handler, step in STEPS:
                state = handler.lambda_handler(state, self.context)
                runs = 2 if order["order_id"] == body_run_twice and step == "charge_payment" else 1
                lines += [_log_line(step, order["order_id"])] * runs
        # Two environments per function, appended to by every batch, as warm environments are.
        for environment, half in enumerate((lines[::2], lines[1::2])):
            path = self.log_dir / "ChargePaymentFunction" / f"env-{environment}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as log:
                log.write("START RequestId: 1 Version: $LATEST\n" + "\n".join(half) + "\n")
        execution = self.sfn.start_execution(
            stateMachineArn=self.locations.state_machine_arn,
            name=batch_id,
            input=json.dumps({"batch_id": batch_id, "orders": orders}),
        )["executionArn"]
        self.sfn.stop_execution(executionArn=execution)
        return [order["order_id"] for order in orders]


def _log_line(step: str, order_id: str) -> str:
    record = {"level": "INFO", "message": TASK_BODY_RAN, "step": step, "order_id": order_id}
    return "2026-01-01T00:00:00Z\t" + json.dumps(record)


@pytest.fixture
def batches(task_env: Any, lambda_context: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Batches:
    monkeypatch.setitem(default_user_config, "stepfunctions", {"execute_state_machine": False})
    return Batches(task_env, lambda_context, tmp_path / "logs")


def test_an_audit_step_reads_as_much_for_the_eighth_batch_as_for_the_first(batches: Batches) -> None:
    auditor = IncrementalAuditor(batches.locations, boto3.client, batches.log_dir)
    full_scan_items = []
    steps = []
    for number in range(1, BATCHES + 1):
        batch_id = f"b{number}"
        batches.run(batch_id)
        report = auditor.audit(batch_id)
        steps.append(auditor.last_step)
        assert (report.lost, report.doubled, report.violations) == ([], [], [])
        assert report.outcomes == {"SUCCEEDED": ORDERS_PER_BATCH}
        assert report.body_runs_by_step == {step: {"1": ORDERS_PER_BATCH} for _, step in STEPS}
        full_scan_items.append(_items_read_by_a_full_audit(batches, batch_id))

    first = steps[0]
    assert first.api_calls > 0
    assert first.items_read == ORDERS_PER_BATCH * 4
    assert first.log_lines_read == 2 + ORDERS_PER_BATCH * len(STEPS)
    assert all(step == first for step in steps), steps
    # What the full audit reads grows with every batch the tables hold: per order, its record (scanned
    # twice: for the outcome and for the effects), its one reservation and its one charge.
    assert full_scan_items == [number * ORDERS_PER_BATCH * 4 for number in range(1, BATCHES + 1)]
    assert auditor.pending_body_runs == 0


def test_the_incremental_audit_still_finds_a_doubled_charge_and_a_body_run_twice(batches: Batches) -> None:
    auditor = IncrementalAuditor(batches.locations, boto3.client, batches.log_dir)
    batches.run("b1")
    auditor.audit("b1")
    order_ids = batches.run("b2", body_run_twice="b2-o1")
    boto3.client("dynamodb").put_item(
        TableName=batches.locations.payments_table,
        Item={"order_id": {"S": order_ids[2]}, "entry_id": {"S": "charge-again"}, "kind": {"S": "CHARGE"}},
    )

    report = auditor.audit("b2")

    assert report.doubled == [order_ids[2]]
    assert [v.detail for v in report.violations] == [
        f"order {order_ids[2]}: 2 charge entries in the payment ledger",
        f"order {order_ids[2]}: 2 charges and 0 refunds, expected 1 and 0",
    ]
    assert report.orders_with_repeated_body_runs == ["b2-o1"]
    assert report.body_runs_beyond_one == 1
    # The logs read from the start count the same for this batch.
    every_run = body_runs_from_logs(batches.log_dir)
    assert every_run[("charge_payment", "b2-o1")] == 2


def _items_read_by_a_full_audit(batches: Batches, batch_id: str) -> int:
    counter = _RequestCounter()
    audit_batch(
        batch_id,
        batches.locations,
        stepfunctions=batches.sfn,
        dynamodb=counter.watch(boto3.client("dynamodb")),
        s3=boto3.client("s3"),
    )
    return counter.items
