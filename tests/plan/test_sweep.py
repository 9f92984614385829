"""Sweeps: a setting varied, the best named with the reason."""

from __future__ import annotations

import pytest
from plan_helpers import INLINE_MAP

from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import PlanSettings
from orderbatch.plan.sweep import PlanRequest, Sweep, choose_best, run_sweep


def test_the_best_max_concurrency_is_the_quota(app_model: TemplateModel) -> None:
    # Given 300 orders on a quota of 10, MapMaxConcurrency swept below, at and above it
    request = PlanRequest(app_model, PlanSettings(orders=300, account_concurrency=10), map_state=INLINE_MAP)

    # When the sweep runs
    results = run_sweep(request, Sweep.parse("MapMaxConcurrency=4,10,30"))
    best, reason = choose_best(results)

    # Then below the quota is slow, above it throttles; at the quota is best
    by_label = {result.label: result for result in results}
    assert (
        by_label["MapMaxConcurrency=4"].makespan_seconds
        > 2 * by_label["MapMaxConcurrency=10"].makespan_seconds
    )
    assert by_label["MapMaxConcurrency=10"].throttles == 0
    assert by_label["MapMaxConcurrency=30"].throttles_per_order > 1
    assert best.label == "MapMaxConcurrency=10"
    assert reason.startswith("MapMaxConcurrency=10: the shortest makespan with zero failed orders")


def test_the_docs_retrier_fails_orders_and_is_never_the_best(app_model: TemplateModel) -> None:
    # Given the app at 3 x the quota, its retrier against AWS's docs retrier and no jitter
    request = PlanRequest(
        app_model,
        PlanSettings(orders=200, account_concurrency=10),
        parameter_overrides={"MapMaxConcurrency": "30"},
        map_state=INLINE_MAP,
    )

    # When the retriers are swept
    results = run_sweep(request, Sweep.parse("retrier=app,docs,no-jitter"))
    best, reason = choose_best(results)

    # Then the docs retrier (no retry of 429s) fails most orders; the app's retrier finishes all, first
    by_label = {result.label: result for result in results}
    assert by_label["retrier=docs"].failed_orders > 100
    assert by_label["retrier=app"].failed_orders == 0
    assert best.label == "retrier=app"
    assert "retrier=docs failed" in reason


def test_near_ties_go_to_fewer_429s(app_model: TemplateModel) -> None:
    # Given MaxConcurrency at the quota and just above it, on fixed durations
    request = PlanRequest(
        app_model,
        PlanSettings(orders=200, account_concurrency=10, fixed_durations=True),
        map_state=INLINE_MAP,
    )

    # When both are planned
    results = run_sweep(request, Sweep.parse("MaxConcurrency=10,11"))
    best, _reason = choose_best(results)

    # Then the one without 429s wins, though both finish at nearly the same time
    assert results[1].throttles > 0
    assert best.label == "MaxConcurrency=10"


def test_a_sweep_of_an_unknown_setting_is_refused(app_model: TemplateModel) -> None:
    request = PlanRequest(app_model, PlanSettings(orders=10))

    with pytest.raises(ValueError, match="cannot sweep 'MapMaxConcurrence'"):
        request.varied("MapMaxConcurrence", "4")
