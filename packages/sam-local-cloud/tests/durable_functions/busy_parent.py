"""A durable function whose chained invoke starts while its own invocation still runs: a parallel branch
holds the invocation (and its concurrency) in a step while the other branch invokes Doubler. At an account
quota of 1, Lambda's invoke of Doubler is throttled until the parent's invocation suspends."""

from __future__ import annotations

import time
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    hold_seconds = float(event.get("hold_seconds", 1))

    def invoke_doubler(branch: DurableContext) -> Any:
        return branch.invoke("Doubler", {"value": event["value"]}, name="double")

    def hold(branch: DurableContext) -> Any:
        return branch.step(lambda _: time.sleep(hold_seconds) or hold_seconds, name="hold")

    results = context.parallel([invoke_doubler, hold], name="both").get_results()
    return {"doubled": results[0], "held": results[1]}
