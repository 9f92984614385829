"""Order validation: every field rule, the reason it writes, and CSV items. No AWS."""

from __future__ import annotations

from typing import Any

import pytest

from order_processing.validation import MAX_REASON_CHARS, check_order, parse_csv_items


def an_order(**overrides: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "order_id": "o-1",
        "customer_id": "c-1",
        "currency": "USD",
        "items": [{"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"}],
    }
    order.update(overrides)
    return order


def a_line(**overrides: Any) -> dict[str, Any]:
    return {"sku": "SKU-001", "quantity": 1, "unit_price": "1.00"} | overrides


def test_a_valid_order_is_normalised() -> None:
    check = check_order(
        an_order(
            currency="usd", items=[a_line(quantity=2, unit_price=9.99), a_line(sku="SKU-002", unit_price=5)]
        ),
        "inline",
        0,
    )
    assert check.is_valid
    assert check.reason is None
    assert check.order is not None
    assert check.order.as_json() == {
        "order_id": "o-1",
        "customer_id": "c-1",
        "currency": "USD",
        "items": [
            {"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"},
            {"sku": "SKU-002", "quantity": 1, "unit_price": "5"},
        ],
    }


@pytest.mark.parametrize(
    ("overrides", "expected_reason"),
    [
        ({"customer_id": ""}, "order o-1 is invalid: customer_id: must be a non-blank string of at most 128"),
        ({"customer_id": 7}, "order o-1 is invalid: customer_id: must be a non-blank string"),
        (
            {"currency": "US"},
            "order o-1 is invalid: currency: must be a 3-letter ISO 4217 code such as USD, got 'US'",
        ),
        ({"currency": "U5D"}, "order o-1 is invalid: currency: must be a 3-letter ISO 4217 code"),
        ({"items": []}, "order o-1 is invalid: items: must hold 1 to 50 lines, got 0"),
        ({"items": "SKU-001:1:1"}, "order o-1 is invalid: items: must be a list of lines"),
        (
            {"items": [a_line()] * 2},
            "items: SKU SKU-001 appears on lines items[0] and items[1]; list it once",
        ),
        ({"items": [a_line(quantity=0)]}, "items[0].quantity: must be a whole number of at least 1, got 0"),
        ({"items": [a_line(quantity=-3)]}, "items[0].quantity: must be a whole number of at least 1, got -3"),
        (
            {"items": [a_line(quantity=1.5)]},
            "items[0].quantity: must be a whole number of at least 1, got 1.5",
        ),
        (
            {"items": [a_line(quantity=True)]},
            "items[0].quantity: must be a whole number of at least 1, got True",
        ),
        (
            {"items": [a_line(quantity="two")]},
            "items[0].quantity: must be a whole number of at least 1, got 'two'",
        ),
        (
            {"items": [a_line(unit_price="-0.01")]},
            "items[0].unit_price: must be a decimal number from 0 up to",
        ),
        ({"items": [a_line(unit_price="NaN")]}, "items[0].unit_price: must be a decimal number from 0 up to"),
        (
            {"items": [a_line(unit_price=float("inf"))]},
            "items[0].unit_price: must be a decimal number from 0",
        ),
        ({"items": [a_line(unit_price="abc")]}, "items[0].unit_price: must be a decimal number from 0 up to"),
        ({"items": [a_line(unit_price=False)]}, "items[0].unit_price: must be a decimal number"),
        ({"items": [a_line(unit_price=[1])]}, "items[0].unit_price: must be a decimal number"),
        (
            {"items": [a_line(unit_price="0.0000001")]},
            "items[0].unit_price: must have at most 6 decimal places",
        ),
        ({"items": [a_line(sku="")]}, "items[0].sku: must be 1-64 letters, digits, '.', '_' or '-', got ''"),
        ({"items": [a_line(sku="SKU 1")]}, "items[0].sku: must be 1-64 letters"),
        ({"items": ["SKU-001"]}, "items[0]: must be an object, got 'SKU-001'"),
    ],
)
def test_each_bad_field_is_named_with_the_order_id(overrides: dict[str, Any], expected_reason: str) -> None:
    check = check_order(an_order(**overrides), "inline", 4)
    assert not check.is_valid
    assert check.order_id == "o-1"
    assert check.reason is not None
    assert check.reason.startswith("order o-1 is invalid: ")
    assert expected_reason in check.reason


def test_more_than_fifty_lines_do_not_fit_one_transaction() -> None:
    lines = [a_line(sku=f"SKU-{n:03d}") for n in range(51)]
    check = check_order(an_order(items=lines), "json", 0)
    assert check.reason == "order o-1 is invalid: items: must hold 1 to 50 lines, got 51"
    assert check_order(an_order(items=lines[:50]), "json", 0).is_valid


