"""Raises from a helper, so an unhandled error has a frame of the handler and one of the helper."""

from __future__ import annotations

from typing import Any


def _check(order: dict[str, Any]) -> None:
    raise ValueError(f"order {order.get('id')} has no items")


def handler(event: Any, context: Any) -> None:
    _check(event)
