"""End to end: the app's durable batch (DurableOrderBatchFunction) through `orderbatch submit
--orchestrator durable` and `orderbatch audit` on a local cloud, its quota small enough that the chained
invokes are throttled.

The default run is 20 orders at quota 2; the issue's "done when" (200 orders at quota 10, MapMaxConcurrency
20 so that the quota is oversubscribed) is marked slow.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from order_processing.payments import EntryKind
from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.audit import DURABLE, DURABLE_FUNCTION_OUTPUT
from orderbatch.audit_logs import body_runs_from_logs
from orderbatch.cli import main
from orderbatch.durable_batches import wait_for_durable_batch
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"
PER_ORDER_FUNCTIONS = (
    "ValidateOrderFunction",
    "ReserveInventoryFunction",
    "ChargePaymentFunction",
    "ConfirmOrderFunction",
)


def start_cloud(quota: int, map_max_concurrency: int | None = None) -> LocalCloud:
    config = local_cloud_config(TEMPLATE, account_concurrency=quota, map_max_concurrency=map_max_concurrency)
    return LocalCloud(config)


@pytest.fixture(scope="module")
def small_cloud() -> Iterator[LocalCloud]:
    with start_cloud(quota=2) as running:
        yield running


def per_order_throttles(cloud: LocalCloud) -> int:
    service = cloud.lambda_service
    assert service is not None
    functions = service.accounting.snapshot()["functions"]
    return sum(int(functions[name]["throttles_total"]) for name in PER_ORDER_FUNCTIONS)


def submit_durable(cloud: LocalCloud, batch_id: str, orders: int, capsys: pytest.CaptureFixture[str]) -> Any:
    argv = ["submit", "--orchestrator", DURABLE, "--generate", str(orders), "--batch-id", batch_id]
    exit_code = main([*argv, "--wait", "--timeout", "600", "--json", "--endpoint", cloud.endpoint])
    document = json.loads(capsys.readouterr().out)
    return exit_code, document


def audit_exit_code(cloud: LocalCloud, batch_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    argv = ["audit", batch_id, "--json", "--endpoint", cloud.endpoint, "--logs", str(cloud.log_dir)]
    exit_code = main(argv)
    return exit_code, json.loads(capsys.readouterr().out)


def assert_every_order_ran_once(cloud: LocalCloud, batch_id: str, orders: int) -> None:
    report = audit_local_batch(cloud, batch_id)
    assert report.orchestrator == DURABLE
    assert report.lost == []
    assert report.doubled == []
    assert report.violations == []
    assert report.outcomes == {"SUCCEEDED": orders}
    # One payment per order in the ledger, one charge body run per order in the logs.
    charges: Counter[str] = Counter()
    payments = cloud.stack.outputs["PaymentsTableName"]
    for page in cloud.client("dynamodb").get_paginator("scan").paginate(TableName=payments):
        for item in page["Items"]:
            if item["order_id"]["S"].startswith(batch_id) and item["kind"]["S"] == EntryKind.CHARGE:
                charges[item["order_id"]["S"]] += 1
    assert len(charges) == orders
    assert set(charges.values()) == {1}
    charge_runs = {
        order_id: runs
        for (step, order_id), runs in body_runs_from_logs(cloud.log_dir).items()
        if step == "charge_payment" and order_id.startswith(batch_id)
    }
    assert len(charge_runs) == orders
    assert set(charge_runs.values()) == {1}
    # One durable execution for the batch: its name is the batch ID.
    listed = cloud.client("lambda").list_durable_executions_by_function(
        FunctionName=cloud.stack.outputs[DURABLE_FUNCTION_OUTPUT], DurableExecutionName=batch_id
    )["DurableExecutions"]
    assert [e["DurableExecutionName"] for e in listed] == [batch_id]


def test_a_throttled_durable_batch_succeeds_and_audits_clean(
    small_cloud: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_id = "durable-e2e-small"
    exit_code, document = submit_durable(small_cloud, batch_id, 20, capsys)

    assert exit_code == 0
    assert document["status"] == "SUCCEEDED"
    assert (document["total"], document["succeeded"], document["failed"]) == (20, 20, 0)
    assert document["response"]["orchestrator"] == DURABLE
    assert document["response"]["execution_arn"].startswith(
        "arn:aws:lambda:us-east-1:123456789012:function:DurableOrderBatchFunction:$LATEST/durable-execution/"
        f"{batch_id}/"
    )
    assert per_order_throttles(small_cloud) > 0
    audit_code, audit_document = audit_exit_code(small_cloud, batch_id, capsys)
    assert audit_code == 0
    assert audit_document["orchestrator"] == DURABLE
    assert audit_document["outcome_sources"] == {"batch output": 20}
    assert_every_order_ran_once(small_cloud, batch_id, 20)


def test_status_reports_a_durable_batch_and_a_resubmission_is_the_same_execution(
    small_cloud: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_id = "durable-e2e-small"
    argv = ["status", batch_id, "--orchestrator", DURABLE, "--json", "--endpoint", small_cloud.endpoint]
    assert main(argv) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["status"], status["succeeded"]) == ("SUCCEEDED", 20)

    argv = ["submit", "--orchestrator", DURABLE, "--generate", "20", "--batch-id", batch_id, "--json"]
    assert main([*argv, "--endpoint", small_cloud.endpoint]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["response"]["execution_arn"] == status["response"]["execution_arn"]

    missing = [
        "status",
        "no-such-batch",
        "--orchestrator",
        DURABLE,
        "--json",
        "--endpoint",
        small_cloud.endpoint,
    ]
    assert main(missing) == 1
    assert json.loads(capsys.readouterr().out)["http_status"] == 404


def test_the_alias_arn_output_is_invocable_and_an_unknown_alias_is_not(small_cloud: LocalCloud) -> None:
    alias_arn = small_cloud.stack.outputs[DURABLE_FUNCTION_OUTPUT]
    assert alias_arn == "arn:aws:lambda:us-east-1:123456789012:function:DurableOrderBatchFunction:live"
    lambda_client = small_cloud.client("lambda")
    assert lambda_client.get_function(FunctionName=alias_arn)["Configuration"]["FunctionName"] == (
        "DurableOrderBatchFunction"
    )
    with pytest.raises(lambda_client.exceptions.ResourceNotFoundException):
        lambda_client.get_function(FunctionName="DurableOrderBatchFunction", Qualifier="staging")


@pytest.mark.slow
def test_the_done_when_200_orders_at_quota_10(capsys: pytest.CaptureFixture[str]) -> None:
    batch_id = "durable-e2e-200"
    # The template's MapMaxConcurrency (8) leaves room on a quota of 10; 20, as in the demo, oversubscribes.
    with start_cloud(quota=10, map_max_concurrency=20) as cloud:
        exit_code, document = submit_durable(cloud, batch_id, 200, capsys)
        assert exit_code == 0
        assert (document["status"], document["succeeded"], document["failed"]) == ("SUCCEEDED", 200, 0)
        assert per_order_throttles(cloud) > 0
        audit_code, _ = audit_exit_code(cloud, batch_id, capsys)
        assert audit_code == 0
        assert_every_order_ran_once(cloud, batch_id, 200)


def api_client(cloud: LocalCloud) -> BatchesApiClient:
    return BatchesApiClient(
        cloud.api_url, session=boto3.Session(**DUMMY_CREDENTIALS, region_name="us-east-1")
    )


def test_the_http_api_starts_and_reports_a_durable_batch(small_cloud: LocalCloud) -> None:
    api = api_client(small_cloud)
    batch_id = "durable-e2e-api"
    orders = generate_orders(6, fixture_skus(TEMPLATE), prefix=batch_id)
    batch = {"batch_id": batch_id, "orders": orders, "orchestrator": DURABLE}

    first = api.submit(batch)
    again = api.submit(batch)
    changed = api.submit({**batch, "orders": orders[:-1]})

    assert first.status == 202
    assert (first.body["orchestrator"], first.body["submitted"]) == (DURABLE, True)
    assert ":function:DurableOrderBatchFunction:$LATEST/durable-execution/" in first.body["execution_arn"]
    assert again.status == 200
    assert again.body["execution_arn"] == first.body["execution_arn"]
    assert changed.status == 409
    # Wait on Lambda, not on the API: at quota 2 the API's own function competes with the batch.
    wait_for_durable_batch(small_cloud.client("lambda"), first.body["execution_arn"], timeout=120)
    state = api.status(batch_id)
    assert state.status == 200
    assert (state.body["orchestrator"], state.body["status"]) == (DURABLE, "SUCCEEDED")
    assert state.body["summary"]["succeeded"] == 6
    assert api.submit({**batch, "orchestrator": "airflow"}).status == 400


def test_reconcile_finishes_a_stopped_durable_batch_and_the_audit_passes(
    small_cloud: LocalCloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `orderbatch reconcile` signs its API requests with the default credentials.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", DUMMY_CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", DUMMY_CREDENTIALS["aws_secret_access_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    api = api_client(small_cloud)
    lambda_client = small_cloud.client("lambda")
    batch_id = "durable-e2e-stopped"
    orders = generate_orders(10, fixture_skus(TEMPLATE), prefix=batch_id)
    started = api.submit({"batch_id": batch_id, "orders": orders, "orchestrator": DURABLE})
    assert started.status == 202
    # Stopped once some orders are under way, so some are left half-done.
    deadline = time.monotonic() + 60
    while not any(
        step == "reserve_inventory" and order_id.startswith(batch_id)
        for step, order_id in body_runs_from_logs(small_cloud.log_dir)
    ):
        assert time.monotonic() < deadline, "no order of the batch reached reserve in 60 s"
        time.sleep(0.2)
    lambda_client.stop_durable_execution(DurableExecutionArn=started.body["execution_arn"])
    stopped = wait_for_durable_batch(lambda_client, started.body["execution_arn"], timeout=30)
    assert stopped["Status"] == "STOPPED"

    argv = ["reconcile", batch_id, "--json", "--settle-timeout", "60", "--endpoint", small_cloud.endpoint]
    assert main(argv) == 0
    reconciled = json.loads(capsys.readouterr().out)
    assert reconciled["execution_status"] == "STOPPED"
    assert reconciled["items_in_batch"] == 10

    audit_code, audit_document = audit_exit_code(small_cloud, batch_id, capsys)
    assert audit_code == 0, audit_document["violations"]
    assert audit_document["orchestrator"] == DURABLE
    assert audit_document["execution_status"] == "STOPPED"
    assert sum(audit_document["outcomes"].values()) == 10
    assert "batch output" not in audit_document["outcome_sources"]
