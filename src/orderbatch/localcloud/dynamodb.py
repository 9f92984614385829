"""moto's DynamoDB with what the local cloud relies on: atomic conditional writes, cheap transactions.

Per-table locks: moto checks a write's condition and applies it without a lock, so two concurrent
conditional writes to the same item could both succeed: a double effect AWS could not produce.
Serialising every DynamoDB call behind one lock fixes that but makes unrelated tables wait for each
other; here a call holds the locks of exactly the tables it names (a transaction or batch: all of them,
in one global order, so two never deadlock). Calls that name no table, and those that create or delete
one, hold the catalogue lock.

Transactions: moto's TransactWriteItems deep-copies every table it touches before it starts, to restore
them if the transaction is cancelled. That costs time and memory in proportion to the tables' size on
every transaction, so a batch's cost grew with the square of its orders. Here only the items the
transaction names are copied, and put back if it is cancelled; under the table locks nothing else can
change them in between, which is the isolation DynamoDB gives a transaction.
"""

from __future__ import annotations

import copy
import json
import threading
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

CATALOGUE = "\x00catalogue"
_CATALOGUE_OPERATIONS = frozenset({"CreateTable", "DeleteTable", "UpdateTable", "RestoreTableFromBackup"})
_TRANSACTION_PARTS = ("ConditionCheck", "Put", "Delete", "Update", "Get")
# Write request units per request, for items under 1 KB: transactions cost two per item.
_SINGLE_ITEM_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


def write_units(operation: str, body: bytes) -> int:
    """The write request units a request consumes, answered or refused (a failed condition costs too)."""
    if operation in _SINGLE_ITEM_WRITES:
        return 1
    if operation == "TransactWriteItems":
        return 2 * len(json.loads(body or b"{}").get("TransactItems", []))
    if operation == "BatchWriteItem":
        requests = json.loads(body or b"{}").get("RequestItems", {})
        return sum(len(items) for items in requests.values())
    return 0


def tables_named(operation: str, body: bytes) -> list[str]:
    """The lock names one request needs, in lock order."""
    try:
        request: Any = json.loads(body or b"{}")
    except ValueError:
        return [CATALOGUE]
    names: set[str] = set()
    if isinstance(request, dict):
        if isinstance(request.get("TableName"), str):
            names.add(request["TableName"])
        if isinstance(request.get("RequestItems"), dict):
            names.update(request["RequestItems"])
        for item in request.get("TransactItems") or []:
            for part in _TRANSACTION_PARTS:
                table = (item.get(part) or {}).get("TableName") if isinstance(item, dict) else None
                if isinstance(table, str):
                    names.add(table)
    if not names or operation in _CATALOGUE_OPERATIONS:
        names.add(CATALOGUE)
    return sorted(names)


class WriteCounter:
    """Write requests and write request units by operation, answered or refused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._units: Counter[str] = Counter()

    def record(self, operation: str, body: bytes) -> None:
        units = write_units(operation, body)
        if units:
            with self._lock:
                self._requests[operation] += 1
                self._units[operation] += units

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self._requests), Counter(self._units)


class TableLocks:
    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, name: str) -> threading.Lock:
        lock = self._locks.get(name)
        if lock is None:
            with self._guard:
                lock = self._locks.setdefault(name, threading.Lock())
        return lock

    @contextmanager
    def holding(self, operation: str, body: bytes) -> Iterator[None]:
        with ExitStack() as held:
            for name in tables_named(operation, body):
                held.enter_context(self._lock(name))
            yield


def register_hooks() -> None:
    """TransactWriteItems rolls back by item instead of by whole-table copies (install_dynamodb)."""
    from orderbatch.localcloud.moto_seam import hooks
    from orderbatch.localcloud.moto_seam.services import DynamoDBBackend, Table, dynamo_type, dynamodb_models

    def deepcopy_except_tables(value: Any, memo: dict[int, Any] | None = None) -> Any:
        # The only Table deep-copied in moto's DynamoDB models is the transaction's whole-table backup.
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    hooks.replace(
        dynamodb_models, "copy", types.SimpleNamespace(deepcopy=deepcopy_except_tables), concern="dynamodb"
    )

    hooks.replace(
        dynamo_type.LimitedSizeDict, "__setitem__", _set_attribute_within_the_item_limit, concern="dynamodb"
    )

    @hooks.around(DynamoDBBackend, "transact_write_items", concern="dynamodb")
    def transact_write_items(proceed: Any, self: Any, transact_items: list[dict[str, Any]]) -> None:
        before = _items_before(self, transact_items)
        try:
            proceed(self, transact_items)
        except Exception:
            _put_back(self, before)
            raise


# DynamoDB's item size limit: 400 KB of attribute names and values. moto refuses from 405,000 bytes, so an
# item AWS stores (up to 409,600 bytes) was refused locally.
ITEM_SIZE_LIMIT = 400 * 1024


def _set_attribute_within_the_item_limit(item: dict[str, Any], name: str, value: Any) -> None:
    """moto's ``LimitedSizeDict.__setitem__`` with AWS's limit: the item's size with this attribute set."""
    from orderbatch.localcloud.moto_seam.services import dynamo_type

    def size(attribute: Any) -> int:
        return (
            attribute.size()
            if type(attribute) is dynamo_type.DynamoType
            else dynamo_type.bytesize(str(attribute))
        )

    others = sum(
        dynamo_type.bytesize(key) + size(attribute) for key, attribute in item.items() if key != name
    )
    if others + dynamo_type.bytesize(name) + size(value) > ITEM_SIZE_LIMIT:
        raise dynamo_type.ItemSizeTooLarge
    dict.__setitem__(item, name, value)


def _items_before(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any, Any]]:
    """(table, hash key, range key, a copy of the item or None) for every item the transaction writes."""
    before = []
    for entry in transact_items:
        try:
            operation, request = next(iter(entry.items()))
            if operation not in {"Put", "Delete", "Update"}:
                continue
            table = backend.get_table(request["TableName"])
            if operation == "Put":
                key_names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
                key = {name: request["Item"][name] for name in key_names}
            else:
                key = request["Key"]
            hash_key, range_key = backend.get_keys_value(table, key)
        except Exception:  # malformed: moto rejects it before writing anything for it
            continue
        before.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))
    return before


def _put_back(backend: Any, before: list[tuple[Any, Any, Any, Any]]) -> None:
    for table, hash_key, range_key, item in reversed(before):
        if item is None:
            table.delete_item(hash_key, range_key)
        elif range_key is not None:
            table.items[hash_key][range_key] = item
        else:
            table.items[hash_key] = item
