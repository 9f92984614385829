"""Linearizability of the local cloud's DynamoDB: a history recorder, a sequential model, a checker.

The exactly-once claim rests on conditional writes being atomic under concurrency. A test that races
two writers once shows it once; this module proves it on any recorded history, as Knossos and
Porcupine do for real databases:

- **History**: every operation with its client, invoke and response times (``time.monotonic_ns``, one
  clock for every process of the machine), its request and its outcome: ``ok`` with the values
  DynamoDB returned, a definite ``fail`` (a refused condition or cancelled transaction, which changed
  nothing) or ``info``: a timeout or a lost connection, which may or may not have taken effect
  (Knossos's ``:info``; its response time is taken as infinite).
- **Model**: DynamoDB as a sequential store of a few items of one table (hash key ``pk``), with the
  requests the workload sends (``Request.kind``), each answering what DynamoDB's API reference says it
  answers: ``ReturnValues`` ALL_OLD/ALL_NEW, ``ReturnValuesOnConditionCheckFailure`` ALL_OLD on a refused
  condition, ``CancellationReasons`` (one per transaction item, ``None`` or ``ConditionalCheckFailed``
  with the item) on a cancelled transaction.
- **Checker**: Wing and Gong's search with Lowe's memoisation of (operations linearized, model state),
  as in Porcupine. Operations on disjoint keys are independent (P-compositionality), so a history is
  checked per connected component of the keys its operations touch (a transaction couples its keys).
- **Anomaly**: for a history that cannot be linearized, the smallest window that cannot be: it ends at
  the first response no order of the operations before it explains, and starts at the latest point
  from which no state the earlier operations can have left explains it (see ``smallest_window``).

The workload that records histories against a running DynamoDB is ``linearizability_workload``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

OK = "ok"
FAIL = "fail"
INFO = "info"
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
REASON_NONE = "None"
REASON_CONDITION = "ConditionalCheckFailed"
# Searches give up (verdict unknown) past this many steps, as Porcupine's timeout does.
DEFAULT_SEARCH_BUDGET = 2_000_000
INFINITE_NS = 2**63
# What a call still running at the instant a history is truncated at is taken as.
NOT_ANSWERED_YET = "not answered yet"

# An item as the model keeps it: its number attributes as int, its strings as str.
PlainItem = dict[str, int | str]
FrozenItem = tuple[tuple[str, int | str], ...]
State = tuple[tuple[str, FrozenItem], ...]

# Single-item requests; "transact" carries parts of the kinds TRANSACTION_PARTS.
SINGLE_KINDS = (
    "put_new",  # PutItem, attribute_not_exists(pk)
    "put_if_version",  # PutItem replacing the item, version = :v, ReturnValues ALL_OLD
    "add",  # UpdateItem ADD counter :n, ReturnValues ALL_NEW
    "add_if_version",  # UpdateItem ADD counter :n SET version = version + 1, version = :v, ALL_NEW
    "delete",  # DeleteItem, ReturnValues ALL_OLD
    "delete_if_version",  # DeleteItem, version = :v, ReturnValues ALL_OLD
    "get",  # GetItem, ConsistentRead
    "query",  # Query pk = :k, ConsistentRead
)
TRANSACTION_PARTS = ("put_new", "add_if_version", "add_if_exists", "check_version", "delete_if_version")
READS = frozenset({"get", "query"})


def freeze(item: Mapping[str, int | str] | None) -> FrozenItem | None:
    return None if item is None else tuple(sorted(item.items()))


@dataclass(frozen=True)
class Request:
    kind: str
    key: str = ""
    version: int = 0
    amount: int = 0
    owner: str = ""
    parts: tuple[Request, ...] = ()

    def keys(self) -> tuple[str, ...]:
        return tuple(part.key for part in self.parts) if self.kind == "transact" else (self.key,)

    def describe(self) -> str:
        if self.kind == "transact":
            return "transact[" + ", ".join(part.describe() for part in self.parts) + "]"
        details = [self.key]
        if "version" in self.kind:
            details.append(f"v={self.version}")
        if "add" in self.kind:
            details.append(f"+{self.amount}")
        if self.kind.startswith("put"):
            details.append(f"owner={self.owner}")
        return f"{self.kind}({', '.join(details)})"


@dataclass(frozen=True)
class Outcome:
    """What the client saw. ``item``: the item returned (ALL_OLD, ALL_NEW, the read, or the item a
    refused condition returned), None when absent; ``reasons``: a cancelled transaction's, in order."""

    status: str
    error: str = ""
    item: FrozenItem | None = None
    reasons: tuple[tuple[str, FrozenItem | None], ...] = ()

    def describe(self) -> str:
        if self.status == INFO:
            return f"indeterminate ({self.error})"
        shown = self.error or "ok"
        if self.reasons:
            shown += (
                " ["
                + ", ".join(code if item is None else f"{code} {dict(item)}" for code, item in self.reasons)
                + "]"
            )
        elif self.item is not None:
            shown += f" {dict(self.item)}"
        return shown


