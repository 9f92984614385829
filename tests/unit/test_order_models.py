"""Totals, content hashes and the order state shape. No AWS."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from order_processing.models import Order, OrderState, Outcome, PlacedOrderState, content_hash


def an_order(*lines: tuple[str, Any, Any], **overrides: Any) -> Order:
    return Order.model_validate(
        {
            "order_id": "o-1",
            "customer_id": "c-1",
            "currency": "USD",
            "items": [
                {"sku": sku, "quantity": quantity, "unit_price": price} for sku, quantity, price in lines
            ],
        }
        | overrides
    )


@pytest.mark.parametrize(
    ("lines", "total"),
    [
        ((("A", 2, "9.99"),), "19.98"),
        ((("A", 2, "9.99"), ("B", 1, 5)), "24.98"),
        ((("A", 3, "0.333"),), "1.00"),
        ((("A", 1, "0.005"),), "0.01"),  # half up, as a till would round
        ((("A", 1, "0"),), "0.00"),
        ((("A", 1_000, "1E+3"),), "1000000.00"),
    ],
)
def test_the_total_is_the_sum_of_lines_to_the_cent(
    lines: tuple[tuple[str, Any, Any], ...], total: str
) -> None:
    order = an_order(*lines)
    assert order.total_text == total
    assert order.total == Decimal(total)


def test_prices_serialise_in_plain_notation() -> None:
    order = an_order(("A", 1, "1E+1"), ("B", 1, "2.50"), ("C", 1, 0.1), ("D", 1, "0.00"))
    assert [line["unit_price"] for line in order.as_json()["items"]] == ["10", "2.5", "0.1", "0"]


def test_normalising_twice_changes_nothing() -> None:
    order = an_order(("A", "2", 9.99), currency="eur")
    assert Order.model_validate(order.as_json()) == order
    assert Order.model_validate(order.as_json()).as_json() == order.as_json()


def test_the_content_hash_ignores_key_order_and_how_the_price_was_written() -> None:
    as_text = an_order(("A", 2, "9.99"), ("B", 1, "5.00"))
    as_numbers = an_order(("A", 2, 9.99), ("B", 1, 5))
    reordered = Order.model_validate(
        {
            "items": [
                {"unit_price": "9.990", "quantity": 2, "sku": "A"},
                {"quantity": "1", "sku": "B", "unit_price": "5"},
            ],
            "currency": "usd",
            "customer_id": "c-1",
            "order_id": "o-1",
        }
    )
    assert as_text.content_hash == as_numbers.content_hash == reordered.content_hash
    assert len(as_text.content_hash) == 64


def test_the_content_hash_changes_with_the_content() -> None:
    base = an_order(("A", 2, "9.99"))
    assert base.content_hash != an_order(("A", 3, "9.99")).content_hash
    assert base.content_hash != an_order(("A", 2, "9.98")).content_hash
    assert base.content_hash != an_order(("A", 2, "9.99"), customer_id="c-2").content_hash
    assert content_hash({"b": 1, "a": [1, 2]}) == content_hash({"a": [1, 2], "b": 1})
    assert content_hash({"a": [1, 2]}) != content_hash({"a": [2, 1]})


def test_an_order_state_always_carries_every_key_the_state_machine_reads() -> None:
    state = PlacedOrderState.for_valid_order("b-1", 3, an_order(("A", 2, "9.99")))
    event = state.to_event()
    assert event == {
        "batch_id": "b-1",
        "item_index": 3,
        "order_id": "o-1",
        "order": {
            "order_id": "o-1",
            "customer_id": "c-1",
            "currency": "USD",
            "items": [{"sku": "A", "quantity": 2, "unit_price": "9.99"}],
        },
        "total": "19.98",
        "outcome": "VALID",
        "code": None,
        "reason": None,
    }
    assert OrderState.model_validate(event).outcome is Outcome.VALID
    assert PlacedOrderState.model_validate(event) == state
