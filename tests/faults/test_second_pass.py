"""The second pass, end to end: an order whose step is throttled until its 429 retrier runs out is run
again after the batch, from that step, exactly once; one still throttled there fails and is compensated.

The ``throttle`` fault answers chosen calls of chosen orders with HTTP 429 before admission, so the run
does not depend on timing a neighbour. The throttle retrier is shortened (2 retries of 1 s) to keep the
test quick: a step's first three calls are its first pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fault_matrix import FEW_ORDERS, Scenario, orders_for, run_batch, start_cloud

from sam_local_cloud import LocalCloud
from sam_local_cloud.aws_limits import THROTTLE_ERROR

pytestmark = pytest.mark.e2e

THROTTLE_RETRIES = 2
FIRST_PASS_CALLS = 1 + THROTTLE_RETRIES


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    cloud = start_cloud(
        parameter_overrides={
            "ThrottleRetryMaxAttempts": str(THROTTLE_RETRIES),
            "ThrottleRetryIntervalSeconds": "1",
            "ThrottleRetryMaxDelaySeconds": "1",
        }
    )
    try:
        yield cloud
    finally:
        cloud.stop()


def throttled(order_id: str, calls: int) -> dict[str, Any]:
    return {"kind": "throttle", "attempts": list(range(1, calls + 1)), "item_ids": [order_id]}


def execution_output(cloud: LocalCloud, batch_id: str) -> dict[str, Any]:
    arn = cloud.stack.outputs["OrderBatchStateMachineArn"].replace(":stateMachine:", ":execution:")
    execution = cloud.client("stepfunctions").describe_execution(executionArn=f"{arn}:{batch_id}")
    output: dict[str, Any] = json.loads(execution["output"])
    return output


def order_record(cloud: LocalCloud, order_id: str) -> dict[str, Any]:
    table = cloud.stack.outputs["OrdersTableName"]
    item = cloud.client("dynamodb").get_item(TableName=table, Key={"order_id": {"S": order_id}})["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


@pytest.mark.parametrize("source", ["inline", "s3"])
def test_orders_throttled_past_their_retrier_run_again_after_the_batch_and_none_is_doubled(
    cloud: LocalCloud, source: str
) -> None:
    batch_id = f"second-pass-{source}"
    orders = orders_for(batch_id, 6 if source == "inline" else FEW_ORDERS + 2)
    at_validate, at_charge, at_confirm, twice = (order["order_id"] for order in orders[:4])
    plan = {
        "functions": {
            # Throttled through the first pass at three different steps; the second pass's first call runs.
            "ValidateOrderFunction": [throttled(at_validate, FIRST_PASS_CALLS)],
            "ChargePaymentFunction": [
                throttled(at_charge, FIRST_PASS_CALLS),
                # Throttled through both passes at its charge: failed, and its stock released.
                throttled(twice, 2 * FIRST_PASS_CALLS),
            ],
            "ConfirmOrderFunction": [throttled(at_confirm, FIRST_PASS_CALLS)],
        }
    }
    with Scenario(cloud, "second pass", "as shipped", plan) as scenario:
        run = run_batch(cloud, scenario, batch_id, orders)

    report = run.report
    assert (report.lost, report.doubled, report.violations) == ([], [], [])
    assert report.outcomes == {"SUCCEEDED": len(orders) - 1, "FAILED": 1}
    # Every step body ran once per order that reached it, deferred or not: a 429 never runs the function,
    # and the second pass resumes at the throttled step instead of starting the order over.
    assert report.body_runs_beyond_one == 0
    assert report.body_runs_by_step["validate_order"] == {"1": len(orders)}
    assert report.body_runs_by_step["charge_payment"] == {"1": len(orders) - 1}
    assert report.body_runs_by_step["cancel_order"] == {"1": 1}
    failed = order_record(cloud, twice)
    assert (failed["status"], failed["error"]) == ("FAILED", THROTTLE_ERROR)
    summary = execution_output(cloud, batch_id)
    assert summary["second_pass"] == 4
    assert (summary["succeeded"], summary["failed"]) == (len(orders) - 1, 1)
    assert run.figures.throttles == 5 * FIRST_PASS_CALLS