@dataclass(frozen=True)
class Operation:
    client: str
    invoke_ns: int
    response_ns: int
    request: Request
    outcome: Outcome

    @property
    def determinate(self) -> bool:
        return self.outcome.status != INFO

    @property
    def returned_ns(self) -> int:
        return self.response_ns if self.determinate else INFINITE_NS

    def describe(self, origin_ns: int = 0) -> str:
        returned = "?" if not self.determinate else f"{(self.response_ns - origin_ns) / 1e6:.3f}"
        return (
            f"[{(self.invoke_ns - origin_ns) / 1e6:.3f} .. {returned} ms] client {self.client}: "
            f"{self.request.describe()} -> {self.outcome.describe()}"
        )


# ---------------------------------------------------------------------------------------------- model
def _condition_holds(kind: str, item: Mapping[str, int | str] | None, version: int) -> bool:
    if kind == "put_new":
        return item is None
    if kind == "add_if_exists":
        return item is not None
    if kind in ("put_if_version", "add_if_version", "delete_if_version", "check_version"):
        return item is not None and item.get("version") == version
    return True


def _written(request: Request, item: PlainItem | None) -> PlainItem | None:
    """The item after ``request`` applied to ``item`` (its condition, if any, holding)."""
    kind = request.kind
    if kind == "put_new":
        return {"pk": request.key, "version": 1, "counter": 0, "owner": request.owner}
    if kind == "put_if_version":
        return {
            "pk": request.key,
            "version": request.version + 1,
            "counter": request.amount,
            "owner": request.owner,
        }
    if kind in ("add", "add_if_exists", "add_if_version"):
        updated: PlainItem = dict(item) if item is not None else {"pk": request.key}
        updated["counter"] = int(updated.get("counter", 0)) + request.amount
        if kind == "add_if_version":
            updated["version"] = int(updated["version"]) + 1
        return updated
    if kind in ("delete", "delete_if_version"):
        return None
    return item  # reads and condition checks


def apply(items: Mapping[str, PlainItem], request: Request) -> tuple[dict[str, PlainItem], Outcome]:
    """DynamoDB's sequential semantics: the items after ``request`` and what it answers."""
    after = dict(items)
    if request.kind == "transact":
        reasons = []
        for part in request.parts:
            old = items.get(part.key)
            holds = _condition_holds(part.kind, old, part.version)
            reasons.append((REASON_NONE, None) if holds else (REASON_CONDITION, freeze(old)))
        if any(code != REASON_NONE for code, _ in reasons):
            return after, Outcome(FAIL, TRANSACTION_CANCELED, reasons=tuple(reasons))
        for part in request.parts:
            _store(after, part.key, _written(part, items.get(part.key)))
        return after, Outcome(OK)
    old = items.get(request.key)
    if request.kind in READS:
        return after, Outcome(OK, item=freeze(old))
    if not _condition_holds(request.kind, old, request.version):
        return after, Outcome(FAIL, CONDITION_FAILED, item=freeze(old))
    new = _written(request, old)
    _store(after, request.key, new)
    returns_new = request.kind in ("add", "add_if_version")
    return after, Outcome(OK, item=freeze(new if returns_new else old) if request.kind != "put_new" else None)


def _store(items: dict[str, PlainItem], key: str, item: PlainItem | None) -> None:
    if item is None:
        items.pop(key, None)
    else:
        items[key] = item


def thaw(state: State) -> dict[str, PlainItem]:
    return {key: dict(item) for key, item in state}


def frozen_state(items: Mapping[str, Mapping[str, int | str]]) -> State:
    return tuple(sorted((key, tuple(sorted(item.items()))) for key, item in items.items()))


def explains(expected: Outcome, seen: Outcome) -> bool:
    """Whether what the client saw is what the model answers (an indeterminate outcome: anything)."""
    if seen.status == INFO:
        return True
    if seen.error == TRANSACTION_CANCELED and any(
        code not in (REASON_NONE, REASON_CONDITION) for code, _ in seen.reasons
    ):
        # Cancelled for another reason (a conflict, say): nothing was written, nothing is claimed.
        return True
    return expected == seen


def step(state: State, operation: Operation) -> State | None:
    """The state after ``operation`` at this point of an order, or None if its outcome contradicts it."""
    after, expected = apply(thaw(state), operation.request)
    if not explains(expected, operation.outcome):
        return None
    if operation.determinate and operation.outcome.status == FAIL:
        return state
    return frozen_state(after)


