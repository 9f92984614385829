"""The durable batch workflow in the testing SDK's in-memory runner, invoking the real task handlers.

The chained invokes reach the handlers registered under the names the function's environment gives
(tests/conftest.py); the handlers run against moto's tables, as in the other functional tests. Waits
(backoffs) are skipped in virtual time, so retries cost no wall-clock time.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_durable_execution_sdk_python.execution import InvocationStatus
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
    InvokeOperation,
    WaitOperation,
)
from task_events import an_order

from handlers import (
    cancel_order,
    charge_payment,
    confirm_order,
    durable_order_batch,
    reserve_inventory,
    validate_order,
)

STEP_HANDLERS = {
    "validate_order": ("VALIDATE_ORDER_FUNCTION_NAME", validate_order.lambda_handler),
    "reserve_inventory": ("RESERVE_INVENTORY_FUNCTION_NAME", reserve_inventory.lambda_handler),
    "charge_payment": ("CHARGE_PAYMENT_FUNCTION_NAME", charge_payment.lambda_handler),
    "confirm_order": ("CONFIRM_ORDER_FUNCTION_NAME", confirm_order.lambda_handler),
    "cancel_order": ("CANCEL_ORDER_FUNCTION_NAME", cancel_order.lambda_handler),
}


class TooManyRequestsException(Exception):  # noqa: N818 - Lambda's error name, which the retrier matches
    """What Lambda answers when the account's concurrency is used up (HTTP 429)."""


@dataclass
class StepFunctions:
    """The per-order handlers as invoke targets, counting calls and injecting failures per step."""

    calls: Counter[str] = field(default_factory=Counter)
    throttles_left: Counter[str] = field(default_factory=Counter)
    always_failing: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def target(self, step: str, handler: Callable[..., Any]) -> Callable[[Any, Any], Any]:
        def invoke(event: Any, context: Any) -> Any:
            with self.lock:
                self.calls[step] += 1
                throttled = self.throttles_left[step] > 0
                if throttled:
                    self.throttles_left[step] -= 1
            if throttled:
                raise TooManyRequestsException("Rate Exceeded.")
            if step in self.always_failing:
                raise RuntimeError(f"{step} is broken")
            return handler(event, context)

        return invoke


@dataclass
class DurableBatch:
    runner: DurableFunctionTestRunner
    steps: StepFunctions
    orchestrator_invocations: list[int]

    def run(self, batch_id: str, orders: list[Any]) -> DurableFunctionTestResult:
        return self.runner.run(
            input=json.dumps({"batch_id": batch_id, "orders": orders}),
            execution_name=batch_id,
            execution_timeout=120,
        )


@pytest.fixture
def durable_batch(task_env: Any, atomic_dynamodb: None, thread_safe_metrics: None) -> Iterator[DurableBatch]:
    steps = StepFunctions()
    invocations = [0]

    def orchestrator(event: Any, context: Any) -> Any:
        invocations[0] += 1
        return durable_order_batch.lambda_handler(event, context)

    with DurableFunctionTestRunner(handler=orchestrator) as runner:
        for step, (variable, handler) in STEP_HANDLERS.items():
            runner.register_function(os.environ[variable], steps.target(step, handler))
        yield DurableBatch(runner, steps, invocations)


def summary_of(result: DurableFunctionTestResult) -> dict[str, Any]:
    assert result.status is InvocationStatus.SUCCEEDED, result.error
    assert result.result is not None
    summary: dict[str, Any] = json.loads(result.result)
    return summary


def operations_named(result: DurableFunctionTestResult, prefix: str) -> list[Any]:
    return [op for op in result.get_all_operations() if (op.name or "").startswith(prefix)]


def an_affordable_order(order_id: str) -> dict[str, Any]:
    return an_order(order_id, ("SKU-001", 2, "12.49"), ("SKU-002", 1, "5.00"))


