"""Validate order when the holder of an order ID died after claiming it and a duplicate ran meanwhile.

Found by the crash-point matrix (docs/faults.md): item 0 claims the order, its runtime is killed before
Powertools saves the result, and its duplicate, item 1, runs once the abandoned record has expired and
stores its own DUPLICATE outcome under the order ID. Item 0's retry replays that outcome; the order
record says item 0 holds the order, so item 0 goes on as the valid order instead of a second duplicate
(which would leave the order processed by nobody).
"""

from __future__ import annotations

from typing import Any

from task_events import an_order, map_item

from handlers import validate_order
from handlers.stores import order_records
from order_processing.orders import Claimant
from order_processing.validation import check_order
from orderbatch.audit import AuditedOrder, BatchLocations, audit_orders


def test_the_holder_replaying_its_duplicates_outcome_goes_on_as_the_valid_order(
    task_env: Any, lambda_context: Any
) -> None:
    order = an_order("o-crashed", ("SKU-001", 1, "5.00"))
    content_hash = check_order(order, "inline", 0).content_hash
    # What item 0's killed run left: the claim, and no idempotency record (the abandoned one expired).
    order_records(validate_order.Environment.load()).claim("o-crashed", Claimant("b-1", 0, content_hash))

    duplicate = validate_order.lambda_handler(map_item(order, item_index=1), lambda_context)
    holder = validate_order.lambda_handler(map_item(order, item_index=0), lambda_context)

    assert (duplicate["item_index"], duplicate["outcome"], duplicate["code"]) == (
        1,
        "DUPLICATE",
        "DUPLICATE_ORDER",
    )
    assert "duplicates the order sent by batch b-1 item 0" in duplicate["reason"]
    assert (holder["item_index"], holder["outcome"], holder["code"]) == (0, "VALID", None)
    assert task_env.order_record("o-crashed")["item_index"] == 0


def test_a_third_item_replaying_the_duplicates_outcome_is_a_duplicate_of_the_holder(
    task_env: Any, lambda_context: Any
) -> None:
    order = an_order("o-crashed", ("SKU-001", 1, "5.00"))
    content_hash = check_order(order, "inline", 0).content_hash
    order_records(validate_order.Environment.load()).claim("o-crashed", Claimant("b-1", 0, content_hash))
    validate_order.lambda_handler(map_item(order, item_index=1), lambda_context)

    third = validate_order.lambda_handler(map_item(order, batch_id="b-2", item_index=5), lambda_context)

    assert (third["batch_id"], third["outcome"]) == ("b-2", "DUPLICATE")
    assert "duplicates the order sent by batch b-1 item 0" in third["reason"]


def _audit_with_both_items_reporting_duplicate(task_env: Any, batch_id: str) -> Any:
    order = an_order("o-crashed", ("SKU-001", 1, "5.00"))
    names = task_env.names
    locations = BatchLocations("arn:aws:states:us-east-1:123456789012:stateMachine:m", names.orders,
                               names.reservations, names.payments)  # fmt: skip
    duplicate = {"outcome": "DUPLICATE", "code": "DUPLICATE_ORDER"}
    items = [AuditedOrder(0, order, duplicate), AuditedOrder(1, order, duplicate)]
    return audit_orders(batch_id, items, locations, dynamodb=task_env.client)


def test_the_audit_finds_the_order_lost_when_its_holder_in_this_batch_reports_a_duplicate(
    task_env: Any,
) -> None:
    order = an_order("o-crashed", ("SKU-001", 1, "5.00"))
    order_records(validate_order.Environment.load()).claim(
        "o-crashed", Claimant("b-1", 0, check_order(order, "inline", 0).content_hash)
    )

    report = _audit_with_both_items_reporting_duplicate(task_env, "b-1")

    assert report.lost == ["o-crashed"]
    assert [v.check for v in report.violations] == ["lost"]
    assert "nobody processed it" in report.violations[0].detail


def test_the_audit_accepts_duplicates_of_an_order_another_batch_processed(task_env: Any) -> None:
    order = an_order("o-earlier", ("SKU-001", 1, "5.00"))
    order_records(validate_order.Environment.load()).claim(
        "o-crashed", Claimant("b-0", 3, check_order(order, "inline", 0).content_hash)
    )

    report = _audit_with_both_items_reporting_duplicate(task_env, "b-1")

    assert report.lost == []
    assert report.violations == []
