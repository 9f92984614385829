"""Each task handler against moto: the outcomes it returns and the rows it leaves."""

from __future__ import annotations

from typing import Any

import pytest
from task_events import an_order, map_item, run_order, sample_event

from handlers import cancel_order, charge_payment, confirm_order, reserve_inventory, validate_order


def test_the_sample_events_take_an_order_to_success(task_env: Any, lambda_context: Any) -> None:
    state = validate_order.lambda_handler(sample_event("validate_order"), lambda_context)
    assert state == sample_event("reserve_inventory")

    state = reserve_inventory.lambda_handler(state, lambda_context)
    assert state == sample_event("charge_payment")

    state = charge_payment.lambda_handler(state, lambda_context)
    assert state == sample_event("confirm_order")

    state = confirm_order.lambda_handler(state, lambda_context)
    assert state["outcome"] == "SUCCEEDED"
    assert task_env.order_record("o-1001")["status"] == "SUCCEEDED"
    assert task_env.stock("SKU-001") == 1_000_000 - 2
    assert [(e["entry_id"], e["kind"], e["amount"]) for e in task_env.ledger("o-1001")] == [
        ("charge", "CHARGE", "24.98")
    ]


# ---------------------------------------------------------------- validate


def test_an_invalid_order_with_an_id_is_rejected_and_recorded(task_env: Any, lambda_context: Any) -> None:
    order = an_order("o-bad", ("SKU-001", 0, "9.99")) | {"currency": "US"}
    state = validate_order.lambda_handler(map_item(order, item_index=2), lambda_context)
    reason = (
        "order o-bad is invalid: currency: must be a 3-letter ISO 4217 code such as USD, got 'US'; "
        "items[0].quantity: must be a whole number of at least 1, got 0"
    )
    assert state == {
        "batch_id": "b-1",
        "item_index": 2,
        "order_id": "o-bad",
        "order": order,
        "total": None,
        "outcome": "REJECTED",
        "code": "INVALID_ORDER",
        "reason": reason,
    }
    record = task_env.order_record("o-bad")
    assert (record["status"], record["code"], record["reason"], record["item_index"]) == (
        "REJECTED",
        "INVALID_ORDER",
        reason,
        2,
    )


@pytest.mark.parametrize(
    ("order", "source_format", "reason"),
    [
        (None, "inline", "item 4 is invalid: the order must be an object, got None"),
        ("o-1", "json", "item 4 is invalid: the order must be an object, got 'o-1'"),
        ({"order_id": 5, "items": []}, "inline", "item 4 is invalid: order_id: must be 1-64 letters"),
        (
            {"order_id": "", "customer_id": "", "currency": "", "items": ""},
            "csv",
            "line 6 is invalid: order_id: ",
        ),
    ],
)
def test_an_order_without_a_usable_id_is_reported_and_nothing_is_written(
    task_env: Any, lambda_context: Any, task_log: Any, order: Any, source_format: str, reason: str
) -> None:
    state = validate_order.lambda_handler(
        map_item(order, item_index=4, source_format=source_format), lambda_context
    )
    assert (state["outcome"], state["code"], state["order_id"]) == ("REJECTED", "INVALID_ORDER", None)
    assert state["reason"].startswith(reason)
    assert task_env.idempotency_records() == []
    assert task_env.client.scan(TableName=task_env.names.orders)["Items"] == []
    assert task_log.runs() == 0


def test_a_csv_row_is_validated_like_a_json_order(task_env: Any, lambda_context: Any) -> None:
    row = {
        "order_id": "o-csv",
        "customer_id": "c-1",
        "currency": "usd",
        "items": "SKU-001:2:9.99;SKU-002:1:5",
    }
    state = validate_order.lambda_handler(map_item(row, item_index=0, source_format="csv"), lambda_context)
    assert state["outcome"] == "VALID"
    assert state["total"] == "24.98"
    assert state["order"]["items"][1] == {"sku": "SKU-002", "quantity": 1, "unit_price": "5"}


def test_the_same_order_in_two_batch_items_is_a_duplicate(task_env: Any, lambda_context: Any) -> None:
    order = an_order("o-dup", ("SKU-001", 1, "3.50"))
    first = validate_order.lambda_handler(map_item(order, item_index=0), lambda_context)
    again_in_batch = validate_order.lambda_handler(map_item(order, item_index=5), lambda_context)
    other_batch = validate_order.lambda_handler(map_item(order, batch_id="b-2", item_index=0), lambda_context)
    first_replayed = validate_order.lambda_handler(map_item(order, item_index=0), lambda_context)

    assert first["outcome"] == first_replayed["outcome"] == "VALID"
    assert (again_in_batch["outcome"], again_in_batch["code"], again_in_batch["item_index"]) == (
        "DUPLICATE",
        "DUPLICATE_ORDER",
        5,
    )
    assert again_in_batch["reason"] == "order o-dup duplicates the order sent by batch b-1 item 0"
    assert (other_batch["outcome"], other_batch["batch_id"]) == ("DUPLICATE", "b-2")
    record = task_env.order_record("o-dup")
    assert (record["batch_id"], record["item_index"], record["status"]) == ("b-1", 0, "RECEIVED")


