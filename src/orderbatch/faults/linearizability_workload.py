"""The workload that records linearizability histories against a running DynamoDB, and the runs of it.

Clients (threads, and optionally processes each with clients of their own) race on a few hot keys
of one table with random requests from a seeded ``random.Random``; every call is recorded as an
``Operation`` of ``linearizability``'s history and every history is checked. Two properties are also
asserted directly: one winner per contended ``attribute_not_exists`` put, and a counter equal to the
sum of its acknowledged ADDs (plus some subset of the indeterminate ones).

``run_on_local_cloud`` starts a local cloud of its own (one table, from a template written here) and is
what ``orderbatch faults linearizability`` runs.
"""

from __future__ import annotations

import multiprocessing
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from orderbatch.faults.dynamodb_wire import DynamoDBWireClient
from orderbatch.faults.linearizability import (
    CONDITION_FAILED,
    FAIL,
    INFO,
    OK,
    TRANSACTION_CANCELED,
    TRANSACTION_PARTS,
    Anomaly,
    Operation,
    Outcome,
    Request,
    check,
    freeze,
)
from sam_local_cloud import DUMMY_CREDENTIALS

TABLE_LOGICAL_ID = "LinearizabilityTable"
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Description: one table for orderbatch faults linearizability
Resources:
  LinearizabilityTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - {AttributeName: pk, AttributeType: S}
      KeySchema:
        - {AttributeName: pk, KeyType: HASH}
"""
# How often each request kind is drawn: writes dominate, so that reads and refusals have races to see.
KIND_WEIGHTS = {
    "put_new": 10,
    "put_if_version": 8,
    "add": 14,
    "add_if_version": 14,
    "delete": 3,
    "delete_if_version": 5,
    "get": 12,
    "query": 6,
    "transact": 14,
}
DEFAULT_HOT_KEYS = 4
_READ_TIMEOUT_SECONDS = 30
# Histories recorded between two checks (and progress lines).
_HISTORIES_PER_ROUND = 50


@dataclass(frozen=True)
class Target:
    """Where the clients send their calls: a DynamoDB endpoint and one of its tables."""

    endpoint: str
    table: str
    region: str = "us-east-1"

    def client(self) -> Any:
        # One attempt: a retried write whose first answer was lost could apply twice, which the history
        # would have to call one operation; a failed call is recorded as indeterminate instead.
        return boto3.session.Session().client(
            "dynamodb",
            endpoint_url=self.endpoint,
            region_name=self.region,
            config=Config(
                retries={"total_max_attempts": 1, "mode": "standard"},
                read_timeout=_READ_TIMEOUT_SECONDS,
                max_pool_connections=4,
            ),
            **DUMMY_CREDENTIALS,
        )

    def wire_client(self) -> DynamoDBWireClient:
        """The same calls as ``client()``'s for a fraction of its CPU: what the workloads' threads use, so
        that the machine's cores go to the store under test."""
        return DynamoDBWireClient(
            self.endpoint,
            region=self.region,
            access_key=DUMMY_CREDENTIALS["aws_access_key_id"],
            secret_key=DUMMY_CREDENTIALS["aws_secret_access_key"],
            read_timeout=_READ_TIMEOUT_SECONDS,
        )


