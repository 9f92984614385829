"""A plain (not durable) function that chained invokes call."""

from __future__ import annotations

import time
from typing import Any


def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    time.sleep(float(event.get("hold_seconds", 0)))
    return {"doubled": event["value"] * 2}