def test_a_batch_of_orders_is_confirmed_with_each_step_invoked_once_per_order(
    durable_batch: DurableBatch, task_log: Any
) -> None:
    orders = [an_affordable_order(f"d-{n}") for n in range(3)]

    summary = summary_of(durable_batch.run("b-durable-1", orders))

    assert {key: summary[key] for key in ("total", "succeeded", "failed", "rejected", "duplicate")} == {
        "total": 3,
        "succeeded": 3,
        "failed": 0,
        "rejected": 0,
        "duplicate": 0,
    }
    assert [(o["order_id"], o["item_index"], o["outcome"]) for o in summary["orders"]] == [
        ("d-0", 0, "SUCCEEDED"),
        ("d-1", 1, "SUCCEEDED"),
        ("d-2", 2, "SUCCEEDED"),
    ]
    assert durable_batch.steps.calls == Counter(
        {"validate_order": 3, "reserve_inventory": 3, "charge_payment": 3, "confirm_order": 3}
    )
    assert task_log.runs() == 12
    for order in orders:
        assert durable_batch.steps is not None
        assert task_log.runs(order_id=order["order_id"]) == 4


def test_the_summary_has_the_state_machine_summary_shape(durable_batch: DurableBatch, task_env: Any) -> None:
    summary = summary_of(durable_batch.run("b-durable-shape", [an_affordable_order("d-shape")]))

    assert set(summary) == {
        "batch_id",
        "total",
        "succeeded",
        "failed",
        "rejected",
        "duplicate",
        "conflicting",
        "second_pass",
        "orders",
    }
    assert summary["batch_id"] == "b-durable-shape"
    assert summary["orders"] == [
        {"order_id": "d-shape", "item_index": 0, "outcome": "SUCCEEDED", "code": None, "reason": None}
    ]
    assert task_env.order_record("d-shape")["status"] == "SUCCEEDED"
    assert [(e["entry_id"], e["amount"]) for e in task_env.ledger("d-shape")] == [("charge", "29.98")]


def test_a_declined_charge_is_cancelled_once_and_the_stock_released(
    durable_batch: DurableBatch, task_env: Any
) -> None:
    stock_before = task_env.stock("SKU-003")
    expensive = an_order("d-rich", ("SKU-003", 3, "600.00"))

    summary = summary_of(durable_batch.run("b-durable-declined", [expensive, an_affordable_order("d-ok")]))

    declined, fine = summary["orders"]
    assert (declined["order_id"], declined["outcome"], declined["code"]) == (
        "d-rich",
        "FAILED",
        "PAYMENT_DECLINED",
    )
    assert "above the charge limit" in declined["reason"]
    assert fine["outcome"] == "SUCCEEDED"
    assert durable_batch.steps.calls["cancel_order"] == 1
    assert task_env.order_record("d-rich")["status"] == "FAILED"
    assert task_env.stock("SKU-003") == stock_before
    assert task_env.ledger("d-rich") == []


def test_a_charge_that_keeps_failing_is_retried_then_compensated(
    durable_batch: DurableBatch, task_env: Any
) -> None:
    durable_batch.steps.always_failing.add("charge_payment")
    stock_before = task_env.stock("SKU-001")

    summary = summary_of(durable_batch.run("b-durable-broken", [an_affordable_order("d-broken")]))

    (outcome,) = summary["orders"]
    assert (outcome["outcome"], outcome["code"]) == ("FAILED", "TASK_FAILED")
    assert outcome["reason"] == "order d-broken failed: RuntimeError: charge_payment is broken"
    # The first try and TaskFailedRetryMaxAttempts (3) retries, then Cancel order once.
    assert durable_batch.steps.calls["charge_payment"] == 4
    assert durable_batch.steps.calls["cancel_order"] == 1
    assert durable_batch.steps.calls["confirm_order"] == 0
    assert task_env.order_record("d-broken")["status"] == "FAILED"
    assert task_env.stock("SKU-001") == stock_before
    assert task_env.ledger("d-broken") == []


