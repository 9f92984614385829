"""The batch workflow as durable code: the state machine's per-order routing, its retriers and its Map.

Each order runs in its own branch of ``context.map`` and calls the existing per-order functions through
``context.invoke`` (docs/architecture.md, "Durable functions", says why). A failed invoke goes through
the retriers the state machine's Lambda Tasks carry, with the same template parameters, then through
the same Catch routing: a conflicting order is reported, anything else is compensated by Cancel order.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_durable_execution_sdk_python import BatchResult, DurableContext
from aws_durable_execution_sdk_python.config import (
    CompletionConfig,
    Duration,
    JitterStrategy,
    MapConfig,
)
from aws_durable_execution_sdk_python.exceptions import InvokeError
from aws_durable_execution_sdk_python.retries import RetryDecision, RetryStrategyConfig, create_retry_strategy

from order_processing.contract import Code, Outcome
from order_processing.steps import CONFLICT_ERROR_NAME
from order_processing.summary import outcome_of_failed_item, summarize_batch

# What the state machine's "Report failed compensation" reports: a code of the workflow, not of the domain.
COMPENSATION_FAILED = "COMPENSATION_FAILED"
THROTTLED_ERROR_NAME = "TooManyRequestsException"
IN_PROGRESS_ERROR_NAME = "IdempotencyAlreadyInProgressError"
LAMBDA_SERVICE_ERROR_NAMES = frozenset(
    {"ServiceException", "AWSLambdaException", "SdkClientException", "ClientExecutionTimeoutException"}
)


@dataclass(frozen=True)
class Retrier:
    """One Step Functions retrier, as the SDK's retry strategy expresses it.

    ``retries`` counts as Step Functions' MaxAttempts does (retries after the first attempt); without a
    ``max_delay_seconds`` the delay is uncapped, as a retrier without MaxDelaySeconds is.
    """

    name: str
    interval_seconds: int
    backoff_rate: float
    retries: int
    max_delay_seconds: int | None = None
    jitter: JitterStrategy = JitterStrategy.NONE

    def decide(self, error: Exception, failures: int) -> RetryDecision:
        """Whether to retry after this retrier's ``failures``-th failure, and after how long."""
        if self.retries < 1:
            return RetryDecision.no_retry()
        largest_delay = self.interval_seconds * self.backoff_rate ** (self.retries - 1)
        strategy = create_retry_strategy(
            RetryStrategyConfig(
                # The SDK counts attempts, the first one included.
                max_attempts=self.retries + 1,
                initial_delay=Duration.from_seconds(self.interval_seconds),
                max_delay=Duration.from_seconds(self.max_delay_seconds or math.ceil(largest_delay)),
                backoff_rate=self.backoff_rate,
                jitter_strategy=self.jitter,
            )
        )
        return strategy(error, failures)


@dataclass(frozen=True)
class RetryPolicy:
    """The retriers of every Lambda Task of the state machine, in the order Step Functions matches them."""

    throttle: Retrier
    lambda_service: Retrier
    in_progress: Retrier
    task_failed: Retrier
    # Same order ID, other content: never retried (the state machine's MaxAttempts 0).
    conflict: Retrier = Retrier("conflict", interval_seconds=1, backoff_rate=1, retries=0)

    def retrier_for(self, error_name: str) -> Retrier:
        if error_name == THROTTLED_ERROR_NAME:
            return self.throttle
        if error_name in LAMBDA_SERVICE_ERROR_NAMES:
            return self.lambda_service
        if error_name == IN_PROGRESS_ERROR_NAME:
            return self.in_progress
        if error_name == CONFLICT_ERROR_NAME:
            return self.conflict
        # States.TaskFailed and States.Timeout: every other error, timeouts included.
        return self.task_failed


@dataclass(frozen=True)
class OrderFunctions:
    """The names (or ARNs) of the per-order functions the workflow invokes."""

    validate: str
    reserve: str
    charge: str
    confirm: str
    cancel: str


class StepFailedError(Exception):
    """A step's invoke failed for good (retries exhausted or not retryable): what a Catch receives."""

    def __init__(self, step: str, error: str, cause: str) -> None:
        super().__init__(f"{step} failed: {error}: {cause}")
        self.error = error
        self.cause = cause

    def as_caught(self) -> dict[str, str]:
        """The ``$.error`` a Step Functions Catch adds to the state."""
        return {"Error": self.error, "Cause": self.cause}


def error_name(error: InvokeError) -> str:
    """The error's bare name: Lambda reports ``errorType`` bare, the local runner module-qualified,
    Step Functions with a ``Lambda.`` prefix, a chained-invoke timeout as ``ChainedInvoke.Timeout``."""
    return (error.error_type or "").rsplit(".", 1)[-1] or "Error"


def _cause(error: InvokeError) -> str:
    """The Cause a Lambda Task failure carries: the function error as Lambda reports it, in JSON."""
    return json.dumps({"errorMessage": error.message or "", "errorType": error_name(error)})


