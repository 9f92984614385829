"""The batch workflow as durable code: the state machine's per-order routing, its retriers and its Map.

Each order runs in its own branch of ``context.map`` and calls the existing per-order functions through
``context.invoke`` (docs/architecture.md, "Durable functions", says why). A failed invoke goes through
the retriers the state machine's Lambda Tasks carry, with the same template parameters, then through
the same Catch routing: a conflicting order is reported, anything else is compensated by Cancel order.
A step throttled until its retrier runs out defers its order to a second pass after the batch, as the
state machine's throttled states do (statemachine/order_batch.workflow.yaml says why).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
from order_processing.summary import BatchSummary, StoredBatchSummary, outcome_of_failed_item, summarize_batch

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
    context: DurableContext, step: str, function_name: str, payload: Mapping[str, object], policy: RetryPolicy
) -> dict[str, object]:
    """Invoke ``function_name`` until it answers or its retrier gives up, waiting (suspended) between tries.

    Every try is an invoke operation of its own, so a replay returns each try's checkpointed outcome
    and the retry counts come out the same: the loop is deterministic.
    """
    failures: Counter[str] = Counter()
    attempt = 1
    while True:
        name = step if attempt == 1 else f"{step} (attempt {attempt})"
        try:
            result: dict[str, object] = context.invoke(function_name, dict(payload), name=name)
            return result
        except InvokeError as error:
            retrier = policy.retrier_for(error_name(error))
            failures[retrier.name] += 1
            decision = retrier.decide(error, failures[retrier.name])
            if not decision.should_retry:
                raise StepFailedError(step, error_name(error), _cause(error)) from error
            context.wait(decision.delay, name=f"{name} backoff")
            attempt += 1


def finished(state: Mapping[str, object]) -> dict[str, object]:
    """The state machine's "Order finished": the per-order outcome the summary counts."""
    return {key: state.get(key) for key in ("order_id", "item_index", "outcome", "code", "reason")}


def _conflicting(item: Mapping[str, object]) -> dict[str, object]:
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


# The per-order steps by the state machine's state names, which a deferral's ``resume_at`` carries.
VALIDATE_ORDER, RESERVE_INVENTORY, CHARGE_PAYMENT, CONFIRM_ORDER, CANCEL_ORDER = (
    "Validate order",
    "Reserve inventory",
    "Charge payment",
    "Confirm order",
    "Cancel order",
)
# Each step's operation name (its invokes and backoffs are named after it) and the function it calls.
STEP_OPERATIONS = {
    VALIDATE_ORDER: "validate_order",
    RESERVE_INVENTORY: "reserve_inventory",
    CHARGE_PAYMENT: "charge_payment",
    CONFIRM_ORDER: "confirm_order",
    CANCEL_ORDER: "cancel_order",
}
# The state machine's routing after each forward step: (the outcome that goes on, the next step, and
# where any other outcome goes: None to finish the order, CANCEL_ORDER to compensate it).
FORWARD_ROUTES: dict[str, tuple[Outcome, str | None, str | None]] = {
    VALIDATE_ORDER: (Outcome.VALID, RESERVE_INVENTORY, None),
    RESERVE_INVENTORY: (Outcome.RESERVED, CHARGE_PAYMENT, CANCEL_ORDER),
    CHARGE_PAYMENT: (Outcome.CHARGED, CONFIRM_ORDER, CANCEL_ORDER),
    CONFIRM_ORDER: (Outcome.SUCCEEDED, None, None),
}
DEFERRED = "DEFERRED"
THROTTLED_CODE = "THROTTLED"
# The error a step still throttled in the second pass fails its order with (the state machine's name).
LAMBDA_THROTTLED_ERROR = f"Lambda.{THROTTLED_ERROR_NAME}"


def _function_of(functions: OrderFunctions, step: str) -> str:
    return {
        VALIDATE_ORDER: functions.validate,
        RESERVE_INVENTORY: functions.reserve,
        CHARGE_PAYMENT: functions.charge,
        CONFIRM_ORDER: functions.confirm,
        CANCEL_ORDER: functions.cancel,
    }[step]


