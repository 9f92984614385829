"""moto's DynamoDB with what the local cloud relies on: atomic conditional writes, cheap transactions.

Per-table locks: moto checks a write's condition and applies it without a lock, so two concurrent
conditional writes to the same item could both succeed: a double effect AWS could not produce.
Serialising every DynamoDB call behind one lock fixes that but makes unrelated tables wait for each
other; here a call holds the locks of exactly the tables it names (a transaction or batch: all of them,
in one global order, so two never deadlock). Calls that name no table, and those that create or delete
one, hold the catalogue lock.

Queries: moto's Query of a table sorts every item of the table, then keeps the partition's, so reading
one order's items cost in proportion to the whole table (an audit of N orders, N log N per order). Here a
Query of the table itself starts from the partition's own items, as DynamoDB reads them. A Scan sorted the
whole table for every page and then skipped to where the page starts; here the table's order is kept until
a write adds or removes an item, and a page starts at its key by bisection.

Transactions: moto's TransactWriteItems deep-copies every table it touches before it starts, to restore
them if the transaction is cancelled. That costs time and memory in proportion to the tables' size on
every transaction, so a batch's cost grew with the square of its orders. Here only the items the
transaction names are copied, and put back if it is cancelled; under the table locks nothing else can
change them in between, which is the isolation DynamoDB gives a transaction.
"""

from __future__ import annotations

import bisect
import copy
import json
import threading
import types
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

    from sam_local_cloud.json_types import JsonValue
    from sam_local_cloud.moto_seam.services import DynamoDBBackend, Item, Table, dynamo_type

    # Where a Scan page starts in a table's scan order: the hash key, or hash and range key.
    ScanKey: TypeAlias = dynamo_type.DynamoType | tuple[dynamo_type.DynamoType, dynamo_type.DynamoType]
    # What moto's Table.query and Table.scan answer: the page's items, the count scanned, the last key.
    QueryAnswer: TypeAlias = tuple[list[Item], int, dict[str, Any] | None]
    # (table, hash key, range key, a copy of the item or None), to put back when a transaction fails.
    ItemBefore: TypeAlias = tuple[Table, dynamo_type.DynamoType, dynamo_type.DynamoType | None, Item | None]

# The table and partition a Query of a table (not an index) reads, while moto answers it on this thread;
# the table and start key of a Scan of a table.
_QUERIED_PARTITION = threading.local()
_SCANNED_FROM = threading.local()

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
        request: JsonValue = json.loads(body or b"{}")
    except ValueError:
        return [CATALOGUE]
    names: set[str] = set()
    if isinstance(request, dict):
        if isinstance(table_name := request.get("TableName"), str):
            names.add(table_name)
        if isinstance(request_items := request.get("RequestItems"), dict):
            names.update(request_items)
        transact_items = request.get("TransactItems")
        for item in transact_items if isinstance(transact_items, list) else []:
            for part in _TRANSACTION_PARTS:
                part_request = item.get(part) if isinstance(item, dict) else None
                table = part_request.get("TableName") if isinstance(part_request, dict) else None
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

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._units.clear()


