"""A task function for the service integration tests: answers with the event it was given."""

from __future__ import annotations

from typing import Any


def handler(event: Any, context: Any) -> Any:
    return event
