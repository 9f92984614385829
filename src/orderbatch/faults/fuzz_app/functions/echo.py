"""The fuzzer's function: answers with what it was given, so an Invoke's payload is checked end to end."""

from typing import Any


def handler(event: Any, context: Any) -> Any:
    return event
