"""Counting DynamoDB write requests as they pass through the local cloud.

The local cloud has no request-observer hook, so the counter wraps the moto WSGI app the dispatcher
hands DynamoDB calls to (``LocalCloud._moto_app``). Every write request is counted whatever its answer:
a failed conditional write consumes a write unit too.
"""

from __future__ import annotations

import io
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

# Write request units per request, for items under 1 KB (all of this app's): transactions cost two per item.
_SINGLE_ITEM_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


def write_units(operation: str, body: bytes) -> int:
    if operation in _SINGLE_ITEM_WRITES:
        return 1
    if operation == "TransactWriteItems":
        return 2 * len(json.loads(body or b"{}").get("TransactItems", []))
    if operation == "BatchWriteItem":
        requests = json.loads(body or b"{}").get("RequestItems", {})
        return sum(len(items) for items in requests.values())
    return 0


class DynamoDBWriteCounter:
    """Write requests and write request units by operation, since installation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.units: Counter[str] = Counter()

    def install(self, cloud: Any) -> None:
        original: Callable[..., Iterable[bytes]] = cloud._moto_app

        def counting_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if target.startswith("DynamoDB_"):
                operation = target.rpartition(".")[2]
                if operation in _SINGLE_ITEM_WRITES or operation in ("TransactWriteItems", "BatchWriteItem"):
                    length = int(environ.get("CONTENT_LENGTH") or 0)
                    body = environ["wsgi.input"].read(length)
                    environ["wsgi.input"] = io.BytesIO(body)
                    self.record(operation, write_units(operation, body))
            return original(environ, start_response)

        cloud._moto_app = counting_app

    def record(self, operation: str, units: int) -> None:
        with self._lock:
            self.requests[operation] += 1
            self.units[operation] += units

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self.requests), Counter(self.units)