def test_throttled_invokes_are_retried_with_capped_jittered_backoff(
    durable_batch: DurableBatch, task_log: Any
) -> None:
    durable_batch.steps.throttles_left["reserve_inventory"] = 2

    result = durable_batch.run("b-durable-throttled", [an_affordable_order("d-throttled")])

    summary = summary_of(result)
    assert summary["succeeded"] == 1
    assert durable_batch.steps.calls["reserve_inventory"] == 3
    # A 429 never ran the function: the body ran once.
    assert task_log.runs(step="reserve_inventory") == 1
    tries = [op for op in operations_named(result, "reserve_inventory") if isinstance(op, InvokeOperation)]
    assert sorted(op.name for op in tries) == [
        "reserve_inventory",
        "reserve_inventory (attempt 2)",
        "reserve_inventory (attempt 3)",
    ]
    throttled = [op for op in tries if op.error is not None]
    assert [op.error.type.rsplit(".", 1)[-1] for op in throttled] == ["TooManyRequestsException"] * 2
    backoffs = sorted(
        (op for op in operations_named(result, "reserve_inventory") if isinstance(op, WaitOperation)),
        key=lambda op: op.name or "",
    )
    assert [op.name for op in backoffs] == [
        "reserve_inventory (attempt 2) backoff",
        "reserve_inventory backoff",
    ]
    for backoff in backoffs:
        assert backoff.start_timestamp is not None
        assert backoff.scheduled_end_timestamp is not None
        seconds = (backoff.scheduled_end_timestamp - backoff.start_timestamp).total_seconds()
        # Full jitter of 1 s then 2 s (ThrottleRetryIntervalSeconds 1, rate 2), rounded up to whole seconds.
        assert 0 < seconds <= 3


def test_replays_return_checkpointed_invokes_instead_of_invoking_again(
    durable_batch: DurableBatch, task_log: Any
) -> None:
    orders = [an_affordable_order("d-replay-1"), an_affordable_order("d-replay-2")]

    summary = summary_of(durable_batch.run("b-durable-replay", orders))

    assert summary["succeeded"] == 2
    # Every chained invoke suspends the execution, and each resumption replays it from the start.
    assert durable_batch.orchestrator_invocations[0] >= 5
    assert sum(durable_batch.steps.calls.values()) == 8
    assert task_log.runs() == 8


def test_a_malformed_order_is_reported_with_its_id_and_reason_and_the_batch_goes_on(
    durable_batch: DurableBatch, task_env: Any
) -> None:
    bad_quantity = an_order("d-bad", ("SKU-001", 0, "9.99"))
    no_id = {"customer_id": "c-1", "currency": "USD", "items": []}
    orders = [an_affordable_order("d-good-1"), bad_quantity, no_id, an_affordable_order("d-good-2")]

    summary = summary_of(durable_batch.run("b-durable-malformed", orders))

    assert (summary["total"], summary["succeeded"], summary["rejected"]) == (4, 2, 2)
    by_index = {o["item_index"]: o for o in summary["orders"]}
    assert (by_index[1]["order_id"], by_index[1]["code"]) == ("d-bad", "INVALID_ORDER")
    assert "items[0].quantity: must be a whole number of at least 1, got 0" in by_index[1]["reason"]
    assert by_index[2]["order_id"] is None
    assert by_index[2]["code"] == "INVALID_ORDER"
    assert (
        by_index[2]["reason"]
        == "item 2 is invalid: order_id: is required; items: must hold 1 to 50 lines, got 0"
    )
    assert durable_batch.steps.calls["validate_order"] == 4
    assert durable_batch.steps.calls["reserve_inventory"] == 2
    assert task_env.order_record("d-bad")["status"] == "REJECTED"


def test_a_batch_without_orders_fails_the_execution_naming_the_field(durable_batch: DurableBatch) -> None:
    result = durable_batch.runner.run(
        input=json.dumps({"batch_id": "b-empty", "orders": []}), execution_timeout=60
    )

    assert result.status is InvocationStatus.FAILED
    assert result.error is not None
    assert "orders" in (result.error.message or "")
    assert sum(durable_batch.steps.calls.values()) == 0


