"""Events for the task handlers, and a small driver that chains them as the state machine does."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from handlers import cancel_order, charge_payment, confirm_order, reserve_inventory, validate_order

EVENTS = Path(__file__).resolve().parents[2] / "events"

Line = tuple[str, int, str]


def an_order(order_id: str, *lines: Line, customer_id: str = "c-1", currency: str = "USD") -> dict[str, Any]:
    return {
        "order_id": order_id,
        "customer_id": customer_id,
        "currency": currency,
        "items": [{"sku": sku, "quantity": quantity, "unit_price": price} for sku, quantity, price in lines],
    }


def map_item(
    order: Any, *, batch_id: str = "b-1", item_index: int = 0, source_format: str = "inline"
) -> dict[str, Any]:
    return {"batch_id": batch_id, "item_index": item_index, "source_format": source_format, "order": order}


def sample_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return copy.deepcopy(event)


def run_order(item: dict[str, Any], context: Any) -> dict[str, Any]:
    """Validate, reserve, charge, confirm, cancelling on a failed step, as the state machine routes them."""
    state = validate_order.lambda_handler(item, context)
    if state["outcome"] != "VALID":
        return state
    for handler, expected in (
        (reserve_inventory, "RESERVED"),
        (charge_payment, "CHARGED"),
        (confirm_order, "SUCCEEDED"),
    ):
        state = handler.lambda_handler(state, context)
        if state["outcome"] != expected:
            return cancel_order.lambda_handler(state, context)
    return state
