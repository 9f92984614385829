"""Lambda's and Step Functions' quotas as the simulator enforces them."""

from __future__ import annotations

import pytest
from plan_helpers import INLINE_MAP, idealised, small_model, throttle_retrier

from orderbatch.capacity.model import Neighbour
from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import PlanSettings, load_workflow, simulate

APP_RETRY = [throttle_retrier(interval=1, rate=2, attempts=20, cap=8, jitter="FULL")]


@pytest.mark.parametrize("max_concurrency", [12, 20, 40])
def test_running_calls_never_exceed_the_account_quota(app_model: TemplateModel, max_concurrency: int) -> None:
    # Given the app's inline Map at up to 4 x the quota, two batches and a neighbour holding 3 slots
    workflow = load_workflow(
        app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": max_concurrency}
    )
    settings = PlanSettings(
        orders=300, batches=2, account_concurrency=10, neighbour=Neighbour(3, 5.0, 30.0), seed=3
    )

    # When the plan runs
    result = simulate(workflow, settings)

    # Then the account never ran more than its quota, the neighbour's slots included, and calls were refused
    assert result.counters.peak_account <= 10
    assert result.counters.peak_busy <= 10
    assert max(point.running_calls + point.neighbour_slots for point in result.timeline) <= 10
    assert result.throttles > 0


def test_a_reserved_function_never_runs_more_than_its_reservation() -> None:
    # Given two tasks, the second reserved at 3, with 20 orders at once on a quota of 100
    model = small_model(
        tasks=("First", "Second"), retry=APP_RETRY, max_concurrency=20, reserved={"SecondFunction": 3}
    )

    # When the plan runs
    result = simulate(load_workflow(model), idealised(orders=200, account_concurrency=100))

    # Then the reserved function peaked at its reservation and was throttled beyond it; the other never
    by_function = result.to_json()["lambda"]["by_function"]
    assert by_function["SecondFunction"]["peak_concurrency"] == 3
    assert by_function["SecondFunction"]["throttles"] > 0
    assert by_function["FirstFunction"]["throttles"] == 0
    assert result.counters.unreserved_pool == 97


def test_a_reservation_given_on_the_command_line_replaces_the_template(app_model: TemplateModel) -> None:
    # Given the app's Map at 8 and a reservation of 2 for the payment function
    workflow = load_workflow(app_model, map_state=INLINE_MAP)

    # When the plan runs
    result = simulate(
        workflow, PlanSettings(orders=100, account_concurrency=50, reserved={"ChargePaymentFunction": 2})
    )

    # Then the payment function is held at 2
    by_function = result.to_json()["lambda"]["by_function"]
    assert by_function["ChargePaymentFunction"]["reserved"] == 2
    assert by_function["ChargePaymentFunction"]["peak_concurrency"] == 2


@pytest.mark.parametrize(("max_concurrency", "throttled"), [(5, False), (10, False), (11, True), (30, True)])
def test_429s_appear_only_when_max_concurrency_is_above_the_quota(
    app_model: TemplateModel, max_concurrency: int, throttled: bool
) -> None:
    # Given one batch on the app's inline Map with MaxConcurrency below, at or above the quota of 10
    workflow = load_workflow(
        app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": max_concurrency}
    )

    # When it runs (lognormal durations, cold starts, the step overhead: the defaults)
    result = simulate(workflow, PlanSettings(orders=200, account_concurrency=10))

    # Then there are 429s exactly when the Map can run more calls than the quota
    assert (result.throttles > 0) is throttled
    assert result.failed_orders == 0


