"""What a fault plan keys an invocation by: its item (attempts count per item) and its batch.

What the item and the batch of an event are is the app's business: whoever runs the app passes its
``EventKeys`` in. An event they find no item in is keyed by a hash of its payload. A durable function's
replay is keyed by its execution: the item is the execution's ARN and the batch is read from the input the
execution was started with, which the replay's event carries as its ``EXECUTION`` operation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from sam_local_cloud.json_types import JsonValue


def _no_key(event: JsonValue) -> str | None:
    return None


@dataclass(frozen=True)
class EventKeys:
    """What a fault plan counts attempts by (the item) and filters on (the item and the batch), read
    from an invocation's parsed event. Each returns None for an event that has none."""

    item: Callable[[JsonValue], str | None] = _no_key
    batch: Callable[[JsonValue], str | None] = _no_key

    def item_of(self, event: JsonValue, payload: bytes) -> str:
        key = self.item(event)
        return key if key is not None else hashlib.sha256(payload).hexdigest()

    def keys_of(self, event: JsonValue, payload: bytes) -> tuple[str, str | None]:
        """(item, batch) of an invocation's event.

        A durable function's replay is keyed by its execution: the item is the execution's ARN (so its
        attempts count the execution's replays) and the batch is read from the input the execution was
        started with, which the replay's event carries as its EXECUTION operation.
        """
        replay = durable_replay(event)
        if replay is not None:
            execution_arn, execution_input = replay
            return execution_arn, self.batch(execution_input)
        return self.item_of(event, payload), self.batch(event)


def durable_replay(event: JsonValue) -> tuple[str, JsonValue] | None:
    """(execution ARN, the execution's input) when ``event`` is a durable function's invocation input."""
    if not isinstance(event, dict):
        return None
    execution_arn = event.get("DurableExecutionArn")
    if not isinstance(execution_arn, str):
        return None
    state = event.get("InitialExecutionState")
    operations = state.get("Operations") if isinstance(state, dict) else None
    execution_input: JsonValue = None
    for operation in operations if isinstance(operations, list) else ():
        if isinstance(operation, dict) and operation.get("Type") == "EXECUTION":
            details = operation.get("ExecutionDetails") or {}
            payload = details.get("InputPayload") if isinstance(details, dict) else None
            try:
                execution_input = json.loads(payload) if isinstance(payload, str) else None
            except ValueError:
                execution_input = None
            break
    return execution_arn, execution_input
