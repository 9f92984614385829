"""The benchmark's scenarios as plans, so a measured run and its simulation can be set side by side.

``plan_scenario(SCENARIOS["oversubscribed"], BenchSettings(template=Path("template.yaml")))`` simulates
what ``orderbatch bench`` runs on the local cloud: the Map its batch goes through (inline up to 500 orders,
the Distributed Map over a JSON object in S3 above) with MaxConcurrency set from the quota,
the scenario's retrier rewrite, d seconds of fixed work per step, C warm environments per function when
the benchmark warms them, and its noisy neighbour.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from orderbatch.capacity.retriers import with_docs_retrier, without_second_pass, without_throttle_jitter
from orderbatch.capacity.scenario import BenchSettings, Scenario, neighbour_for
from orderbatch.lint.template_model import TemplateModel, read_template_file
from orderbatch.plan.durable import DurableModel, simulate_durable
from orderbatch.plan.results import PlanResult
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.simulator import simulate
from orderbatch.plan.workflow import load_workflow

# The Map each of the benchmark's sources runs: orders in the execution input, or a JSON object in S3.
BENCH_MAP_STATES = {"inline": "Process inline orders", "s3": "Process JSON orders from S3"}


def retrier_name(scenario: Scenario) -> str:
    """The planner's name for a scenario's ``definition_transform``."""
    if scenario.definition_transform is None:
        return "app"
    names = {
        with_docs_retrier: "docs",
        without_throttle_jitter: "no-jitter",
        without_second_pass: "no-second-pass",
    }
    if scenario.definition_transform not in names:
        raise ValueError(
            f"scenario {scenario.name} rewrites the definition in a way the planner does not know"
        )
    return names[scenario.definition_transform]


def scenario_settings(scenario: Scenario, bench: BenchSettings, **overrides: object) -> PlanSettings:
    """The plan settings that mirror one benchmark scenario; ``overrides`` replace any field."""
    values: dict[str, object] = {
        "orders": bench.orders,
        "account_concurrency": bench.quota,
        "work_seconds": bench.work_seconds,
        "fixed_durations": True,
        "warm_environments": bench.quota if bench.warm else 0,
        "max_concurrency": scenario.max_concurrency(bench.quota),
        "neighbour": neighbour_for(scenario, bench),
        "seed": bench.seed,
    }
    values.update(overrides)
    return PlanSettings(**values)  # type: ignore[arg-type]


def plan_scenario(
    scenario: Scenario,
    bench: BenchSettings,
    *,
    model: TemplateModel | None = None,
    **overrides: object,
) -> PlanResult:
    """Simulate one benchmark scenario on the bench's template (pass ``model`` to read it only once)."""
    workflow = load_workflow(
        model or read_template_file(bench.template),
        retrier=retrier_name(scenario),
        map_state=BENCH_MAP_STATES[scenario.source_for(bench.orders)],
    )
    return simulate(workflow, scenario_settings(scenario, bench, **overrides)).labelled(scenario.name)


def bench_forecast(scenario: Scenario, settings: BenchSettings) -> dict[str, Any] | None:
    """The figures ``orderbatch bench`` sets beside a measured scenario (same N, C, d, MaxConcurrency,
    retrier, neighbour); None for a scenario with no work per step, which measures the local cloud's
    own cost per order, which the planner does not model."""
    if scenario.work_seconds == 0:
        return None
    if scenario.work_seconds is not None:
        settings = dataclasses.replace(settings, work_seconds=scenario.work_seconds)
    plan = plan_scenario(scenario, settings)
    return {
        "makespan_seconds": round(plan.makespan_seconds, 2),
        "throttles_per_order": round(plan.throttles_per_order, 3),
        "failed_orders": plan.failed_orders,
        "transitions_per_order": round(plan.transitions_per_order, 2),
    }


def durable_bench_forecast(scenario: Scenario, settings: BenchSettings) -> dict[str, Any] | None:
    """The durable model's figures beside a measured durable run: the same N, C, d, MaxConcurrency and
    neighbour; the docs retrier (429s not retried) as the bench sets it, and the app's retrier where the
    durable function has no counterpart of a rewrite (no jitter). None where ``bench_forecast`` has none."""
    if scenario.work_seconds == 0:
        return None
    if scenario.work_seconds is not None:
        settings = dataclasses.replace(settings, work_seconds=scenario.work_seconds)
    retrier = "docs" if retrier_name(scenario) == "docs" else "app"
    workflow = load_workflow(
        read_template_file(settings.template),
        retrier=retrier,
        map_state=BENCH_MAP_STATES[scenario.source_for(settings.orders)],
    )
    # The local cloud retries a throttled chained invoke in the service, so the forecast does too.
    model = DurableModel(service_retries_chained_throttles=True)
    plan = simulate_durable(workflow, scenario_settings(scenario, settings), model)
    return {
        "makespan_seconds": round(plan.makespan_seconds, 2),
        "throttles_per_order": round(plan.throttles_per_order, 3),
        "failed_orders": plan.failed_orders,
        "replays_per_order": round(plan.replays_per_order, 3),
        "operations_per_order": round(plan.operations_per_order, 2),
    }
