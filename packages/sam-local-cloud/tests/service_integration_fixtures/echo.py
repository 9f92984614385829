"""A task function for the service integration tests: answers with the event it was given."""

from __future__ import annotations

from typing import Any


def handler(event: Any, context: Any) -> Any:
    if isinstance(event, dict) and str(event.get("rawPath", "")).endswith("/empty"):
        return {"statusCode": 200, "body": ""}  # an endpoint that acknowledges with no body
    return event