def test_every_bad_field_is_reported_at_once() -> None:
    check = check_order(
        an_order(
            currency="dollars", customer_id=None, items=[a_line(quantity=0), a_line(sku="B", unit_price="x")]
        ),
        "inline",
        0,
    )
    assert check.problems == (
        "customer_id: must be a non-blank string of at most 128 characters, got None",
        "currency: must be a 3-letter ISO 4217 code such as USD, got 'dollars'",
        "items[0].quantity: must be a whole number of at least 1, got 0",
        "items[1].unit_price: must be a decimal number from 0 up to (not including) 1000000000000, got 'x'",
    )


def test_missing_fields_are_required() -> None:
    check = check_order({"order_id": "o-9"}, "inline", 0)
    assert check.reason == (
        "order o-9 is invalid: customer_id: is required; currency: is required; items: is required"
    )


@pytest.mark.parametrize(
    ("order", "source_format", "item_index", "subject"),
    [
        ({"customer_id": "c-1"}, "inline", 3, "item 3"),
        ({"order_id": "", "customer_id": "c-1"}, "json", 0, "item 0"),
        ({"order_id": "o 1"}, "json", 7, "item 7"),
        ({"order_id": "x" * 65}, "inline", 1, "item 1"),
        ({"order_id": 42}, "inline", 2, "item 2"),
        ({"order_id": "", "items": ""}, "csv", 0, "line 2"),
        ({"order_id": "bad/id"}, "csv", 9, "line 11"),
    ],
)
def test_without_a_usable_id_the_reason_names_the_item_or_csv_line(
    order: dict[str, Any], source_format: Any, item_index: int, subject: str
) -> None:
    check = check_order(order, source_format, item_index)
    assert check.order_id is None
    assert check.reason is not None
    assert check.reason.startswith(f"{subject} is invalid: order_id: ")


@pytest.mark.parametrize("order", [None, "o-1", 17, ["o-1"]])
def test_an_order_that_is_not_an_object_is_rejected_without_raising(order: Any) -> None:
    check = check_order(order, "inline", 5)
    assert check.order_id is None
    assert check.reason == f"item 5 is invalid: the order must be an object, got {order!r}"


def test_the_order_id_may_use_letters_digits_underscore_and_dash_up_to_64() -> None:
    assert check_order(an_order(order_id="A_z-9" + "x" * 59), "inline", 0).is_valid


def test_csv_items_are_parsed_from_text_and_named_by_line() -> None:
    row = {"order_id": "o-7", "customer_id": "c-7", "currency": "EUR", "items": "SKU-001:2:9.99;SKU-002:1:5"}
    check = check_order(row, "csv", 3)
    assert check.order is not None
    assert [line.model_dump(mode="json") for line in check.order.items] == [
        {"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"},
        {"sku": "SKU-002", "quantity": 1, "unit_price": "5"},
    ]
    bad = check_order(row | {"items": "SKU-001:2:9.99;SKU-002:x:5;SKU-003:1"}, "csv", 3)
    assert bad.reason == (
        "order o-7 (line 5) is invalid: items[1].quantity: must be a whole number of at least 1, got 'x'; "
        "items[2]: 'SKU-003:1' is not SKU:QUANTITY:UNIT_PRICE"
    )


def test_parse_csv_items_tolerates_spaces_and_a_trailing_separator() -> None:
    assert parse_csv_items(" SKU-001 : 2 : 9.99 ; SKU-002:1:5; ") == [
        {"sku": "SKU-001", "quantity": "2", "unit_price": "9.99"},
        {"sku": "SKU-002", "quantity": "1", "unit_price": "5"},
    ]
    assert parse_csv_items("") == []
    assert parse_csv_items("a:b") == ["a:b"]


def test_a_csv_order_and_the_same_json_order_are_the_same_content() -> None:
    csv_check = check_order(
        {"order_id": "o-1", "customer_id": "c-1", "currency": "usd", "items": "SKU-001:2:9.990"}, "csv", 0
    )
    json_check = check_order(an_order(items=[a_line(quantity=2, unit_price=9.99)]), "json", 0)
    assert csv_check.content_hash == json_check.content_hash


def test_a_long_reason_is_cut_so_outcomes_fit_the_execution_state() -> None:
    lines = [{"sku": f"SKU-{n:03d}", "quantity": 0, "unit_price": "1"} for n in range(1, 41)]

    check = check_order(an_order(items=lines), "inline", 0)

    assert check.reason is not None
    assert len(check.reason) == MAX_REASON_CHARS
    assert check.reason.startswith("order o-1 is invalid: ")
    assert check.reason.endswith("…")
