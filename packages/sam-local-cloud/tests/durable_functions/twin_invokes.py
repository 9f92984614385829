"""The crash matrix's "with duplicate" shape in small: a map of two items with the same payload, each
invoking Doubler, and a failed invoke tried again once after a one-second wait (as the app's retriers do).
The result lists each item's answer and the error types of the invokes that failed."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, MapConfig
from aws_durable_execution_sdk_python.exceptions import InvokeError


def _invoke_twice(context: DurableContext, value: int) -> dict[str, Any]:
    failures = []
    for attempt in (1, 2):
        try:
            answer = context.invoke("Doubler", {"value": value}, name=f"double (attempt {attempt})")
            return {"answer": answer, "failures": failures}
        except InvokeError as error:
            failures.append(error.error_type)
            if attempt == 1:
                context.wait(Duration.from_seconds(1), name="backoff")
    return {"answer": None, "failures": failures}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> list[dict[str, Any]]:
    value = int(event["value"])
    return context.map(
        [value, value],
        lambda branch, item, _index, _all: _invoke_twice(branch, item),
        name="twins",
        config=MapConfig(max_concurrency=2),
    ).get_results()
