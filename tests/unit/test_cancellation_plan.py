"""What Cancel order decides to record, from its request alone. No AWS."""

from __future__ import annotations

import json
from typing import Any

from order_processing.contract import OrderStatus
from order_processing.models import CancelRequest, Code, Outcome
from order_processing.steps import plan_cancellation

ORDER = {
    "order_id": "o-1",
    "customer_id": "c-1",
    "currency": "USD",
    "items": [{"sku": "SKU-001", "quantity": 2, "unit_price": 9.99}],
}


def request(**fields: Any) -> CancelRequest:
    return CancelRequest.model_validate({"batch_id": "b-1", "item_index": 4, "order": ORDER} | fields)


def test_a_business_failure_keeps_its_code_and_reason() -> None:
    plan = plan_cancellation(
        request(order_id="o-1", outcome="FAILED", code="OUT_OF_STOCK", reason="order o-1: not enough stock")
    )
    assert (plan.state.outcome, plan.state.code, plan.state.reason) == (
        Outcome.FAILED,
        Code.OUT_OF_STOCK,
        "order o-1: not enough stock",
    )
    assert plan.final.status is OrderStatus.FAILED
    assert plan.state.total == "19.98"
    assert plan.state.order["items"][0]["unit_price"] == "9.99"


def test_a_rejected_order_stays_rejected() -> None:
    plan = plan_cancellation(
        request(order_id="o-1", outcome="REJECTED", code="UNKNOWN_SKU", reason="no such SKU")
    )
    assert (plan.state.outcome, plan.final.status, plan.final.code) == (
        Outcome.REJECTED,
        OrderStatus.REJECTED,
        "UNKNOWN_SKU",
    )


def test_a_caught_error_becomes_task_failed_with_the_lambda_error_message() -> None:
    cause = json.dumps({"errorMessage": "boom", "errorType": "RuntimeError", "stackTrace": ["..."]})
    plan = plan_cancellation(request(outcome="RESERVED", error={"Error": "RuntimeError", "Cause": cause}))
    assert (plan.state.outcome, plan.state.code) == (Outcome.FAILED, Code.TASK_FAILED)
    assert plan.state.reason == "order o-1 failed: RuntimeError: boom"
    assert (plan.final.error, plan.final.cause) == ("RuntimeError", cause)


def test_a_long_cause_is_shortened_in_the_reason_only() -> None:
    cause = "x" * 1000
    plan = plan_cancellation(request(error={"Error": "States.Timeout", "Cause": cause}))
    assert plan.state.reason is not None
    assert len(plan.state.reason) < 400
    assert plan.final.cause == cause


def test_a_conflicting_order_is_rejected_as_such() -> None:
    plan = plan_cancellation(
        request(error={"Error": "IdempotencyValidationError", "Cause": "Payload mismatch"})
    )
    assert (plan.state.outcome, plan.state.code, plan.state.reason) == (
        Outcome.REJECTED,
        Code.CONFLICTING_ORDER,
        "order o-1 was already submitted with different content",
    )


def test_without_a_usable_id_the_item_is_named_and_nothing_can_be_keyed() -> None:
    plan = plan_cancellation(
        request(
            order={"order_id": "no spaces allowed"}, source_format="csv", error={"Error": "Lambda.Unknown"}
        )
    )
    assert plan.order_id is None
    assert plan.state.reason == "line 6 failed: Lambda.Unknown"
