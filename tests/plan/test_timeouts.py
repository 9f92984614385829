"""A call past its timeout: held until cut off, retried by the timeout retrier, then caught."""

from __future__ import annotations

import pytest
from plan_helpers import idealised, small_model

from orderbatch.plan import Duration, load_workflow, simulate

TIMEOUT_RETRY = {
    "ErrorEquals": ["States.TaskFailed", "States.Timeout"],
    "IntervalSeconds": 2,
    "BackoffRate": 2,
    "MaxAttempts": 2,
}


def test_a_call_longer_than_the_function_timeout_is_cut_retried_and_compensated() -> None:
    # Given a task whose function times out after 3 s but always needs 5 s, retried twice (2 s, 4 s)
    model = small_model(retry=[TIMEOUT_RETRY], function_timeout=3)
    settings = idealised(
        orders=1, account_concurrency=10, durations={"WorkFunction": Duration.fixed(5.0)}, trace_orders=1
    )

    # When an order runs
    result = simulate(load_workflow(model), settings)

    # Then the task ran 3 times, each held 3 s (billed), at 0, 3 + 2 = 5 and 5 + 3 + 4 = 12 s
    work_times = [record.time_seconds for record in result.trace if record.step == "Work"]
    assert work_times == [0.0, 5.0, 12.0]
    assert (result.counters.timeouts, result.counters.timeout_retries) == (3, 2)
    # then the Catch sent it to Undo (0.5 s) at 15 s
    assert result.counters.failed_timed_out == 1
    assert result.counters.compensated == 1
    assert result.makespan_seconds == pytest.approx(15.5)
    # 3 x 3 s of Work at 1 GB, plus 0.5 s of Undo
    assert result.counters.lambda_gb_seconds == pytest.approx(9.5)