class RequestCpu:
    """CPU time of the thread that answered each request, and requests, by operation; a conditional
    UpdateItem (or PutItem) is counted apart from a plain one, as it costs a condition's evaluation too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = {}
        self._requests: Counter[str] = Counter()

    @staticmethod
    def kind(operation: str, body: bytes) -> str:
        conditional = operation in _SINGLE_ITEM_WRITES and b'"ConditionExpression"' in body
        return f"{operation} (conditional)" if conditional else operation

    def record(self, kind: str, seconds: float) -> None:
        with self._lock:
            self._seconds[kind] = self._seconds.get(kind, 0.0) + seconds
            self._requests[kind] += 1

    def snapshot(self) -> dict[str, tuple[float, int]]:
        with self._lock:
            return {kind: (self._seconds[kind], self._requests[kind]) for kind in self._requests}


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
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import DynamoDBBackend, Table, dynamo_type, dynamodb_models

    def deepcopy_except_tables(value: object, memo: dict[int, object] | None = None) -> object:
        # The only Table deep-copied in moto's DynamoDB models is the transaction's whole-table backup.
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    hooks.replace(
        dynamodb_models, "copy", types.SimpleNamespace(deepcopy=deepcopy_except_tables), concern="dynamodb"
    )

    hooks.replace(
        dynamo_type.LimitedSizeDict, "__setitem__", _set_attribute_within_the_item_limit, concern="dynamodb"
    )

    _register_read_hooks()

    @hooks.around(DynamoDBBackend, "transact_write_items", concern="dynamodb")
    def transact_write_items(
        proceed: Callable[..., None], self: DynamoDBBackend, transact_items: list[dict[str, Any]]
    ) -> None:
        before = _items_before(self, transact_items)
        try:
            proceed(self, transact_items)
        except Exception:
            _put_back(self, before)
            raise


def _register_read_hooks() -> None:
    """Query and Scan read in proportion to the items they return, not to the table."""
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import Table

    @hooks.around(Table, "query", concern="dynamodb")
    def query(
        proceed: Callable[..., QueryAnswer],
        self: Table,
        hash_key: dynamo_type.DynamoType | None,
        *args: object,
        **kwargs: object,
    ) -> QueryAnswer:
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[6] if len(args) > 6 else None)
        if index_name or hash_key is None:
            return proceed(self, hash_key, *args, **kwargs)
        _QUERIED_PARTITION.current = (self, hash_key)
        try:
            return proceed(self, hash_key, *args, **kwargs)
        finally:
            _QUERIED_PARTITION.current = None

    @hooks.around(Table, "scan", concern="dynamodb")
    def scan(
        proceed: Callable[..., QueryAnswer], self: Table, *args: object, **kwargs: object
    ) -> QueryAnswer:
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[4] if len(args) > 4 else None)
        if index_name:
            return proceed(self, *args, **kwargs)
        start = kwargs.get("exclusive_start_key", args[2] if len(args) > 2 else None)
        _SCANNED_FROM.current = (self, start)
        try:
            return proceed(self, *args, **kwargs)
        finally:
            _SCANNED_FROM.current = None

    @hooks.around(Table, "all_items", concern="dynamodb")
    def all_items(proceed: Callable[[Table], list[Item]], self: Table) -> list[Item]:
        queried = getattr(_QUERIED_PARTITION, "current", None)
        if queried is not None and queried[0] is self:
            # moto keeps the query's own items and sorts them by range key: the partition is all it needs.
            stored = self.items.get(queried[1])
            if stored is None:
                return []
            return list(stored.values()) if self.range_key_attr else [stored]
        scanned = getattr(_SCANNED_FROM, "current", None)
        if scanned is not None and scanned[0] is self:
            return _items_after(self, scanned[1], proceed)
        return proceed(self)

    for write in ("put_item", "delete_item"):

        @hooks.around(Table, write, concern="dynamodb")
        def changed(
            proceed: Callable[..., Item | None], self: Table, *args: object, **kwargs: object
        ) -> Item | None:
            try:
                return proceed(self, *args, **kwargs)
            finally:
                _keys_changed(self)


# DynamoDB's item size limit: 400 KB of attribute names and values. moto refuses from 405,000 bytes, so an
# item AWS stores (up to 409,600 bytes) was refused locally.
ITEM_SIZE_LIMIT = 400 * 1024


# Set while moto's Item.__init__ fills a new item (``sized_when_complete``).
_FILLING_NEW_ITEM = threading.local()


def _set_attribute_within_the_item_limit(item: dict[str, object], name: str, value: object) -> None:
    """moto's ``LimitedSizeDict.__setitem__`` with AWS's limit: the item's size with this attribute set."""
    from sam_local_cloud.moto_seam.services import dynamo_type

    if getattr(_FILLING_NEW_ITEM, "active", False):
        dict.__setitem__(item, name, value)
        return
    others = _item_size((key, attribute) for key, attribute in item.items() if key != name)
    if others + dynamo_type.bytesize(name) + _attribute_size(value) > ITEM_SIZE_LIMIT:
        raise dynamo_type.ItemSizeTooLarge
    dict.__setitem__(item, name, value)


