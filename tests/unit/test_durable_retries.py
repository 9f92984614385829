"""The durable workflow's retriers: the state machine's, expressed with the SDK's retry strategy."""

from __future__ import annotations

import pytest
from aws_durable_execution_sdk_python.config import JitterStrategy
from aws_durable_execution_sdk_python.exceptions import InvokeError

from handlers.durable_order_batch import Environment
from handlers.durable_pipeline import Retrier, RetryPolicy, error_name

THROTTLE = Retrier(
    "throttle",
    interval_seconds=1,
    backoff_rate=2,
    retries=20,
    max_delay_seconds=8,
    jitter=JitterStrategy.FULL,
)


def policy() -> RetryPolicy:
    return Environment.model_validate(
        {
            f"{step}_FUNCTION_NAME": step.lower()
            for step in (
                "VALIDATE_ORDER",
                "RESERVE_INVENTORY",
                "CHARGE_PAYMENT",
                "CONFIRM_ORDER",
                "CANCEL_ORDER",
            )
        }
    ).retry_policy()


def test_throttle_delays_are_fully_jittered_below_the_exponential_cap() -> None:
    throttled = InvokeError("Rate Exceeded.", error_type="TooManyRequestsException")
    for failures, ceiling in ((1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (20, 8)):
        delays = {THROTTLE.decide(throttled, failures).delay_seconds for _ in range(300)}
        # Whole seconds from 1 (the SDK's shortest wait) up to the capped exponential delay.
        assert min(delays) >= 1
        assert max(delays) <= ceiling
        if ceiling >= 4:
            assert len(delays) > 1, "full jitter spreads the delays"


def test_the_retries_are_bounded_as_step_functions_counts_them() -> None:
    throttled = InvokeError("Rate Exceeded.", error_type="TooManyRequestsException")
    assert THROTTLE.decide(throttled, 20).should_retry
    assert not THROTTLE.decide(throttled, 21).should_retry


def test_a_retrier_without_a_cap_or_jitter_waits_exactly_the_exponential_delay() -> None:
    in_progress = Retrier("in_progress", interval_seconds=3, backoff_rate=2, retries=4)
    error = InvokeError("busy", error_type="IdempotencyAlreadyInProgressError")
    assert [in_progress.decide(error, n).delay_seconds for n in range(1, 5)] == [3, 6, 12, 24]
    assert not in_progress.decide(error, 5).should_retry


@pytest.mark.parametrize(
    ("error_type", "retrier"),
    [
        ("TooManyRequestsException", "throttle"),
        ("Lambda.TooManyRequestsException", "throttle"),
        ("tests.functional.test_durable_pipeline.TooManyRequestsException", "throttle"),
        ("ServiceException", "lambda_service"),
        (
            "aws_lambda_powertools.utilities.idempotency.exceptions.IdempotencyAlreadyInProgressError",
            "in_progress",
        ),
        ("IdempotencyValidationError", "conflict"),
        ("ChainedInvoke.Timeout", "task_failed"),
        ("Sandbox.Timedout", "task_failed"),
        ("RuntimeError", "task_failed"),
        (None, "task_failed"),
    ],
)
def test_each_error_goes_to_the_retrier_the_state_machine_matches_it_with(
    error_type: str | None, retrier: str
) -> None:
    error = InvokeError("failed", error_type=error_type)
    if error_type is None:
        error.error_type = ""
    assert policy().retrier_for(error_name(error)).name == retrier


def test_a_conflict_is_never_retried() -> None:
    conflict = InvokeError("other content", error_type="IdempotencyValidationError")
    assert not policy().conflict.decide(conflict, 1).should_retry
