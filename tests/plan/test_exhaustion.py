"""How often an order spends its throttle retrier: the plan repeated over seeds, with its intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plan_helpers import APP_TEMPLATE, INLINE_MAP, app_template_without_second_pass

from orderbatch.capacity.model import Neighbour
from orderbatch.cli import main
from orderbatch.lint import lint_templates
from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import PlanSettings, load_workflow
from orderbatch.plan.exhaustion import (
    ExhaustionForecast,
    forecast_state_machine,
    mean_interval,
    wilson_interval,
)
from orderbatch.plan.lint_rule import ThrottleRetrierCanBeSpent


def bench_like(hold_seconds: float | None, **fields: object) -> PlanSettings:
    """The benchmark's noisy-neighbour batch: 200 orders, quota 10, MaxConcurrency 10, 0.5 s fixed work."""
    values: dict[str, object] = {
        "orders": 200,
        "account_concurrency": 10,
        "max_concurrency": 10,
        "fixed_durations": True,
        "warm_environments": 10,
        "neighbour": None if hold_seconds is None else Neighbour(5, 0.0, hold_seconds),
    }
    values.update(fields)
    return PlanSettings(**values)  # type: ignore[arg-type]


def test_the_wilson_interval_is_the_textbook_one_and_not_empty_at_zero() -> None:
    half = wilson_interval(5, 10)
    assert (round(half.low, 4), round(half.high, 4)) == (0.2366, 0.7634)
    none_in_twenty = wilson_interval(0, 20)
    assert none_in_twenty.estimate == 0.0
    assert none_in_twenty.low == 0.0
    assert round(none_in_twenty.high, 3) == 0.161
    with pytest.raises(ValueError, match="3 successes out of 2 trials"):
        wilson_interval(3, 2)


def test_the_mean_of_runs_that_all_saw_nothing_is_bounded_by_the_rule_of_three() -> None:
    assert mean_interval([0] * 30).high == pytest.approx(0.1)
    spread = mean_interval([0, 2, 1, 1])
    assert spread.estimate == 1.0
    assert 0.0 < spread.low < 1.0 < spread.high


def test_a_neighbour_holding_half_the_quota_longer_than_the_retrier_starves_orders(
    app_model: TemplateModel,
) -> None:
    # Given the design before the second pass: an order whose throttle retrier runs out is compensated
    workflow = load_workflow(app_model, map_state=INLINE_MAP, retrier="no-second-pass")

    # When the neighbour holds 5 of 10 slots for 300 s, longer than the retrier's ~70 s of waits
    forecast = forecast_state_machine(workflow, bench_like(300.0), runs=20)

    # Then orders fail from 429s alone in most batches, each after a full run of the retrier's attempts
    assert forecast.retrier_attempts == 20
    assert forecast.failed_orders > 20
    assert forecast.batch_failure.low > 0.5
    assert forecast.longest_throttle_streak == 21
    assert forecast.per_order.estimate == pytest.approx(forecast.failed_orders / (20 * 200))
    assert forecast.deferred_per_run == ()


def test_the_second_pass_runs_the_starved_orders_again_and_none_fails(app_model: TemplateModel) -> None:
    # Given the app as shipped, under the same neighbour
    workflow = load_workflow(app_model, map_state=INLINE_MAP)

    forecast = forecast_state_machine(workflow, bench_like(300.0), runs=20)

    # Then as many orders spend their retrier in the batch, but they are set aside, not failed: the
    # second pass runs them once no new order competes, 2 at a time in the 5 slots the neighbour leaves
    assert forecast.longest_throttle_streak == 21
    assert forecast.deferred_orders > 20
    assert len(forecast.deferred_per_run) == 20
    assert forecast.failed_orders == 0


def test_without_a_neighbour_no_order_spends_its_retrier(app_model: TemplateModel) -> None:
    workflow = load_workflow(app_model, map_state=INLINE_MAP)

    forecast = forecast_state_machine(workflow, bench_like(None), runs=20)

    assert forecast.failed_orders == 0
    assert forecast.longest_throttle_streak == 0
    # Twenty clean batches bound the chance of a failing one, they do not make it zero.
    assert forecast.batch_failure.high == pytest.approx(wilson_interval(0, 20).high)


