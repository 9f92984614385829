"""The simulated makespan against the benchmark's bound, in cases where the answer is known in closed form."""

from __future__ import annotations

import pytest
from plan_helpers import INLINE_MAP, idealised, small_model

from orderbatch.capacity.model import lower_bound_seconds
from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import load_workflow, plan_lower_bound, simulate


def test_the_app_at_its_quota_finishes_exactly_at_the_bound(app_model: TemplateModel) -> None:
    # Given the app's inline Map at MaxConcurrency 10, 100 orders of 4 one-second tasks, quota 10,
    # no cold starts and no step overhead
    workflow = load_workflow(app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": 10})
    settings = idealised(orders=100, account_concurrency=10, work_seconds=1.0)

    # When the plan runs
    result = simulate(workflow, settings)

    # Then the makespan is N.k.d / C = 100 x 4 x 1 / 10 = 40 s exactly, the bound, with nothing refused
    assert result.makespan_seconds == 40.0
    assert result.bound_seconds == 40.0 == lower_bound_seconds(100, 4, 1.0, 10, max_concurrency=10)
    assert result.throttles == 0
    assert result.counters.succeeded == 100
    assert result.counters.peak_busy == 10


def test_few_orders_are_bound_by_one_orders_chain_of_tasks(app_model: TemplateModel) -> None:
    # Given 5 orders on a quota of 10: they all run at once
    workflow = load_workflow(app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": 10})

    # When they run
    result = simulate(workflow, idealised(orders=5, account_concurrency=10, work_seconds=1.0))

    # Then the makespan is k.d = 4 s
    assert result.makespan_seconds == result.bound_seconds == 4.0


def test_max_concurrency_below_the_quota_sets_the_capacity(app_model: TemplateModel) -> None:
    # Given MaxConcurrency 4 on a quota of 10, two batches at once
    workflow = load_workflow(app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": 4})
    settings = idealised(orders=40, batches=2, account_concurrency=10, work_seconds=0.5)

    # When they run
    result = simulate(workflow, settings)

    # Then 8 run at a time: 80 orders x 4 x 0.5 s / 8 = 20 s, and that is the bound too
    assert result.makespan_seconds == pytest.approx(20.0)
    assert plan_lower_bound(workflow, settings) == pytest.approx(20.0)


def test_the_step_overhead_adds_to_every_task() -> None:
    # Given one task of 1 s per order, 10 at a time, 0.25 s of Step Functions overhead before each call
    model = small_model(max_concurrency=10)
    settings = idealised(orders=100, account_concurrency=10, work_seconds=1.0, step_overhead_seconds=0.25)

    # When they run
    result = simulate(load_workflow(model), settings)

    # Then each wave of 10 takes 1.25 s: 12.5 s, against a bound of 10 s
    assert result.makespan_seconds == pytest.approx(12.5)
    assert result.bound_ratio == pytest.approx(1.25)


def test_an_inline_map_runs_at_most_40_iterations(app_model: TemplateModel) -> None:
    # Given the inline Map at MaxConcurrency 100 on a quota of 1,000
    workflow = load_workflow(app_model, map_state=INLINE_MAP, parameter_overrides={"MapMaxConcurrency": 100})

    # When 400 orders run
    result = simulate(workflow, idealised(orders=400, account_concurrency=1000, work_seconds=1.0))

    # Then 40 ran at once: 400 x 4 x 1 / 40 = 40 s
    assert result.counters.peak_busy == 40
    assert result.makespan_seconds == pytest.approx(40.0)
