"""Tiny Lambda handlers for the JSONata tests."""

from __future__ import annotations

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Echo the event and name the function, or raise when the event asks to.

    A plain ``Exception``, as in the AWS recordings the tests compare with (its error is ``Exception``).
    """
    if "raise" in event:
        raise Exception(event["raise"])
    return {"echo": event, "function": context.function_name}


def identity(event: Any, context: Any) -> Any:
    """Return the event unchanged."""
    return event
