"""A throttled batch of the real app stopped mid-way, then reconciled or redriven; a failed batch redriven.

The local cloud runs the template as written (IAM enforced, so the API function's policies must really allow
what reconcile and redrive do), with an account quota of 2 under a Map of 8 and a slow ChargePaymentFunction,
so the stop catches orders at every step. The exactly-once audit checks every effect afterwards.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.audit import BatchLocations
from orderbatch.cli import main
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, wait_for_execution

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"
ORDERS = 40
FUNCTION_TIMEOUT_SECONDS = 3
STEP_FINISHED = "order step finished"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = local_cloud_config(
        TEMPLATE,
        account_concurrency=2,
        parameter_overrides={
            "MapMaxConcurrency": "8",
            # Short, so reconcile's wait for tasks a stopped batch may still run stays short too.
            "FunctionTimeoutSeconds": str(FUNCTION_TIMEOUT_SECONDS),
            "TaskTimeoutSeconds": "5",
        },
        state_dir=tmp_path_factory.mktemp("reconcile"),
    )
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(autouse=True)
def operator_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands sign their API calls with the default credentials, as an operator's would be."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(scope="module")
def api(cloud: LocalCloud) -> BatchesApiClient:
    session = boto3.Session(**DUMMY_CREDENTIALS, region_name="us-east-1")
    return BatchesApiClient(cloud.api_url, session=session, max_attempts=10)


def locations(cloud: LocalCloud) -> BatchLocations:
    return BatchLocations.from_outputs(cloud.stack.outputs)


def submit(cloud: LocalCloud, api: BatchesApiClient, batch_id: str, orders: int) -> tuple[str, list[Any]]:
    batch = generate_orders(orders, fixture_skus(TEMPLATE), prefix=batch_id)
    response = api.submit({"batch_id": batch_id, "orders": batch})
    assert response.status == 202, response.body
    return locations(cloud).execution_arn(batch_id), batch


def succeeded_orders(cloud: LocalCloud, orders: list[Any]) -> int:
    dynamodb = cloud.client("dynamodb")
    table = cloud.stack.outputs["OrdersTableName"]
    found = 0
    for order in orders:
        item = dynamodb.get_item(TableName=table, Key={"order_id": {"S": order["order_id"]}}).get("Item")
        found += bool(item and item["status"]["S"] == "SUCCEEDED")
    return found


def stop_mid_way(cloud: LocalCloud, execution_arn: str, orders: list[Any]) -> None:
    """StopExecution once some orders have succeeded and most have not."""
    deadline = time.monotonic() + 120
    while succeeded_orders(cloud, orders) < 4:
        assert time.monotonic() < deadline, "no order succeeded in 120 s"
        time.sleep(0.5)
    cloud.client("stepfunctions").stop_execution(executionArn=execution_arn, error="Operator.Stop")
    assert wait_for_execution(cloud.client("stepfunctions"), execution_arn, timeout=30) == "ABORTED"


def run_command(capsys: pytest.CaptureFixture[str], cloud: LocalCloud, *argv: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main([*argv, "--endpoint", cloud.endpoint, "--json"])
    return code, json.loads(capsys.readouterr().out)


def table_rows(cloud: LocalCloud) -> dict[str, list[str]]:
    dynamodb = cloud.client("dynamodb")
    outputs = cloud.stack.outputs
    return {
        name: sorted(
            json.dumps(item, sort_keys=True)
            for page in dynamodb.get_paginator("scan").paginate(TableName=outputs[name])
            for item in page["Items"]
        )
        for name in ("OrdersTableName", "ReservationsTableName", "PaymentsTableName", "InventoryTableName")
    }


def history(cloud: LocalCloud, execution_arn: str) -> list[dict[str, Any]]:
    paginator = cloud.client("stepfunctions").get_paginator("get_execution_history")
    return [event for page in paginator.paginate(executionArn=execution_arn) for event in page["events"]]


def split_at(
    events: list[dict[str, Any]], event_type: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    position = next(i for i, event in enumerate(events) if event["type"] == event_type)
    return events[:position], events[position + 1 :]


def iteration_indexes(events: list[dict[str, Any]], event_type: str) -> set[int]:
    key = event_type[0].lower() + event_type[1:] + "EventDetails"
    return {event[key]["index"] for event in events if event["type"] == event_type}


def step_runs_after(log_dir: Path, moment: datetime) -> Counter[str]:
    """Task invocations (replays included) per order ID that finished after ``moment``, from the logs."""
    runs: Counter[str] = Counter()
    for path in log_dir.rglob("*.log"):
        for line in path.read_text(errors="replace").splitlines():
            # The runtime echoes each message on a plain line of its own; the JSON line is Powertools'.
            if STEP_FINISHED not in line or not line.startswith("{"):
                continue
            record = json.loads(line)
            logged = datetime.strptime(record["timestamp"], "%Y-%m-%d %H:%M:%S,%f%z")
            if record.get("message") == STEP_FINISHED and logged > moment:
                runs[record["order_id"]] += 1
    return runs


def test_a_stopped_throttled_batch_is_reconciled_exactly_once_and_a_second_reconcile_does_nothing(
    cloud: LocalCloud, api: BatchesApiClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.lambda_service.set_latency({"ChargePaymentFunction": 0.5})  # type: ignore[union-attr]
    batch_id = "stopped-then-reconciled"
    execution_arn, orders = submit(cloud, api, batch_id, ORDERS)
    stop_mid_way(cloud, execution_arn, orders)

    stopped = api.status(batch_id).body
    code, report = run_command(capsys, cloud, "reconcile", batch_id)
    reconciled = api.status(batch_id).body
    refused = api.request("POST", f"/batches/{batch_id}/redrive", b"{}")
    rows = table_rows(cloud)
    code_again, again = run_command(capsys, cloud, "reconcile", batch_id)

    assert (stopped["status"], stopped["redrive_status"], stopped["redrive_count"]) == (
        "ABORTED",
        "REDRIVABLE",
        0,
    )
    assert stopped["open_orders"]["count"] > 0
    assert code == 0
    counts = report["counts"]
    assert counts["completed"] + counts["compensated"] == stopped["open_orders"]["count"]
    assert counts["completed"] + counts["compensated"] + counts["already_final"] == ORDERS
    assert counts["held_elsewhere"] == 0
    assert [order["item_index"] for order in report["orders"]] == list(range(ORDERS))
    compensated = [order for order in report["orders"] if order["action"] == "COMPENSATED"]
    assert {order["reason"] for order in compensated} <= {
        f"order {order['order_id']} was reconciled after batch ABORTED" for order in compensated
    }
    audit_code, audit = run_command(capsys, cloud, "audit", batch_id, "--logs", str(cloud.log_dir))
    assert audit_code == 0, audit["violations"]
    assert (audit["ok"], audit["execution_status"], audit["lost"], audit["doubled"]) == (
        True,
        "ABORTED",
        [],
        [],
    )
    assert sum(audit["outcomes"].values()) == ORDERS
    reported = {order["item_index"]: order for order in report["orders"]}
    assert [(o["item_index"], o["outcome"]) for o in audit["orders"]] == [
        (index, reported[index]["status"]) for index in range(ORDERS)
    ]
    # Orders reconcile failed are read as its; the rest (succeeded before the stop, confirmed by reconcile,
    # or failed by the workflow itself) from the records the steps wrote.
    failed_by_reconcile = sum(
        1
        for order in compensated
        if order["reason"] == f"order {order['order_id']} was reconciled after batch ABORTED"
    )
    expected_sources = {"order record": ORDERS - failed_by_reconcile, "reconcile": failed_by_reconcile}
    assert audit["outcome_sources"] == {source: count for source, count in expected_sources.items() if count}
    assert reconciled["outcomes"]["open"] == 0
    assert reconciled["outcomes"]["sources"] == audit["outcome_sources"]
    assert reconciled["open_orders"] == {"count": 0, "order_ids": [], "reconciled": counts["compensated"]}
    assert refused.status == 409
    assert "was reconciled" in refused.body["message"]

    assert code_again == 0
    assert again["counts"] == {"completed": 0, "compensated": 0, "already_final": ORDERS, "held_elsewhere": 0}
    assert table_rows(cloud) == rows
    code_after, audit_after = run_command(capsys, cloud, "audit", batch_id, "--logs", str(cloud.log_dir))
    assert (code_after, audit_after["orders"]) == (0, audit["orders"])


def test_an_order_whose_record_is_gone_after_reconcile_is_audited_as_lost(
    cloud: LocalCloud, api: BatchesApiClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.lambda_service.set_latency({"ChargePaymentFunction": 0.5})  # type: ignore[union-attr]
    batch_id = "stopped-reconciled-then-lost"
    execution_arn, orders = submit(cloud, api, batch_id, ORDERS)
    stop_mid_way(cloud, execution_arn, orders)
    code, _report = run_command(capsys, cloud, "reconcile", batch_id)
    assert code == 0
    lost_id = orders[ORDERS - 1]["order_id"]
    cloud.client("dynamodb").delete_item(
        TableName=cloud.stack.outputs["OrdersTableName"], Key={"order_id": {"S": lost_id}}
    )

    audit_code, audit = run_command(capsys, cloud, "audit", batch_id, "--no-logs")

    assert audit_code == 1
    assert (audit["ok"], audit["lost"], audit["doubled"]) == (False, [lost_id], [])
    assert [violation["detail"] for violation in audit["violations"]] == [
        f"order {lost_id} (item {ORDERS - 1}) has no order record, "
        "and the batch ended ABORTED without an output"
    ]
    assert [o["item_index"] for o in audit["orders"] if o["source"] is None] == [ORDERS - 1]
    assert sum(audit["outcome_sources"].values()) == ORDERS - 1


def test_a_batch_failed_at_its_summary_is_finished_by_reconcile_and_audited_from_its_records(
    cloud: LocalCloud, api: BatchesApiClient, capsys: pytest.CaptureFixture[str]
) -> None:
    service = cloud.lambda_service
    assert service is not None
    service.set_fault_plan(
        {
            "functions": {
                "SummarizeBatchFunction": [{"kind": "error_before_body", "error_type": "Summary.Down"}]
            }
        }
    )
    batch_id = "failed-at-summary-reconciled"
    execution_arn, _orders = submit(cloud, api, batch_id, 12)
    assert wait_for_execution(cloud.client("stepfunctions"), execution_arn, timeout=300) == "FAILED"
    service.set_fault_plan(None)

    audit_code, audit = run_command(capsys, cloud, "audit", batch_id, "--logs", str(cloud.log_dir))
    code, report = run_command(capsys, cloud, "reconcile", batch_id)
    status = api.status(batch_id).body

    assert audit_code == 0, audit["violations"]
    assert (audit["execution_status"], audit["outcomes"], audit["lost"]) == ("FAILED", {"SUCCEEDED": 12}, [])
    assert audit["outcome_sources"] == {"order record": 12}
    assert code == 0
    assert report["counts"] == {"completed": 0, "compensated": 0, "already_final": 12, "held_elsewhere": 0}
    assert status["outcomes"] == {"counts": {"SUCCEEDED": 12}, "sources": {"order record": 12}, "open": 0}


def test_a_stopped_throttled_batch_redriven_reruns_only_the_unfinished_orders_exactly_once(
    cloud: LocalCloud, api: BatchesApiClient
) -> None:
    cloud.lambda_service.set_latency({"ChargePaymentFunction": 0.5})  # type: ignore[union-attr]
    batch_id = "stopped-then-redriven"
    execution_arn, orders = submit(cloud, api, batch_id, ORDERS)
    stop_mid_way(cloud, execution_arn, orders)
    time.sleep(FUNCTION_TIMEOUT_SECONDS)  # so no task of the first attempt is still running below

    redriven = api.request("POST", f"/batches/{batch_id}/redrive", b"{}")
    assert redriven.status == 200, redriven.body
    assert wait_for_execution(cloud.client("stepfunctions"), execution_arn, timeout=300) == "SUCCEEDED"

    described = cloud.client("stepfunctions").describe_execution(executionArn=execution_arn)
    assert (described["redriveCount"], described["redriveStatus"]) == (1, "NOT_REDRIVABLE")
    first, rerun = split_at(history(cloud, execution_arn), "ExecutionRedriven")
    finished_first = iteration_indexes(first, "MapIterationSucceeded")
    assert 0 < len(finished_first) < ORDERS
    assert iteration_indexes(rerun, "MapIterationStarted") == set(range(ORDERS)) - finished_first
    # The logs agree: no task ran again for an order whose iteration had finished.
    runs_after = step_runs_after(cloud.log_dir, described["redriveDate"])
    finished_ids = {orders[index]["order_id"] for index in finished_first}
    assert not finished_ids & set(runs_after)
    assert set(runs_after) == {orders[index]["order_id"] for index in set(range(ORDERS)) - finished_first}

    audit = audit_local_batch(cloud, batch_id)
    assert audit.ok, audit.violations
    assert (audit.lost, audit.doubled) == ([], [])
    assert audit.outcomes == {"SUCCEEDED": ORDERS}
    status = api.status(batch_id).body
    assert (status["status"], status["redrive_count"], status["summary"]["succeeded"]) == (
        "SUCCEEDED",
        1,
        ORDERS,
    )


def test_a_batch_failed_at_its_summary_is_redriven_without_rerunning_any_order(
    cloud: LocalCloud, api: BatchesApiClient, capsys: pytest.CaptureFixture[str]
) -> None:
    service = cloud.lambda_service
    assert service is not None
    service.set_fault_plan(
        {
            "functions": {
                "SummarizeBatchFunction": [{"kind": "error_before_body", "error_type": "Summary.Down"}]
            }
        }
    )
    batch_id = "failed-at-summary"
    execution_arn, _orders = submit(cloud, api, batch_id, 12)
    assert wait_for_execution(cloud.client("stepfunctions"), execution_arn, timeout=300) == "FAILED"
    failed = cloud.client("stepfunctions").describe_execution(executionArn=execution_arn)
    service.set_fault_plan(None)

    code, redriven = run_command(capsys, cloud, "redrive", batch_id, "--wait")

    assert (failed["error"], failed["redriveStatus"]) == ("Summary.Down", "REDRIVABLE")
    assert code == 0
    assert (redriven["status"]["status"], redriven["status"]["redrive_count"]) == ("SUCCEEDED", 1)
    first, rerun = split_at(history(cloud, execution_arn), "ExecutionRedriven")
    assert first[-1]["type"] == "ExecutionFailed"
    assert rerun[0]["type"] == "TaskStateEntered"
    assert rerun[0]["stateEnteredEventDetails"]["name"] == "Summarize inline batch"
    assert not [event for event in rerun if event["type"].startswith("MapIteration")]
    audit = audit_local_batch(cloud, batch_id)
    assert audit.ok, audit.violations
    assert audit.outcomes == {"SUCCEEDED": 12}
    again = api.request("POST", f"/batches/{batch_id}/redrive", b"{}")
    assert (again.status, again.body["message"]) == (
        409,
        f"batch {batch_id} cannot be redriven: Execution is SUCCEEDED and cannot be redriven",
    )