def deferral(step: str, step_input: Mapping[str, object]) -> dict[str, object]:
    """The state machine's throttled states in the first pass: the order waits for the second pass."""
    has_order_id = step not in (VALIDATE_ORDER, CANCEL_ORDER)
    return {
        "order_id": step_input.get("order_id") if has_order_id else None,
        "item_index": step_input["item_index"],
        "outcome": DEFERRED,
        "code": THROTTLED_CODE,
        "reason": f"{step} was throttled until its retrier ran out; the second pass runs it again",
        "resume_at": step,
        "resume_input": dict(step_input),
    }


# Which pass an order runs in: the batch's (may defer), the second (the last), or the only one (a batch
# run without a second pass: an order whose retrier runs out is compensated at once).
FIRST_PASS, SECOND_PASS, ONLY_PASS = "first", "second", "only"


def _throttled(step: str, failure: StepFailedError, stage: str) -> dict[str, str]:
    """The ``$.error`` an order still throttled in its last pass is compensated with."""
    if stage == SECOND_PASS:
        # What the second pass's throttled states add before compensating.
        cause = f"{step} was throttled until its retrier ran out, in the batch and again in the second pass"
        return {"Error": LAMBDA_THROTTLED_ERROR, "Cause": cause}
    return {"Error": LAMBDA_THROTTLED_ERROR, "Cause": failure.cause}


def run_order(
    context: DurableContext,
    step: str,
    state: Mapping[str, object],
    functions: OrderFunctions,
    policy: RetryPolicy,
    *,
    stage: str,
) -> dict[str, object]:
    """One order from ``step`` on, routed as the state machine's ItemProcessor routes it.

    A step throttled until its retrier runs out defers the order in the first pass, and fails it like any
    failed step in the second (or only) pass.
    """
    current: str | None = step
    while current is not None and current != CANCEL_ORDER:
        try:
            result = invoke_step(
                context, STEP_OPERATIONS[current], _function_of(functions, current), state, policy
            )
        except StepFailedError as failure:
            if failure.error == THROTTLED_ERROR_NAME:
                if stage == FIRST_PASS:
                    return deferral(current, state)
                caught = _throttled(current, failure, stage)
            elif current == VALIDATE_ORDER and failure.error == CONFLICT_ERROR_NAME:
                return _conflicting(state)
            else:
                caught = failure.as_caught()
            state = {**state, "error": caught}
            current = CANCEL_ORDER
            break
        state = result
        expected, next_step, otherwise = FORWARD_ROUTES[current]
        current = next_step if state.get("outcome") == expected else otherwise
    if current == CANCEL_ORDER:
        return _cancel(context, state, functions, policy, stage=stage)
    return finished(state)


def _cancel(
    context: DurableContext,
    state: Mapping[str, object],
    functions: OrderFunctions,
    policy: RetryPolicy,
    *,
    stage: str,
) -> dict[str, object]:
    try:
        return finished(invoke_step(context, "cancel_order", functions.cancel, state, policy))
    except StepFailedError as failure:
        if failure.error == THROTTLED_ERROR_NAME and stage == FIRST_PASS:
            return deferral(CANCEL_ORDER, state)
        caught = (
            _throttled(CANCEL_ORDER, failure, stage)
            if failure.error == THROTTLED_ERROR_NAME
            else failure.as_caught()
        )
        return finished(
            {
                "order_id": None,
                "item_index": state["item_index"],
                "outcome": Outcome.FAILED.value,
                "code": COMPENSATION_FAILED,
                "reason": f"item {state['item_index']}: compensation failed after retries: "
                f"{caught['Error']}: {caught['Cause']}",
            }
        )


def process_order(
    context: DurableContext,
    item: Mapping[str, object],
    functions: OrderFunctions,
    policy: RetryPolicy,
    *,
    stage: str = FIRST_PASS,
) -> dict[str, object]:
    """One order of the batch, from its Map item."""
    return run_order(context, VALIDATE_ORDER, item, functions, policy, stage=stage)