# ---------------------------------------------------------------- reserve


def test_an_unknown_sku_rejects_the_order_and_reserves_nothing(task_env: Any, lambda_context: Any) -> None:
    item = map_item(an_order("o-unk", ("SKU-001", 1, "1"), ("SKU-404", 1, "1")))
    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(item, lambda_context), lambda_context
    )
    assert (state["outcome"], state["code"]) == ("REJECTED", "UNKNOWN_SKU")
    assert state["reason"] == "order o-unk: items[1].sku SKU-404 not in the inventory; nothing was reserved"
    assert task_env.reservations("o-unk") == []
    assert task_env.stock("SKU-001") == 1_000_000


def test_short_stock_fails_the_order_and_reserves_nothing(task_env: Any, lambda_context: Any) -> None:
    item = map_item(an_order("o-short", ("SKU-001", 1, "1"), ("SKU-LOW", 6, "1")))
    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(item, lambda_context), lambda_context
    )
    assert (state["outcome"], state["code"]) == ("FAILED", "OUT_OF_STOCK")
    assert state["reason"] == (
        "order o-short: not enough stock for items[1] SKU-LOW (6 requested, 5 in stock); nothing was reserved"
    )
    assert task_env.reservations("o-short") == []
    assert (task_env.stock("SKU-001"), task_env.stock("SKU-LOW")) == (1_000_000, 5)


def test_a_reservation_takes_stock_once_per_line(task_env: Any, lambda_context: Any) -> None:
    item = map_item(an_order("o-res", ("SKU-003", 4, "1"), ("SKU-LOW", 5, "1")), batch_id="b-9")
    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(item, lambda_context), lambda_context
    )
    assert state["outcome"] == "RESERVED"
    assert (task_env.stock("SKU-003"), task_env.stock("SKU-LOW")) == (1_000_000 - 4, 0)
    rows = task_env.reservations("o-res")
    assert [
        (r["reservation_id"], r["line"], r["sku"], r["quantity"], r["status"], r["batch_id"]) for r in rows
    ] == [
        ("line-1", 1, "SKU-003", 4, "RESERVED", "b-9"),
        ("line-2", 2, "SKU-LOW", 5, "RESERVED", "b-9"),
    ]


# ---------------------------------------------------------------- charge, confirm


def test_an_order_above_the_charge_limit_is_declined(task_env: Any, lambda_context: Any) -> None:
    final = run_order(map_item(an_order("o-big", ("SKU-001", 2, "600"))), lambda_context)
    assert (final["outcome"], final["code"]) == ("FAILED", "PAYMENT_DECLINED")
    assert (
        final["reason"]
        == "order o-big: payment declined, total 1200.00 USD is above the charge limit 1000.00"
    )
    assert task_env.ledger("o-big") == []
    assert task_env.stock("SKU-001") == 1_000_000
    assert task_env.order_record("o-big")["status"] == "FAILED"


def test_a_successful_order_is_charged_once_and_recorded(task_env: Any, lambda_context: Any) -> None:
    final = run_order(map_item(an_order("o-ok", ("SKU-004", 3, "2.10")), batch_id="b-7"), lambda_context)
    assert final["outcome"] == "SUCCEEDED"
    [charge] = task_env.ledger("o-ok")
    assert {k: charge[k] for k in ("entry_id", "kind", "amount", "currency", "batch_id", "status")} == {
        "entry_id": "charge",
        "kind": "CHARGE",
        "amount": "6.30",
        "currency": "USD",
        "batch_id": "b-7",
        "status": "CHARGED",
    }
    assert task_env.order_record("o-ok")["status"] == "SUCCEEDED"


# ---------------------------------------------------------------- cancel


def charged_order(order_id: str, context: Any, *lines: tuple[str, int, str]) -> dict[str, Any]:
    state = validate_order.lambda_handler(map_item(an_order(order_id, *lines)), context)
    state = reserve_inventory.lambda_handler(state, context)
    state = charge_payment.lambda_handler(state, context)
    assert state["outcome"] == "CHARGED"
    return state


