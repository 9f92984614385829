"""The HTTP API's reconcile and status routes against moto: what a caller gets back, refusals included."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from handlers import batches_api, clients
from handlers.environment import forget_loaded_environments

if TYPE_CHECKING:
    from conftest import Cloud, FakeLambdaContext

EventFactory = Callable[..., dict[str, Any]]
BATCH = "b-reconcile"
TABLES = {
    "ORDERS_TABLE_NAME": ("orders", [("order_id", "S")]),
    "RESERVATIONS_TABLE_NAME": ("reservations", [("order_id", "S"), ("reservation_id", "S")]),
    "PAYMENTS_TABLE_NAME": ("payments", [("order_id", "S"), ("entry_id", "S")]),
    "INVENTORY_TABLE_NAME": ("inventory", [("sku", "S")]),
}


@pytest.fixture
def order_tables(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    client = boto3.client("dynamodb")
    for variable, (name, keys) in TABLES.items():
        client.create_table(
            TableName=name,
            KeySchema=[
                {"AttributeName": attribute, "KeyType": "HASH" if position == 0 else "RANGE"}
                for position, (attribute, _) in enumerate(keys)
            ],
            AttributeDefinitions=[
                {"AttributeName": attribute, "AttributeType": kind} for attribute, kind in keys
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        monkeypatch.setenv(variable, name)
    forget_loaded_environments()
    clients.forget_clients()


def an_order(order_id: str) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "customer_id": "c-1",
        "currency": "USD",
        "items": [{"sku": "SKU-001", "quantity": 1, "unit_price": "9.99"}],
    }


def start(cloud: Cloud, *, stop: bool) -> str:
    orders = [an_order("o-1"), an_order("o-2")]
    arn: str = cloud.sfn.start_execution(
        stateMachineArn=cloud.state_machine_arn,
        name=BATCH,
        input=json.dumps({"batch_id": BATCH, "orders": orders}),
    )["executionArn"]
    if stop:
        cloud.sfn.stop_execution(executionArn=arn)
    return arn


def call(event: dict[str, Any], context: FakeLambdaContext) -> tuple[int, dict[str, str], dict[str, Any]]:
    response = batches_api.lambda_handler(event, context)
    return response["statusCode"], response["headers"], json.loads(response["body"])


def reconcile(http_event: EventFactory, context: FakeLambdaContext, body: Any = None) -> Any:
    return call(http_event("POST", f"/batches/{BATCH}/reconcile", body), context)


def test_a_running_batch_is_not_reconciled(
    cloud: Cloud, order_tables: None, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    start(cloud, stop=False)

    status, _headers, body = reconcile(http_event, lambda_context)

    assert status == 409
    assert body["message"].startswith(f"batch {BATCH} is still RUNNING")
    assert "Stop it first (StopExecution)" in body["message"]


def test_a_batch_stopped_moments_ago_is_reconciled_once_its_tasks_can_have_ended(
    cloud: Cloud,
    order_tables: None,
    http_event: EventFactory,
    lambda_context: FakeLambdaContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start(cloud, stop=True)
    monkeypatch.setenv("TASK_FUNCTION_TIMEOUT_SECONDS", "60")
    forget_loaded_environments()
    settling = reconcile(http_event, lambda_context)
    monkeypatch.setenv("TASK_FUNCTION_TIMEOUT_SECONDS", "1")
    forget_loaded_environments()
    time.sleep(1.1)

    status, _headers, report = reconcile(http_event, lambda_context)
    _, _, state = call(http_event("GET", f"/batches/{BATCH}"), lambda_context)

    settling_status, settling_headers, settling_body = settling
    assert settling_status == 409
    assert 1 <= settling_body["retry_after_seconds"] <= 61
    assert settling_headers["Retry-After"] == str(settling_body["retry_after_seconds"])
    assert status == 200
    assert report["counts"] == {"completed": 0, "compensated": 2, "already_final": 0, "held_elsewhere": 0}
    assert [(o["order_id"], o["action"], o["status"]) for o in report["orders"]] == [
        ("o-1", "COMPENSATED", "FAILED"),
        ("o-2", "COMPENSATED", "FAILED"),
    ]
    assert report["next_index"] is None
    assert (state["status"], state["open_orders"]) == (
        "ABORTED",
        {"count": 0, "order_ids": [], "reconciled": 2},
    )
    assert state["outcomes"] == {"counts": {"FAILED": 2}, "sources": {"reconcile": 2}, "open": 0}


def test_a_stopped_batch_reports_its_open_orders(
    cloud: Cloud, order_tables: None, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    start(cloud, stop=True)

    status, _headers, state = call(http_event("GET", f"/batches/{BATCH}"), lambda_context)

    assert status == 200
    assert state["status"] == "ABORTED"
    assert state["open_orders"] == {"count": 2, "order_ids": ["o-1", "o-2"], "reconciled": 0}
    assert state["outcomes"] == {"counts": {}, "sources": {}, "open": 2}


@pytest.mark.parametrize("body", [{"start_index": -1}, {"start_index": "2"}, [1]])
def test_a_malformed_reconcile_request_is_refused(
    cloud: Cloud, order_tables: None, http_event: EventFactory, lambda_context: FakeLambdaContext, body: Any
) -> None:
    status, _headers, refusal = reconcile(http_event, lambda_context, body)

    assert status == 400
    assert refusal["field"] == "start_index"
