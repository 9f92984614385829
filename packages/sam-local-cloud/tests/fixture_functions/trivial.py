"""The cheapest possible handler, for throughput measurements."""

from typing import Any


def handler(event: Any, context: Any) -> dict[str, bool]:
    return {"ok": True}