def test_the_forecast_is_the_same_for_the_same_seeds(app_model: TemplateModel) -> None:
    workflow = load_workflow(app_model, map_state=INLINE_MAP)

    first = forecast_state_machine(workflow, bench_like(120.0, seed=7), runs=10)
    second = forecast_state_machine(workflow, bench_like(120.0, seed=7), runs=10)

    assert first == second


def test_a_measured_rate_is_judged_against_the_interval_and_its_own_sampling_error() -> None:
    forecast = ExhaustionForecast(
        runs=100,
        orders_per_run=200,
        retrier_attempts=20,
        failed_per_run=(0,) * 80 + (1,) * 20,
        longest_throttle_streak=21,
    )
    assert forecast.failed_per_batch.estimate == pytest.approx(0.2)
    assert forecast.agrees_with(2, 4)  # 0.5 a batch over 4 batches: within the noise of 4 runs
    assert not forecast.agrees_with(40, 10)  # 4 a batch: not the same process
    assert not ExhaustionForecast(100, 200, 20, (0,) * 100, 0).agrees_with(30, 10)


def test_plan_prints_the_forecast_and_writes_it_to_json(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    document = tmp_path / "plan.json"
    code = main(
        [
            "plan",
            "--template",
            str(APP_TEMPLATE),
            "--map",
            INLINE_MAP,
            "--orders",
            "200",
            "--account-concurrency",
            "10",
            "--parameter-overrides",
            "MapMaxConcurrency=10",
            "--fixed-durations",
            "--warm",
            "10",
            "--neighbour",
            "5@0+300",
            "--orchestrators",
            "stepfunctions",
            "--retrier",
            "no-second-pass",
            "--forecast-runs",
            "10",
            "--json",
            str(document),
        ]
    )

    assert code == 0
    out = capsys.readouterr().out
    assert "Throttle retrier exhaustion over 10 simulated batches of 200 orders" in out
    assert "longest run of 429s in a row on one Task: 21 (a retrier of 20 attempts is spent by 21)" in out
    forecast = json.loads(document.read_text())["throttle_exhaustion"]["stepfunctions"]
    assert forecast["runs"] == 10
    assert forecast["failed_orders"] == sum(forecast["failed_per_run"]) > 0
    assert 0 < forecast["batch_failure_probability"]["low"] <= forecast["batch_failure_probability"]["high"]


@pytest.mark.slow  # three lint passes with 400 simulated batches per Map: about 45 s
def test_lint_warns_only_under_a_contention_that_fails_orders_from_throttling(tmp_path: Path) -> None:
    heavy = ThrottleRetrierCanBeSpent(Neighbour(5, 0.0, 300.0), account_concurrency=10)
    light = ThrottleRetrierCanBeSpent(Neighbour(1, 0.0, 10.0), account_concurrency=10)
    before_second_pass = app_template_without_second_pass(tmp_path)

    warned = lint_templates([before_second_pass], extra_rules=[heavy])
    quiet = lint_templates([before_second_pass], extra_rules=[light])
    shipped = lint_templates([APP_TEMPLATE], extra_rules=[heavy])

    spent = [problem for problem in warned if problem.rule_id == "W9524"]
    assert {problem.message.split(":")[0] for problem in spent} == {
        "OrderBatchStateMachine 'Process inline orders'",
        "OrderBatchStateMachine 'Process JSON orders from S3'",
    }
    assert "holding 5 of 10 slots for 300 s" in spent[0].message
    assert "second pass after the batch" in spent[0].message
    assert not [problem for problem in quiet if problem.rule_id == "W9524"]
    # The app as shipped sets such orders aside for its second pass: none fails, nothing to warn about.
    assert not [problem for problem in shipped if problem.rule_id == "W9524"]
