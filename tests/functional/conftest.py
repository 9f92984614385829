"""Fixtures for the per-order task handlers against moto in-process."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

import pytest

from handlers import clients
from handlers.environment import forget_loaded_environments
from handlers.observability import TASK_BODY_RAN, logger, metrics
from sam_local_cloud.moto_seam.testing import DynamoDBBackend

FUNCTION_NAME = "orderbatch-task-tests"
MAX_CHARGE_AMOUNT = "1000.00"


@dataclass
class FakeLambdaContext:
    function_name: str = FUNCTION_NAME
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"
    log_group_name: str = f"/aws/lambda/{FUNCTION_NAME}"
    log_stream_name: str = "2025/01/01/[$LATEST]0123456789abcdef"
    remaining_millis: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def reset_cold_start() -> None:
    """What a new execution environment would start from: its environment read again, new clients."""
    forget_loaded_environments()
    clients.forget_clients()


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def task_env(order_tables: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto tables plus the environment the template gives every task function."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", FUNCTION_NAME)
    monkeypatch.setenv("MAX_CHARGE_AMOUNT", MAX_CHARGE_AMOUNT)
    monkeypatch.setenv("IDEMPOTENCY_EXPIRY_SECONDS", "3600")
    monkeypatch.delenv("POWERTOOLS_IDEMPOTENCY_DISABLED", raising=False)
    monkeypatch.delenv("EFFECT_KEYS_DISABLED", raising=False)
    reset_cold_start()
    yield order_tables
    reset_cold_start()


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Change environment variables as a new cold start would see them."""

    def apply(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        reset_cold_start()

    return apply


@dataclass
class TaskLog:
    """The structured "task body ran" lines, one per idempotent body that really ran."""

    records: list[logging.LogRecord] = field(default_factory=list)

    def runs(self, step: str | None = None, order_id: str | None = None) -> int:
        return sum(
            1
            for record in self.records
            if (step is None or getattr(record, "step", None) == step)
            and (order_id is None or getattr(record, "order_id", None) == order_id)
        )


class _Collector(logging.Handler):
    def __init__(self, log: TaskLog) -> None:
        super().__init__(level=logging.INFO)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == TASK_BODY_RAN:
            self.log.records.append(record)


@pytest.fixture
def task_log() -> Iterator[TaskLog]:
    log = TaskLog()
    collector = _Collector(log)
    logger.addHandler(collector)
    yield log
    logging.getLogger(logger.name).removeHandler(collector)


@dataclass
class CallCounter:
    """DynamoDB API calls made through the functions' client, by operation and table."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)

    def total(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        self.calls.clear()

    def describe(self) -> str:
        return ", ".join(f"{operation} {table}: {n}" for (operation, table), n in sorted(self.calls.items()))


@pytest.fixture
def dynamodb_calls(task_env: Any) -> CallCounter:
    counter = CallCounter()

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        table = params.get("TableName") or ",".join(
            sorted({next(iter(action.values()))["TableName"] for action in params.get("TransactItems", [])})
        )
        counter.calls[(model.name, table)] += 1

    clients.dynamodb().meta.events.register("provide-client-params.dynamodb", count)
    return counter


@pytest.fixture
def fail_once(task_env: Any) -> Callable[[str, str], list[str]]:
    """Make the functions' next `operation` on `table_name` (a transaction: with an action on it) fail
    with a 500, once.

    Returns the failures injected so far.
    """
    from botocore.exceptions import ClientError

    failures: list[str] = []

    def tables(params: dict[str, Any]) -> set[str]:
        in_actions = {next(iter(action.values()))["TableName"] for action in params.get("TransactItems", [])}
        return in_actions | ({params["TableName"]} if "TableName" in params else set())

    def arm(operation: str, table_name: str) -> list[str]:
        def fail(params: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name == operation and table_name in tables(params) and not failures:
                failures.append(f"{operation} {table_name}")
                raise ClientError(
                    {"Error": {"Code": "InternalServerError", "Message": "injected by the test"}}, operation
                )

        clients.dynamodb().meta.events.register("provide-client-params.dynamodb", fail)
        return failures

    return arm


@pytest.fixture
def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serialise moto's DynamoDB backend, which DynamoDB itself does per item and per transaction.

    moto evaluates a condition and then writes without a lock, so two threads could both pass a
    condition that DynamoDB would let only one pass. Tests of concurrent callers need the real guarantee.
    """
    lock = threading.RLock()
    for name in (
        "put_item",
        "update_item",
        "delete_item",
        "get_item",
        "query",
        "scan",
        "transact_write_items",
    ):
        original = getattr(DynamoDBBackend, name)

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return __original(*args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, wraps(original)(locked))


@pytest.fixture
def thread_safe_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Powertools keeps one metric set per process (Lambda runs one invocation at a time).

    Threads share it, so the tests that call handlers from threads serialise its use.
    """
    lock = threading.RLock()
    provider = metrics.provider
    for name in ("add_metric", "flush_metrics"):
        original = getattr(provider, name)

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return __original(*args, **kwargs)

        monkeypatch.setattr(provider, name, locked)
