"""Retry timing exactly as the Developer Guide gives it, and MaxAttempts counted exactly, in the simulator."""

from __future__ import annotations

import itertools
import random
import statistics
from collections import defaultdict

import pytest
from plan_helpers import idealised, small_model, throttle_retrier

from orderbatch.lint.asl import Retrier
from orderbatch.plan import AttemptRecord, RetryPolicy, load_workflow, simulate


def attempts_by_order(trace: list[AttemptRecord], step: str) -> dict[int, list[AttemptRecord]]:
    grouped: dict[int, list[AttemptRecord]] = defaultdict(list)
    for record in trace:
        if record.step == step:
            grouped[record.order].append(record)
    return grouped


def test_without_jitter_the_nth_wait_is_interval_times_rate_to_the_n_minus_1_capped() -> None:
    # Given a retrier of interval 1.5 s, rate 2, cap 10 s and no jitter
    policy = RetryPolicy(("Lambda.TooManyRequestsException",), 1.5, 6, 2.0, 10.0, full_jitter=False)

    # When the waits before retries 1..6 are drawn
    waits = [policy.wait_seconds(n, random.Random(0)) for n in range(1, 7)]

    # Then they are 1.5, 3, 6, then capped at 10
    assert waits == [1.5, 3.0, 6.0, 10.0, 10.0, 10.0]


def test_full_jitter_waits_stay_under_the_capped_value_and_average_half_of_it() -> None:
    # Given the app's 429 retrier shape: interval 1 s, rate 2, cap 8 s, FULL jitter
    policy = RetryPolicy(("Lambda.TooManyRequestsException",), 1.0, 20, 2.0, 8.0, full_jitter=True)
    rng = random.Random(42)

    for retry_number, ceiling in ((1, 1.0), (3, 4.0), (4, 8.0), (12, 8.0)):
        # When many waits are drawn for one retry number
        waits = [policy.wait_seconds(retry_number, rng) for _ in range(20_000)]

        # Then each lies in [0, ceiling] and their mean is half the ceiling
        assert min(waits) >= 0.0
        assert max(waits) <= ceiling
        assert statistics.fmean(waits) == pytest.approx(ceiling / 2, rel=0.02)


def test_asl_defaults_apply_when_fields_are_missing() -> None:
    # Given a retrier that names only its errors (as the linter reads it, ASL defaults filled in)
    retrier = Retrier(0, ("States.ALL",), 1.0, 3, 2.0, None, full_jitter=False)

    # When the planner takes it
    policy = RetryPolicy.from_retrier(retrier, "test")

    # Then the waits are 1, 2, 4 with no cap
    assert [policy.wait_ceiling(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert policy.max_attempts == 3


def test_a_throttled_order_retries_at_exactly_the_documented_times_in_the_simulation() -> None:
    # Given a function reserved at 0 (every call is a 429), retried with interval 1, rate 2, cap 5, 5 attempts
    retry = [throttle_retrier(interval=1, rate=2, attempts=5, cap=5)]
    model = small_model(retry=retry, reserved={"WorkFunction": 0})
    workflow = load_workflow(model)

    # When one order runs, with its attempts traced
    result = simulate(workflow, idealised(orders=1, account_concurrency=10, trace_orders=1))

    # Then it is tried 1 + 5 times, at 0, 1, 3, 7, 12, 17 (waits 1, 2, 4, then capped at 5)
    times = [record.time_seconds for record in attempts_by_order(result.trace, "Work")[0]]
    assert times == [0.0, 1.0, 3.0, 7.0, 12.0, 17.0]
    # and then the Catch sends it to the compensation, which runs (0.5 s) and ends the order
    assert result.counters.failed_throttled == 1
    assert result.counters.compensated == 1
    assert result.makespan_seconds == pytest.approx(17.5)
    assert result.throttles == 6
    assert result.retries == 5


@pytest.mark.parametrize(("max_attempts", "expected_attempts"), [(0, 1), (1, 2), (3, 4), (7, 8)])
def test_max_attempts_retries_follow_the_first_attempt(max_attempts: int, expected_attempts: int) -> None:
    # Given a function that always answers 429 and a retrier with MaxAttempts = max_attempts
    model = small_model(
        retry=[throttle_retrier(attempts=max_attempts, interval=0.5, rate=1)], reserved={"WorkFunction": 0}
    )

    # When orders run
    result = simulate(load_workflow(model), idealised(orders=5, account_concurrency=10, trace_orders=5))

    # Then each is tried MaxAttempts + 1 times (0 = never retried), then fails
    per_order = attempts_by_order(result.trace, "Work")
    assert {order: len(records) for order, records in per_order.items()} == dict.fromkeys(
        range(5), expected_attempts
    )
    assert result.counters.failed_throttled == 5


def test_full_jitter_waits_in_the_simulation_lie_within_their_ceilings_and_average_half() -> None:
    # Given 400 orders whose first task always answers 429, retried with FULL jitter (1, 2, 4, cap 4)
    retry = [throttle_retrier(interval=1, rate=2, attempts=6, cap=4, jitter="FULL")]
    model = small_model(retry=retry, reserved={"WorkFunction": 0}, max_concurrency=40)

    # When they run, traced
    result = simulate(load_workflow(model), idealised(orders=400, account_concurrency=100, trace_orders=400))

    # Then every gap between two attempts is within [0, the n-th capped wait]; each gap's mean is half of it
    ceilings = [1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    gaps_by_retry: dict[int, list[float]] = defaultdict(list)
    for records in attempts_by_order(result.trace, "Work").values():
        assert len(records) == 7
        for number, (before, after) in enumerate(itertools.pairwise(records), start=1):
            gap = after.time_seconds - before.time_seconds
            assert 0.0 <= gap <= ceilings[number - 1]
            gaps_by_retry[number].append(gap)
    for number, gaps in gaps_by_retry.items():
        assert statistics.fmean(gaps) == pytest.approx(ceilings[number - 1] / 2, rel=0.1)


def test_a_task_without_a_429_retrier_sends_the_throttled_order_straight_to_its_catch() -> None:
    # Given a Task with no retrier at all, a function reserved at 0
    model = small_model(retry=[], reserved={"WorkFunction": 0})

    # When an order runs
    result = simulate(load_workflow(model), idealised(orders=1, account_concurrency=10, trace_orders=1))

    # Then one attempt, no retry, the compensation runs
    assert len(result.trace) == 2  # the Work attempt and the Undo call
    assert (result.retries, result.counters.failed_throttled, result.counters.compensated) == (0, 1, 1)
