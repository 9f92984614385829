"""A durable function that suspends on a callback until someone answers it (or the execution is stopped)."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    callback = context.create_callback(name="approval")
    decision = callback.result()
    return {"order": event.get("order"), "decision": decision}