# ---------------------------------------------------------------------------------------------- checker
@dataclass
class SearchResult:
    linearizable: bool | None  # None: the search ran out of its budget
    steps: int
    # Configurations where every determinate operation is linearized: (state, indeterminate ones applied).
    ends: list[tuple[State, frozenset[int]]] = field(default_factory=list)


def search(
    operations: Sequence[Operation],
    initial: State = (),
    *,
    budget: int = DEFAULT_SEARCH_BUDGET,
    every_end: bool = False,
) -> SearchResult:
    """Wing-Gong-Lowe: is there an order of ``operations``, respecting real time, that the model explains?

    Calls and returns sit in one doubly linked list ordered by time (calls first at equal times: such
    operations overlap). The search linearizes the first call it can, lifting it and its return from the
    list; meeting a return whose call is not linearized means that order is wrong, so it backtracks.
    (linearized set, state) pairs already explored are never explored again. Indeterminate operations
    return at infinity, so they may be linearized anywhere after their call, or never. With
    ``every_end`` the search enumerates every reachable end configuration instead of stopping at one.
    """
    events = _EventList(operations)
    remaining = sum(op.determinate for op in operations)
    indeterminate_mask = sum(1 << index for index, op in enumerate(operations) if not op.determinate)
    state, linearized, steps = initial, 0, 0
    explored: set[tuple[int, State]] = set()
    trail: list[tuple[int, State]] = []
    result = SearchResult(linearizable=False, steps=0)
    ends: set[tuple[State, frozenset[int]]] = set()
    entry = events.first()
    while True:
        steps += 1
        if steps > budget:
            result.linearizable, result.steps = None, steps
            return result
        if remaining == 0 and not every_end:
            result.linearizable, result.steps = True, steps
            return result
        if remaining == 0:
            applied = linearized & indeterminate_mask
            ends.add((state, frozenset(i for i in range(len(operations)) if applied >> i & 1)))
        if events.is_call(entry):
            index = events.operation_at(entry)
            after = step(state, operations[index])
            if after is not None and (linearized | 1 << index, after) not in explored:
                explored.add((linearized | 1 << index, after))
                trail.append((entry, state))
                state, linearized = after, linearized | 1 << index
                remaining -= operations[index].determinate
                events.lift(index)
                entry = events.first()
            else:
                entry = events.following[entry]
            continue
        # A return (its call not linearized) or the end of the list: this order cannot go on.
        if not trail:
            result.linearizable, result.steps, result.ends = bool(ends), steps, sorted(ends, key=repr)
            return result
        entry, state = trail.pop()
        index = events.operation_at(entry)
        linearized &= ~(1 << index)
        remaining += operations[index].determinate
        events.unlift(index)
        entry = events.following[entry]


class _EventList:
    """Calls and returns in one doubly linked list ordered by time (calls first at equal times)."""

    END = -1

    def __init__(self, operations: Sequence[Operation]) -> None:
        self.events = sorted(
            [(op.invoke_ns, 0, index) for index, op in enumerate(operations)]
            + [(op.returned_ns, 1, index) for index, op in enumerate(operations)]
        )
        size = len(self.events)
        # Positions 0..size-1 are the events; position ``size`` is the list's head.
        self.head = size
        self.following = [*range(1, size), self.END, 0 if size else self.END]
        self.preceding = [size, *range(0, size - 1), self.END] if size else [self.END]
        self.call_at = [0] * len(operations)
        self.return_at = [0] * len(operations)
        for position, (_, is_return, index) in enumerate(self.events):
            (self.return_at if is_return else self.call_at)[index] = position

    def first(self) -> int:
        return self.following[self.head]

    def is_call(self, position: int) -> bool:
        return position != self.END and not self.events[position][1]

    def operation_at(self, position: int) -> int:
        return self.events[position][2]

    def lift(self, index: int) -> None:
        """Take an operation's call and return out of the list."""
        for position in (self.call_at[index], self.return_at[index]):
            self.following[self.preceding[position]] = self.following[position]
            if self.following[position] != self.END:
                self.preceding[self.following[position]] = self.preceding[position]

    def unlift(self, index: int) -> None:
        """Put them back where they were (the reverse of ``lift``)."""
        for position in (self.return_at[index], self.call_at[index]):
            self.following[self.preceding[position]] = position
            if self.following[position] != self.END:
                self.preceding[self.following[position]] = position


