"""The two functions LocalStack's recorded TestState cases invoke (its templates/services/lambdafunctions)."""

from __future__ import annotations

from typing import Any


def identity(event: Any, context: Any) -> Any:
    return event


def return_bytes_str(event: Any, context: Any) -> bytes:
    return b'"HelloWorld!"'