def test_an_order_sent_again_with_other_content_is_reported_as_conflicting_without_compensation(
    durable_batch: DurableBatch, task_env: Any
) -> None:
    summary_of(durable_batch.run("b-durable-first", [an_affordable_order("d-twice")]))
    changed = an_order("d-twice", ("SKU-001", 5, "12.49"))

    summary = summary_of(durable_batch.run("b-durable-second", [changed]))

    assert summary["orders"] == [
        {
            "order_id": "d-twice",
            "item_index": 0,
            "outcome": "REJECTED",
            "code": "CONFLICTING_ORDER",
            "reason": "order d-twice was already submitted with different content",
        }
    ]
    assert summary["conflicting"] == 1
    # The conflict is never retried, and nothing is cancelled: the first batch's order stands.
    assert durable_batch.steps.calls["validate_order"] == 2
    assert durable_batch.steps.calls["cancel_order"] == 0
    assert task_env.order_record("d-twice")["status"] == "SUCCEEDED"


def test_an_order_throttled_past_its_retrier_runs_again_in_the_second_pass_from_that_step(
    durable_batch: DurableBatch, configure: Callable[..., None], task_env: Any, task_log: Any
) -> None:
    configure(THROTTLE_RETRY_MAX_ATTEMPTS="2")
    # Three calls are the first pass's (one and two retries): the fourth, in the second pass, runs.
    durable_batch.steps.throttles_left["charge_payment"] = 3

    summary = summary_of(durable_batch.run("b-durable-deferred", [an_affordable_order("d-deferred")]))

    assert (summary["succeeded"], summary["failed"], summary["second_pass"]) == (1, 0, 1)
    assert durable_batch.steps.calls["charge_payment"] == 4
    # The second pass resumed at the charge: validation and reservation ran once, nothing was cancelled.
    assert durable_batch.steps.calls["validate_order"] == 1
    assert durable_batch.steps.calls["reserve_inventory"] == 1
    assert durable_batch.steps.calls["cancel_order"] == 0
    # A 429 never ran the function: the charge's body ran once, in the second pass.
    assert task_log.runs(step="charge_payment") == 1
    assert len(task_env.ledger("d-deferred")) == 1
    assert task_env.order_record("d-deferred")["status"] == "SUCCEEDED"


def test_an_order_still_throttled_in_the_second_pass_fails_and_is_compensated(
    durable_batch: DurableBatch, configure: Callable[..., None], task_env: Any
) -> None:
    configure(THROTTLE_RETRY_MAX_ATTEMPTS="2")
    durable_batch.steps.throttles_left["charge_payment"] = 6

    summary = summary_of(durable_batch.run("b-durable-storm", [an_affordable_order("d-storm")]))

    (outcome,) = summary["orders"]
    assert (outcome["outcome"], outcome["code"]) == ("FAILED", "TASK_FAILED")
    assert outcome["reason"] == (
        "order d-storm failed: Lambda.TooManyRequestsException: Charge payment was throttled until its "
        "retrier ran out, in the batch and again in the second pass"
    )
    assert summary["second_pass"] == 1
    assert durable_batch.steps.calls["charge_payment"] == 6
    assert durable_batch.steps.calls["cancel_order"] == 1
    assert task_env.ledger("d-storm") == []
    assert task_env.order_record("d-storm")["status"] == "FAILED"


def test_no_more_orders_run_at_once_than_the_map_concurrency(
    durable_batch: DurableBatch, configure: Callable[..., None]
) -> None:
    configure(MAP_MAX_CONCURRENCY="2")
    in_flight, most = [0], [0]
    lock = threading.Lock()
    validate = durable_batch.steps.target("validate_order", validate_order.lambda_handler)

    def slow_validate(event: Any, context: Any) -> Any:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            threading.Event().wait(0.2)
            return validate(event, context)
        finally:
            with lock:
                in_flight[0] -= 1

    durable_batch.runner.register_function(os.environ["VALIDATE_ORDER_FUNCTION_NAME"], slow_validate)

    summary = summary_of(
        durable_batch.run("b-durable-bounded", [an_affordable_order(f"d-b{n}") for n in range(6)])
    )

    assert summary["succeeded"] == 6
    assert durable_batch.steps.calls["validate_order"] == 6
    assert most[0] == 2