@contextmanager
def sized_when_complete(item: Item) -> Iterator[None]:
    """Around moto's ``Item.__init__``: the new item is sized once, when all its attributes are set.

    moto sets them one by one, and each set sized every other attribute again: quadratic in an item's
    attributes, about a twelfth of the data plane's CPU. The complete item is over the limit exactly when
    one of those sets would have found it over (sizes only add up)."""
    from sam_local_cloud.moto_seam.services import dynamo_type

    _FILLING_NEW_ITEM.active = True
    try:
        yield
    finally:
        _FILLING_NEW_ITEM.active = False
    if _item_size(item.attrs.items()) > ITEM_SIZE_LIMIT:
        raise dynamo_type.ItemSizeTooLarge


def _item_size(attributes: Iterable[tuple[str, object]]) -> int:
    """DynamoDB's size of an item: its attributes' names and values."""
    from sam_local_cloud.moto_seam.services import dynamo_type

    return sum(dynamo_type.bytesize(key) + _attribute_size(value) for key, value in attributes)


def _attribute_size(attribute: object) -> int:
    from sam_local_cloud.moto_seam.services import dynamo_type

    if type(attribute) is dynamo_type.DynamoType:
        size: int = attribute.size()
        return size
    return int(dynamo_type.bytesize(str(attribute)))


def _items_before(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[ItemBefore]:
    """(table, hash key, range key, a copy of the item or None) for every item the transaction writes."""
    before: list[ItemBefore] = []
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


def _put_back(backend: DynamoDBBackend, before: list[ItemBefore]) -> None:
    for table, hash_key, range_key, item in reversed(before):
        _keys_changed(table)
        if item is None:
            table.delete_item(hash_key, range_key)
        elif range_key is not None:
            table.items[hash_key][range_key] = item
        else:
            # moto annotates Table.items for range-keyed tables only, and ignores its own same assignment.
            table.items[hash_key] = item  # type: ignore[assignment]


# A table's scan order and the version of its key set it was taken at, kept on the table itself: it lives
# and dies with the table, as the table's own derived state.
_SCAN_ORDER = "_sam_local_cloud_scan_order"
_KEY_VERSION = "_sam_local_cloud_key_version"


def _keys_changed(table: Table) -> None:
    setattr(table, _KEY_VERSION, getattr(table, _KEY_VERSION, 0) + 1)


def _items_after(
    table: Table, start: dict[str, Any] | None, all_items: Callable[[Table], list[Item]]
) -> list[Item]:
    """The table's items in moto's scan order (by hash key, then range key) from where a page resumes.

    The order is kept until a write adds, replaces or removes an item (an update changes an item in
    place: its key and place stay)."""
    version = getattr(table, _KEY_VERSION, 0)
    cached = getattr(table, _SCAN_ORDER, None)
    if cached is None or cached[0] != version:
        items = all_items(table)
        keys = [(item.hash_key, item.range_key) if item.range_key else item.hash_key for item in items]
        cached = (version, items, keys)
        setattr(table, _SCAN_ORDER, cached)
    _, items, keys = cached
    first = _start_position(table, start, keys)
    return items[first:] if first else list(items)


def _start_position(table: Table, start: dict[str, Any] | None, keys: list[ScanKey]) -> int:
    """Where a page that resumes after ``start`` begins; 0 (moto skips to it) when the key is not whole."""
    from sam_local_cloud.moto_seam.services import dynamo_type

    if not start or table.hash_key_attr not in start:
        return 0
    try:
        hash_key = dynamo_type.DynamoType(start[table.hash_key_attr])
        if not table.range_key_attr:
            return bisect.bisect_right(keys, hash_key)
        if table.range_key_attr not in start:
            return 0
        return bisect.bisect_right(keys, (hash_key, dynamo_type.DynamoType(start[table.range_key_attr])))
    except Exception:  # a start key of the wrong shape: moto's own answer for it
        return 0