def test_compensation_releases_stock_refunds_and_records_the_error(
    task_env: Any, lambda_context: Any
) -> None:
    state = charged_order("o-comp", lambda_context, ("SKU-005", 2, "4.00"), ("SKU-LOW", 3, "1.00"))
    assert (task_env.stock("SKU-005"), task_env.stock("SKU-LOW")) == (1_000_000 - 2, 2)
    error = sample_event("cancel_order")["error"]

    final = cancel_order.lambda_handler(state | {"error": error}, lambda_context)

    assert (final["outcome"], final["code"], final["order_id"]) == ("FAILED", "TASK_FAILED", "o-comp")
    assert final["reason"] == (
        "order o-comp failed: ClientError: "
        "An error occurred (InternalServerError) when calling the PutItem operation"
    )
    assert (task_env.stock("SKU-005"), task_env.stock("SKU-LOW")) == (1_000_000, 5)
    assert {r["status"] for r in task_env.reservations("o-comp")} == {"RELEASED"}
    ledger = {entry["entry_id"]: entry for entry in task_env.ledger("o-comp")}
    assert ledger["charge"]["status"] == "REFUNDED"
    assert (ledger["refund"]["kind"], ledger["refund"]["amount"]) == ("REFUND", "11.00")
    record = task_env.order_record("o-comp")
    assert (record["status"], record["code"], record["error"], record["cause"]) == (
        "FAILED",
        "TASK_FAILED",
        "ClientError",
        error["Cause"],
    )


def test_compensation_runs_any_number_of_times_with_one_effect(
    task_env: Any, lambda_context: Any, configure: Any
) -> None:
    state = charged_order("o-again", lambda_context, ("SKU-006", 2, "4.00"))
    configure(POWERTOOLS_IDEMPOTENCY_DISABLED="1")
    for _ in range(3):
        final = cancel_order.lambda_handler(
            state | {"outcome": "FAILED", "code": "OUT_OF_STOCK"}, lambda_context
        )
        assert (final["outcome"], final["code"]) == ("FAILED", "OUT_OF_STOCK")
    assert task_env.stock("SKU-006") == 1_000_000
    assert sorted(entry["entry_id"] for entry in task_env.ledger("o-again")) == ["charge", "refund"]


def test_a_rejected_order_stays_rejected_when_cancelled(task_env: Any, lambda_context: Any) -> None:
    final = run_order(map_item(an_order("o-rej", ("SKU-404", 1, "1"))), lambda_context)
    assert (final["outcome"], final["code"]) == ("REJECTED", "UNKNOWN_SKU")
    assert task_env.order_record("o-rej")["status"] == "REJECTED"


def test_cancel_after_a_failed_validation_records_the_failure(task_env: Any, lambda_context: Any) -> None:
    item = map_item(an_order("o-crash", ("SKU-001", 1, "1")), item_index=3)
    error = {"Error": "Lambda.Unknown", "Cause": "The function crashed"}
    final = cancel_order.lambda_handler(item | {"error": error}, lambda_context)
    assert (final["outcome"], final["code"], final["order_id"], final["item_index"]) == (
        "FAILED",
        "TASK_FAILED",
        "o-crash",
        3,
    )
    assert final["reason"] == "order o-crash failed: Lambda.Unknown: The function crashed"
    assert task_env.order_record("o-crash")["status"] == "FAILED"


def test_cancel_never_undoes_another_items_order(task_env: Any, lambda_context: Any) -> None:
    holder = charged_order("o-held", lambda_context, ("SKU-007", 1, "2.00"))
    conflicting = map_item(an_order("o-held", ("SKU-007", 9, "2.00")), item_index=8)
    error = {"Error": "IdempotencyValidationError", "Cause": "Payload does not match stored record"}

    final = cancel_order.lambda_handler(conflicting | {"error": error}, lambda_context)

    assert (final["outcome"], final["code"], final["item_index"]) == ("REJECTED", "CONFLICTING_ORDER", 8)
    assert task_env.stock("SKU-007") == 1_000_000 - 1
    assert [entry["entry_id"] for entry in task_env.ledger("o-held")] == ["charge"]
    assert task_env.order_record("o-held")["item_index"] == holder["item_index"] == 0
    # The holder's own compensation is still possible afterwards.
    timeout = {"Error": "States.Timeout", "Cause": "Task timed out"}
    assert cancel_order.lambda_handler(holder | {"error": timeout}, lambda_context)["outcome"] == "FAILED"
    assert task_env.stock("SKU-007") == 1_000_000


def test_cancel_leaves_a_succeeded_order_alone(task_env: Any, lambda_context: Any) -> None:
    state = confirm_order.lambda_handler(
        charged_order("o-done", lambda_context, ("SKU-008", 1, "1")), lambda_context
    )
    final = cancel_order.lambda_handler(state | {"error": {"Error": "States.Timeout"}}, lambda_context)
    assert final["outcome"] == "SUCCEEDED"
    assert task_env.stock("SKU-008") == 1_000_000 - 1
    assert [entry["status"] for entry in task_env.ledger("o-done")] == ["CHARGED"]


def test_an_order_cancelled_first_cannot_be_confirmed(task_env: Any, lambda_context: Any) -> None:
    from order_processing.orders import OrderRecordConflictError

    state = charged_order("o-late", lambda_context, ("SKU-009", 1, "1"))
    cancel_order.lambda_handler(state | {"error": {"Error": "States.Timeout"}}, lambda_context)
    with pytest.raises(
        OrderRecordConflictError, match="order o-late cannot be confirmed: its record is FAILED"
    ):
        confirm_order.lambda_handler(state, lambda_context)