# ---------------------------------------------------------------------------------------------- requests
def _number(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _key(key: str) -> dict[str, Any]:
    return {"pk": {"S": key}}


def _plain(item: Any) -> dict[str, Any] | None:
    if item is None:
        return None
    return {name: int(value["N"]) if "N" in value else value["S"] for name, value in item.items()}


def _part_call(table: str, part: Request) -> dict[str, Any]:
    """One TransactItems entry."""
    common: dict[str, Any] = {"TableName": table, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    if part.kind == "put_new":
        return {"Put": {**common, "Item": _new_item(part), "ConditionExpression": "attribute_not_exists(pk)"}}
    if part.kind == "check_version":
        return {"ConditionCheck": {**common, **_versioned(part), "Key": _key(part.key)}}
    if part.kind == "delete_if_version":
        return {"Delete": {**common, **_versioned(part), "Key": _key(part.key)}}
    if part.kind == "add_if_version":
        versioned = _versioned(part)
        versioned["ExpressionAttributeValues"].update({":n": _number(part.amount), ":one": _number(1)})
        return {"Update": {**common, **versioned, "Key": _key(part.key), "UpdateExpression": _ADD_AND_BUMP}}
    return {
        "Update": {
            **common,
            "Key": _key(part.key),
            "UpdateExpression": "ADD #counter :n",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {"#counter": "counter"},
            "ExpressionAttributeValues": {":n": _number(part.amount)},
        }
    }


_ADD_AND_BUMP = "ADD #counter :n SET #version = #version + :one"


def _versioned(request: Request) -> dict[str, Any]:
    return {
        "ConditionExpression": "#version = :v",
        "ExpressionAttributeNames": {"#version": "version"},
        "ExpressionAttributeValues": {":v": _number(request.version)},
    }


def _new_item(request: Request, version: int = 1, counter: int = 0) -> dict[str, Any]:
    return {
        **_key(request.key),
        "version": _number(version),
        "counter": _number(counter),
        "owner": {"S": request.owner},
    }


def send(client: Any, table: str, request: Request) -> Outcome:
    """Make the request's call and say what came back."""
    try:
        returned = _call(client, table, request)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == CONDITION_FAILED:
            return Outcome(FAIL, code, item=freeze(_plain(error.response.get("Item"))))
        if code == TRANSACTION_CANCELED:
            reasons = tuple(
                (reason.get("Code", ""), freeze(_plain(reason.get("Item"))))
                for reason in error.response.get("CancellationReasons", [])
            )
            return Outcome(FAIL, code, reasons=reasons)
        return Outcome(INFO, code or "error")  # a 500, a throttle: it may have been applied or not
    except BotoCoreError as error:
        return Outcome(INFO, type(error).__name__)
    return Outcome(OK, item=freeze(_plain(returned)))


def _call(client: Any, table: str, request: Request) -> dict[str, Any] | None:
    kind, key = request.kind, request.key
    if kind == "put_new":
        client.put_item(
            TableName=table,
            Item=_new_item(request),
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return None
    if kind == "put_if_version":
        answer = client.put_item(
            TableName=table,
            Item=_new_item(request, request.version + 1, request.amount),
            ReturnValues="ALL_OLD",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **_versioned(request),
        )
        return answer.get("Attributes")
    if kind in ("add", "add_if_version"):
        extra: dict[str, Any] = {"ExpressionAttributeNames": {"#counter": "counter"}}
        values = {":n": _number(request.amount)}
        expression = "ADD #counter :n"
        if kind == "add_if_version":
            extra = _versioned(request)
            extra["ExpressionAttributeNames"]["#counter"] = "counter"
            values.update(extra.pop("ExpressionAttributeValues"), **{":one": _number(1)})
            expression = _ADD_AND_BUMP
        answer = client.update_item(
            TableName=table,
            Key=_key(key),
            UpdateExpression=expression,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **extra,
        )
        return answer.get("Attributes")
    if kind in ("delete", "delete_if_version"):
        conditional = _versioned(request) if kind == "delete_if_version" else {}
        answer = client.delete_item(
            TableName=table,
            Key=_key(key),
            ReturnValues="ALL_OLD",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **conditional,
        )
        return answer.get("Attributes")
    if kind == "get":
        return client.get_item(TableName=table, Key=_key(key), ConsistentRead=True).get("Item")
    if kind == "query":
        items = client.query(
            TableName=table,
            KeyConditionExpression="pk = :k",
            ExpressionAttributeValues={":k": {"S": key}},
            ConsistentRead=True,
        )["Items"]
        return items[0] if items else None
    client.transact_write_items(TransactItems=[_part_call(table, part) for part in request.parts])
    return None


# ---------------------------------------------------------------------------------------------- clients
class RandomClient:
    """One client's random requests, its version guesses taken from what it last saw of each key."""

    def __init__(self, name: str, keys: Sequence[str], rng: random.Random) -> None:
        self.name = name
        self.keys = list(keys)
        self.rng = rng
        self.versions: dict[str, int] = {}

    def next_request(self) -> Request:
        kind = self.rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
        if kind == "transact":
            keys = self.rng.sample(self.keys, self.rng.choice((2, 3)) if len(self.keys) >= 3 else 2)
            return Request(
                "transact", parts=tuple(self._single(self.rng.choice(TRANSACTION_PARTS), key) for key in keys)
            )
        return self._single(kind, self.rng.choice(self.keys))

    def _single(self, kind: str, key: str) -> Request:
        guess = self.versions.get(key, 1) + (self.rng.random() < 0.15)
        return Request(kind, key, version=guess, amount=self.rng.randint(1, 9), owner=self.name)

    def saw(self, request: Request, outcome: Outcome) -> None:
        if request.kind in ("put_new", "put_if_version") and outcome.status == OK:
            self.versions[request.key] = request.version + 1 if request.kind == "put_if_version" else 1
            return
        seen = (
            [(part.key, item) for part, (_, item) in zip(request.parts, outcome.reasons, strict=False)]
            if request.kind == "transact"
            else [(request.key, outcome.item)]
        )
        for key, item in seen:
            version = dict(item or ()).get("version")
            if isinstance(version, int):
                self.versions[key] = version


class ClientGroup:
    """Named clients, each a thread with a client of its own, kept for every history they run."""

    def __init__(self, target: Target, names: Sequence[str]) -> None:
        self.target = target
        self.names = list(names)
        self.clients = [target.wire_client() for _ in self.names]

    def run_history(self, keys: Sequence[str], operations_each: int, seed: int) -> list[Operation]:
        """Every client makes ``operations_each`` random calls on ``keys`` at once; their history."""
        history: list[Operation] = []
        lock = threading.Lock()
        start = threading.Barrier(len(self.names))

        def work(name: str, client: Any) -> None:
            chooser = RandomClient(name, keys, random.Random(f"{seed}/{name}"))
            recorded = []
            start.wait()
            for _ in range(operations_each):
                request = chooser.next_request()
                invoked = time.monotonic_ns()
                outcome = send(client, self.target.table, request)
                recorded.append(Operation(name, invoked, time.monotonic_ns(), request, outcome))
                chooser.saw(request, outcome)
            with lock:
                history.extend(recorded)

        threads = [
            threading.Thread(target=work, args=(name, client), name=f"lin-{name}")
            for name, client in zip(self.names, self.clients, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return history


@dataclass(frozen=True)
class PlannedHistory:
    keys: tuple[str, ...]
    operations_each: int
    seed: int


def run_histories(
    target: Target, names: Sequence[str], plan: Sequence[PlannedHistory], barrier: Any = None
) -> list[list[Operation]]:
    """One process's clients through ``plan``; with ``barrier`` (shared by every process of the run),
    the processes start each history together, so their clients race on its keys."""
    group = ClientGroup(target, names)
    histories = []
    for planned in plan:
        if barrier is not None:
            barrier.wait(_READ_TIMEOUT_SECONDS)
        histories.append(group.run_history(planned.keys, planned.operations_each, planned.seed))
    return histories


# ---------------------------------------------------------------------------------------------- runs
@dataclass
class RunSummary:
    histories: int = 0
    operations: int = 0
    seconds: float = 0.0
    anomalies: list[Anomaly] = field(default_factory=list)
    unknown: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    contended_puts: int = 0
    double_winners: int = 0
    counter_mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.anomalies
            and not self.unknown
            and not self.double_winners
            and not self.counter_mismatches
        )

    def add(self, history: Sequence[Operation]) -> None:
        verdict = check(history)
        self.histories += 1
        self.operations += len(history)
        self.anomalies += verdict.anomalies
        self.unknown += verdict.unknown
        for op in history:
            self.kinds[op.request.kind] += 1
            self.outcomes[op.outcome.error or op.outcome.status] += 1

    def render(self) -> str:
        lines = [
            f"histories checked: {self.histories}, operations: {self.operations}, "
            f"anomalies: {len(self.anomalies)}, undecided (search budget spent): {self.unknown}, "
            f"time: {self.seconds:.1f} s",
            "operations by kind: "
            + ", ".join(f"{kind} {count}" for kind, count in sorted(self.kinds.items())),
            "outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(self.outcomes.items())),
            f"contended attribute_not_exists puts: {self.contended_puts}, with more than one winner: "
            f"{self.double_winners}; counters off their acknowledged ADDs: {len(self.counter_mismatches)}",
        ]
        lines += self.counter_mismatches
        lines += [anomaly.describe() for anomaly in self.anomalies[:3]]
        return "\n".join(lines)


class Workload:
    """Histories against one target, each on fresh keys, by threads here or in worker processes too."""

    def __init__(
        self, target: Target, *, threads: int, processes: int = 0, seed: int = 0, tag: str = ""
    ) -> None:
        self.target = target
        self.threads = threads
        self.processes = processes
        self.seed = seed
        self.tag = tag or f"lin{seed}"
        self._local: ClientGroup | None = None
        self._recorded = 0  # histories recorded so far: the next one's keys are new
        self._pool: ProcessPoolExecutor | None = None
        self._manager: Any = None
        if processes:
            # spawn: the caller may be running threads (a local cloud's), which fork would copy half-held.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(processes, mp_context=context)
            self._manager = context.Manager()

    def __enter__(self) -> Workload:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._manager.shutdown()

    def histories(self, count: int, operations: int) -> list[list[Operation]]:
        """``count`` histories of about ``operations`` operations each, every one on keys of its own."""
        first, self._recorded = self._recorded, self._recorded + count
        clients = self.threads * max(self.processes, 1)
        plan = [
            PlannedHistory(
                tuple(f"{self.tag}-h{index}-k{number}" for number in range(DEFAULT_HOT_KEYS)),
                -(-operations // clients),
                self.seed * 1_000_003 + index,
            )
            for index in range(first, first + count)
        ]
        if self._pool is None:
            if self._local is None:
                self._local = ClientGroup(self.target, [f"t{number}" for number in range(self.threads)])
            return [self._local.run_history(p.keys, p.operations_each, p.seed) for p in plan]
        barrier = self._manager.Barrier(self.processes)
        futures = [
            self._pool.submit(
                run_histories,
                self.target,
                [f"p{process}t{number}" for number in range(self.threads)],
                plan,
                barrier,
            )
            for process in range(self.processes)
        ]
        per_process = [future.result() for future in futures]
        return [[op for histories in per_process for op in histories[i]] for i in range(count)]

    def run(
        self,
        histories: int,
        operations: int,
        summary: RunSummary | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> RunSummary:
        summary = summary or RunSummary()
        started = time.monotonic()
        for first in range(0, histories, _HISTORIES_PER_ROUND):
            for history in self.histories(min(_HISTORIES_PER_ROUND, histories - first), operations):
                summary.add(history)
            if progress is not None:
                progress(
                    f"{summary.histories}/{histories} histories, {summary.operations} operations, "
                    f"{len(summary.anomalies)} anomalies"
                )
        summary.seconds += time.monotonic() - started
        return summary

    def contended_puts(self, rounds: int, summary: RunSummary) -> None:
        """Every client puts the same new key with attribute_not_exists(pk): exactly one may win."""
        for number in range(rounds):
            key = f"{self.tag}-winner-{number}"
            contenders = max(self.threads, 2)
            history = _racing(
                self.target, [Request("put_new", key, owner=f"w{n}") for n in range(contenders)]
            )
            winners = [op for op in history if op.outcome.status == OK]
            summary.contended_puts += 1
            summary.double_winners += len(winners) > 1
            summary.add(history)

    def counter_sum(self, adds_each: int, summary: RunSummary) -> None:
        """Clients ADD to one counter: its value is the acknowledged sum plus a subset of the unknown."""
        key = f"{self.tag}-counter"
        history = _racing_adds(self.target, key, self.threads, adds_each, self.seed)
        acknowledged = sum(op.request.amount for op in history if op.outcome.status == OK)
        unsure = [op.request.amount for op in history if op.outcome.status == INFO]
        item = self.target.client().get_item(TableName=self.target.table, Key=_key(key), ConsistentRead=True)
        value = int(item.get("Item", {}).get("counter", {"N": "0"})["N"])
        if value - acknowledged not in _subset_sums(unsure):
            summary.counter_mismatches.append(
                f"counter {key}: {value}, acknowledged ADDs sum to {acknowledged}, "
                f"{len(unsure)} indeterminate"
            )
        summary.add(history)


def _racing_adds(target: Target, key: str, clients: int, adds_each: int, seed: int) -> list[Operation]:
    rng = random.Random(seed)
    requests = [Request("add", key, amount=rng.randint(1, 9)) for _ in range(clients * adds_each)]
    return _racing(target, requests, clients)


def _racing(target: Target, requests: Sequence[Request], clients: int | None = None) -> list[Operation]:
    """``requests`` sent by ``clients`` threads at once (one request each by default)."""
    clients = clients or len(requests)
    made = [target.wire_client() for _ in range(clients)]
    history: list[Operation] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def work(number: int) -> None:
        start.wait()
        for request in requests[number::clients]:
            invoked = time.monotonic_ns()
            outcome = send(made[number], target.table, request)
            with lock:
                history.append(Operation(f"c{number}", invoked, time.monotonic_ns(), request, outcome))

    threads = [threading.Thread(target=work, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return history


def _subset_sums(amounts: Sequence[int]) -> set[int]:
    sums = {0}
    for amount in amounts:
        sums |= {total + amount for total in sums}
    return sums


def run_on_local_cloud(
    *,
    histories: int,
    operations: int,
    threads: int,
    processes: int,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> RunSummary:
    """The workload against a local cloud of its own; the contended puts and counter sum after it."""
    from sam_local_cloud import LocalCloud, LocalCloudConfig

    with tempfile.TemporaryDirectory(prefix="orderbatch-linearizability-") as directory:
        template = Path(directory) / "template.yaml"
        template.write_text(TEMPLATE)
        config = LocalCloudConfig(template=template, enforce_iam=False, state_dir=Path(directory) / "state")
        with LocalCloud(config) as cloud:
            target = Target(cloud.endpoint, cloud.stack.table_name(TABLE_LOGICAL_ID), cloud.stack.region)
            summary = RunSummary()
            with Workload(target, threads=threads, processes=processes, seed=seed) as workload:
                workload.run(histories, operations, summary, progress)
                started = time.monotonic()
                workload.contended_puts(20, summary)
                workload.counter_sum(50, summary)
                summary.seconds += time.monotonic() - started
            return summary