def invoke_step(
    context: DurableContext, step: str, function_name: str, payload: Mapping[str, Any], policy: RetryPolicy
) -> dict[str, Any]:
    """Invoke ``function_name`` until it answers or its retrier gives up, waiting (suspended) between tries.

    Every try is an invoke operation of its own, so a replay returns each try's checkpointed outcome
    and the retry counts come out the same: the loop is deterministic.
    """
    failures: Counter[str] = Counter()
    attempt = 1
    while True:
        name = step if attempt == 1 else f"{step} (attempt {attempt})"
        try:
            result: dict[str, Any] = context.invoke(function_name, dict(payload), name=name)
            return result
        except InvokeError as error:
            retrier = policy.retrier_for(error_name(error))
            failures[retrier.name] += 1
            decision = retrier.decide(error, failures[retrier.name])
            if not decision.should_retry:
                raise StepFailedError(step, error_name(error), _cause(error)) from error
            context.wait(decision.delay, name=f"{name} backoff")
            attempt += 1


def finished(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state machine's "Order finished": the per-order outcome the summary counts."""
    return {key: state.get(key) for key in ("order_id", "item_index", "outcome", "code", "reason")}


def _conflicting(item: Mapping[str, Any]) -> dict[str, Any]:
    order = item.get("order")
    order_id = order.get("order_id") if isinstance(order, Mapping) else None
    return finished(
        {
            "order_id": order_id,
            "item_index": item["item_index"],
            "outcome": Outcome.REJECTED.value,
            "code": Code.CONFLICTING_ORDER.value,
            "reason": f"order {order_id} was already submitted with different content",
        }
    )


def _cancel(
    context: DurableContext, state: Mapping[str, Any], functions: OrderFunctions, policy: RetryPolicy
) -> dict[str, Any]:
    try:
        return finished(invoke_step(context, "cancel_order", functions.cancel, state, policy))
    except StepFailedError as failure:
        return finished(
            {
                "order_id": None,
                "item_index": state["item_index"],
                "outcome": Outcome.FAILED.value,
                "code": COMPENSATION_FAILED,
                "reason": f"item {state['item_index']}: compensation failed after retries: "
                f"{failure.error}: {failure.cause}",
            }
        )


def process_order(
    context: DurableContext, item: Mapping[str, Any], functions: OrderFunctions, policy: RetryPolicy
) -> dict[str, Any]:
    """One order, routed as the state machine's ItemProcessor routes it."""
    try:
        state = invoke_step(context, "validate_order", functions.validate, item, policy)
    except StepFailedError as failure:
        if failure.error == CONFLICT_ERROR_NAME:
            return _conflicting(item)
        return _cancel(context, {**item, "error": failure.as_caught()}, functions, policy)
    if state.get("outcome") != Outcome.VALID:
        return finished(state)
    # Reserve and charge hand an order that did not reach their outcome to Cancel order; confirm ends it.
    forward_steps = (
        ("reserve_inventory", functions.reserve, Outcome.RESERVED, True),
        ("charge_payment", functions.charge, Outcome.CHARGED, True),
        ("confirm_order", functions.confirm, Outcome.SUCCEEDED, False),
    )
    for step, function_name, expected, cancel_otherwise in forward_steps:
        try:
            state = invoke_step(context, step, function_name, state, policy)
        except StepFailedError as failure:
            return _cancel(context, {**state, "error": failure.as_caught()}, functions, policy)
        if state.get("outcome") != expected and cancel_otherwise:
            return _cancel(context, state, functions, policy)
    return finished(state)


def map_items(batch_id: str, orders: Sequence[Any]) -> list[dict[str, Any]]:
    """What the state machine's ItemSelector builds for each order of an inline batch."""
    return [
        {"batch_id": batch_id, "item_index": index, "source_format": "inline", "order": order}
        for index, order in enumerate(orders)
    ]


def run_batch(
    context: DurableContext,
    batch_id: str,
    orders: Sequence[Any],
    functions: OrderFunctions,
    policy: RetryPolicy,
    max_concurrency: int,
) -> dict[str, Any]:
    """Every order of the batch, at most ``max_concurrency`` at once, then the batch summary."""
    items = map_items(batch_id, orders)

    def order_branch(branch: DurableContext, item: dict[str, Any], _index: int, _items: Sequence[Any]) -> Any:
        return process_order(branch, item, functions, policy)

    def order_name(_item: dict[str, Any], index: int) -> str:
        return f"order {index}"

    results: BatchResult[dict[str, Any]] = context.map(
        items,
        order_branch,
        name="process orders",
        config=MapConfig(
            max_concurrency=max_concurrency,
            # A failed order must not stop the others, as in the state machine's Map.
            completion_config=CompletionConfig.all_completed(),
            item_namer=order_name,
        ),
    )
    outcomes = []
    for entry in results.all:
        if entry.result is not None:
            outcomes.append(entry.result)
        else:
            # A branch that raised: an order whose workflow failed, as a failed Map iteration counts.
            error = entry.error
            detail = f"{error.type}: {error.message}" if error else f"its branch ended {entry.status.value}"
            outcomes.append(outcome_of_failed_item(items[entry.index], detail))
    # The summary step of the state machine, on the same outcomes: an inline batch's summary is its output.
    return summarize_batch(request={"batch_id": batch_id, "results": outcomes}, results_bucket="")