def resume_order(
    context: DurableContext, deferred: Mapping[str, object], functions: OrderFunctions, policy: RetryPolicy
) -> dict[str, object]:
    """One deferred order in the second pass: its throttled step again, with the input it had."""
    resume_at, resume_input = deferred["resume_at"], deferred["resume_input"]
    if not isinstance(resume_at, str) or not isinstance(resume_input, Mapping):
        raise ValueError(f"deferred order {deferred.get('item_index')} has no step and input to resume")
    return run_order(context, resume_at, resume_input, functions, policy, stage=SECOND_PASS)


def map_items(batch_id: str, orders: Sequence[object]) -> list[dict[str, object]]:
    """What the state machine's ItemSelector builds for each order of an inline batch."""
    return [
        {"batch_id": batch_id, "item_index": index, "source_format": "inline", "order": order}
        for index, order in enumerate(orders)
    ]


def run_batch(
    context: DurableContext,
    batch_id: str,
    orders: Sequence[object],
    functions: OrderFunctions,
    policy: RetryPolicy,
    max_concurrency: int,
    deferred_max_concurrency: int = 2,
    *,
    second_pass: bool = True,
) -> BatchSummary | StoredBatchSummary:
    """Every order of the batch, at most ``max_concurrency`` at once; then the second pass over the orders
    throttled until their retrier ran out, at most ``deferred_max_concurrency`` at once; then the summary.
    Without ``second_pass`` (the design before it, kept to compare), such an order is compensated at once."""
    items = map_items(batch_id, orders)
    stage = FIRST_PASS if second_pass else ONLY_PASS

    def order_branch(
        branch: DurableContext, item: dict[str, object], _index: int, _items: Sequence[object]
    ) -> dict[str, object]:
        return process_order(branch, item, functions, policy, stage=stage)

    first_pass = _outcomes(
        context.map(
            items,
            order_branch,
            name="process orders",
            config=MapConfig(
                max_concurrency=max_concurrency,
                # A failed order must not stop the others, as in the state machine's Map.
                completion_config=CompletionConfig.all_completed(),
                item_namer=_order_name,
            ),
        ),
        items,
    )
    finished_orders = [outcome for outcome in first_pass if outcome.get("outcome") != DEFERRED]
    deferred = [outcome for outcome in first_pass if outcome.get("outcome") == DEFERRED]
    rerun: list[dict[str, object]] = []
    if deferred:

        def deferred_branch(
            branch: DurableContext, order: dict[str, object], _index: int, _items: Sequence[object]
        ) -> dict[str, object]:
            return resume_order(branch, order, functions, policy)

        rerun = _outcomes(
            context.map(
                deferred,
                deferred_branch,
                name="run deferred orders again",
                config=MapConfig(
                    max_concurrency=deferred_max_concurrency,
                    completion_config=CompletionConfig.all_completed(),
                    item_namer=_order_name,
                ),
            ),
            [order["resume_input"] for order in deferred],
        )
    # The summary step of the state machine, on the same outcomes: an inline batch's summary is its output.
    return summarize_batch(
        request={"batch_id": batch_id, "results": finished_orders, "second_pass": rerun},
        results_bucket="",
    )


def _order_name(_item: dict[str, object], index: int) -> str:
    return f"order {index}"


def _outcomes(results: BatchResult[dict[str, object]], items: Sequence[object]) -> list[dict[str, object]]:
    outcomes = []
    for entry in results.all:
        if entry.result is not None:
            outcomes.append(entry.result)
        else:
            # A branch that raised: an order whose workflow failed, as a failed Map iteration counts.
            error = entry.error
            detail = f"{error.type}: {error.message}" if error else f"its branch ended {entry.status.value}"
            outcomes.append(outcome_of_failed_item(items[entry.index], detail))
    return outcomes