def partitions(operations: Iterable[Operation]) -> list[list[Operation]]:
    """The operations grouped by connected component of the keys they touch (P-compositionality)."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    operations = list(operations)
    for op in operations:
        first, *others = op.request.keys()
        for other in others:
            parent[root(other)] = root(first)
    groups: dict[str, list[Operation]] = {}
    for op in operations:
        groups.setdefault(root(op.request.keys()[0]), []).append(op)
    return list(groups.values())


def truncated(operations: Sequence[Operation], at_ns: int) -> list[Operation]:
    """The history as seen at ``at_ns``: later calls dropped, calls still pending indeterminate.

    Whatever order linearizes the whole history also linearizes this one, so the first such instant at
    which a history cannot be linearized is where its anomaly ends.
    """
    kept = []
    for op in operations:
        if op.invoke_ns > at_ns:
            continue
        if op.determinate and op.response_ns > at_ns:
            op = _indeterminate(op)
        kept.append(op)
    return kept


@dataclass
class Anomaly:
    """A window of operations no order explains, whatever state the operations before it left."""

    window: list[Operation]
    failing: Operation  # the operation whose response ends the window
    before: int  # operations of the partition completed before the window

    def describe(self) -> str:
        origin = min(op.invoke_ns for op in self.window)
        lines = [
            f"not linearizable: {len(self.window)} operations (after {self.before} that completed before "
            "them) that no order explains; the last response none explains is "
            + self.failing.describe(origin)
        ]
        lines += ["  " + op.describe(origin) for op in sorted(self.window, key=lambda op: op.invoke_ns)]
        return "\n".join(lines)


def smallest_window(operations: Sequence[Operation], budget: int = DEFAULT_SEARCH_BUDGET) -> Anomaly | None:
    """The smallest window of a non-linearizable partition that cannot be linearized.

    End: the first response time t at which the history truncated there fails (found by bisection: a
    truncation of a linearizable history is linearizable). Start: the latest instant s such that, for
    every end configuration of the operations completed before s (those pending at s indeterminate,
    applied or not), the rest cannot be linearized from it. That makes the window a certificate: any
    order of the whole history would cut at s into one of those configurations and an order of the rest.
    """
    responses = sorted({op.response_ns for op in operations if op.determinate})
    low, high = 0, len(responses) - 1
    if high < 0 or search(truncated(operations, responses[high]), budget=budget).linearizable is not False:
        return None
    while low < high:
        middle = (low + high) // 2
        if search(truncated(operations, responses[middle]), budget=budget).linearizable is False:
            high = middle
        else:
            low = middle + 1
    end_ns = responses[low]
    history = truncated(operations, end_ns)
    failing = next(op for op in operations if op.determinate and op.response_ns == end_ns)
    starts = sorted(
        {op.response_ns for op in history if op.determinate and op.response_ns < end_ns}, reverse=True
    )
    for start_ns in [*starts, -1]:
        earlier = [op for op in history if op.determinate and op.response_ns <= start_ns]
        pending = [op for op in history if op not in earlier and op.invoke_ns <= start_ns]
        rest = [op for op in history if op not in earlier]
        prefix = earlier + [_indeterminate(op) for op in pending]
        ends = search(prefix, budget=budget, every_end=True).ends if prefix else [((), frozenset())]
        explained = False
        for state, applied in ends:
            done = {id(pending[index - len(earlier)]) for index in applied}
            remainder = [op for op in rest if id(op) not in done]
            if search(remainder, state, budget=budget).linearizable is not False:
                explained = True
                break
        if not explained:
            return Anomaly(window=rest, failing=failing, before=len(earlier))
    return Anomaly(window=history, failing=failing, before=0)


def _indeterminate(op: Operation) -> Operation:
    return Operation(op.client, op.invoke_ns, op.response_ns, op.request, Outcome(INFO, NOT_ANSWERED_YET))


@dataclass
class Verdict:
    operations: int
    partitions: int
    anomalies: list[Anomaly]
    unknown: int  # partitions whose search ran out of budget
    steps: int

    @property
    def linearizable(self) -> bool:
        return not self.anomalies and not self.unknown


def check(operations: Sequence[Operation], budget: int = DEFAULT_SEARCH_BUDGET) -> Verdict:
    """Check a history, partition by partition; each one that fails reported by its smallest window."""
    anomalies: list[Anomaly] = []
    unknown = steps = 0
    groups = partitions(operations)
    for group in groups:
        result = search(group, budget=budget)
        steps += result.steps
        if result.linearizable is None:
            unknown += 1
        elif not result.linearizable:
            anomaly = smallest_window(group, budget)
            anomalies.append(anomaly or Anomaly(window=list(group), failing=group[-1], before=0))
    return Verdict(len(operations), len(groups), anomalies, unknown, steps)