def test_new_environments_are_limited_to_the_scaling_rate() -> None:
    # Given 3,000 children started at once on a quota of 10,000, StartExecution unlimited
    model = small_model(
        retry=[throttle_retrier(interval=1, rate=1, attempts=50)], max_concurrency=3000, distributed=True
    )
    settings = idealised(
        orders=3000,
        account_concurrency=10_000,
        start_executions_per_second=1e9,
        start_executions_burst=1e9,
        work_seconds=1.0,
    )

    # When they all call the same function at t = 0
    result = simulate(load_workflow(model), settings)

    # Then 1,000 environments start at t = 0 and 2,000 calls are refused; at t = 1 (the retry) the 1,000
    # idle ones are reused and 100 more may start (the rate refilled 100 in 1 s): 1,100 in, 900 refused again
    assert result.counters.scaling_throttles == 2000 + 900
    assert result.counters.environments[0] == 1100
    assert result.counters.cold_starts[0] == 1100
    assert result.makespan_seconds == pytest.approx(3.0)
    assert result.counters.failed == 0


def test_cold_starts_add_init_time_once_per_environment() -> None:
    # Given 10 orders of 4 one-second tasks at a quota of 10, an init time of 0.5 s
    model = small_model(tasks=("A", "B", "C", "D"), max_concurrency=10)
    settings = idealised(orders=10, account_concurrency=10, work_seconds=1.0, cold_start_seconds=0.5)

    # When they run at once
    result = simulate(load_workflow(model), settings)

    # Then every task of every order paid a cold start (10 environments per function) and no more
    assert sum(result.counters.cold_starts) == 40
    assert result.makespan_seconds == pytest.approx(4 * 1.5)

    # And with 10 warm environments per function, none do
    warm = simulate(
        load_workflow(model),
        idealised(orders=10, account_concurrency=10, work_seconds=1.0, warm_environments=10),
    )
    assert sum(warm.counters.cold_starts) == 0
    assert warm.makespan_seconds == pytest.approx(4.0)


def test_a_neighbour_holding_the_whole_pool_delays_every_call_until_it_leaves() -> None:
    # Given a neighbour holding all 10 slots for the first 5 s, and a patient retrier
    model = small_model(retry=[throttle_retrier(interval=0.25, rate=1, attempts=100)], max_concurrency=10)
    settings = idealised(
        orders=10, account_concurrency=10, work_seconds=1.0, neighbour=Neighbour(10, 0.0, 5.0)
    )

    # When the orders run
    result = simulate(load_workflow(model), settings)

    # Then every order was refused at 0, 0.25, ..., 4.75 s, got in at 5 s and finished at 6 s
    assert result.throttles == 10 * 20
    assert result.makespan_seconds == pytest.approx(6.0)
    assert result.counters.peak_account == 10


def test_standard_transitions_wait_for_the_token_bucket() -> None:
    # Given 1,000 orders of one 0.1 s task, 40 at a time, and a transitions quota of 50 per second (burst 50)
    model = small_model(compensation=False, max_concurrency=40)
    settings = idealised(
        orders=1000,
        account_concurrency=100,
        work_seconds=0.1,
        transitions_per_second=50,
        transitions_burst=50,
    )

    # When they run
    result = simulate(load_workflow(model), settings)

    # Then the transitions (2 per order: the Task, then its end) are paced at 50/s after the burst
    per_order = result.counters.transitions / result.orders
    assert per_order == pytest.approx(1.0)
    assert result.makespan_seconds >= (result.counters.transitions - 50) / 50 - 1
    assert result.counters.transition_wait_seconds > 0


def test_distributed_children_start_through_the_start_execution_bucket() -> None:
    # Given 3,000 children of a 0.01 s task, MaxConcurrency 3,000, StartExecution 300/s with a burst of 300
    model = small_model(compensation=False, max_concurrency=3000, distributed=True)
    settings = idealised(orders=3000, account_concurrency=10_000, work_seconds=0.01)

    # When they run
    result = simulate(load_workflow(model), settings)

    # Then the last child cannot start before (3,000 - 300) / 300 = 9 s
    assert result.makespan_seconds == pytest.approx(9.0, abs=0.1)
    assert result.counters.start_execution_wait_seconds > 0
    assert result.limited_by == "StartExecution"
