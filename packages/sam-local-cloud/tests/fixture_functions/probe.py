"""A test handler: records that its body ran, then sleeps, fails or echoes as the event asks."""

from __future__ import annotations

import json
import os
import time
from typing import Any


def handler(event: Any, context: Any) -> dict[str, Any]:
    record = {"function": context.function_name, "event": event, "pid": os.getpid()}
    run_log = os.environ.get("PROBE_RUN_LOG")
    if run_log:
        with open(run_log, "a") as log:
            log.write(json.dumps(record) + "\n")
    print(json.dumps({"message": "task body ran", "function": context.function_name}))
    if isinstance(event, dict):
        time.sleep(float(event.get("sleep", 0)))
        if event.get("raise"):
            raise LookupError(event["raise"])
    return {
        "event": event,
        "pid": os.getpid(),
        "module": handler.__module__,
        "qualname": handler.__qualname__,
        "function_name": context.function_name,
        "remaining_ms": context.get_remaining_time_in_millis(),
        "environment": {
            key: os.environ.get(key) for key in ("AWS_LAMBDA_FUNCTION_NAME", "AWS_ENDPOINT_URL", "GREETING")
        },
    }
