"""A small durable workflow: two steps, a one-second wait, a map with max_concurrency 2 and a chained
invoke of a plain function. Its result names what each part produced, so a test can check every one."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, MapConfig


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    items = list(event.get("items", []))
    total = context.step(lambda _: sum(items), name="total")
    count = context.step(lambda _: len(items), name="count")
    context.wait(Duration.from_seconds(1), name="pause")
    squares = context.map(
        items,
        lambda _ctx, item, _index, _all: item * item,
        name="squares",
        config=MapConfig(max_concurrency=2),
    ).get_results()
    doubled = context.invoke(
        event.get("target", "Doubler"),
        {"value": total, "hold_seconds": event.get("hold_seconds", 0)},
        name="double",
    )
    return {"total": total, "count": count, "squares": squares, "doubled": doubled}
