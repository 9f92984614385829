"""Counting DynamoDB write requests as they pass through the local cloud.

The local cloud hands every DynamoDB request to `LocalCloudConfig.dynamodb_observer` before moto answers
it. Every write request is counted whatever its answer: a failed conditional write consumes a write unit too.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

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

    def record_request(self, operation: str, body: bytes) -> None:
        """A `LocalCloudConfig.dynamodb_observer`: counts write requests whatever their answer."""
        units = write_units(operation, body)
        if units:
            self.record(operation, units)

    def record(self, operation: str, units: int) -> None:
        with self._lock:
            self.requests[operation] += 1
            self.units[operation] += units

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self.requests), Counter(self.units)
