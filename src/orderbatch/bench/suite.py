"""All the chosen scenarios one after another, then the engine figure, as one JSON-ready document."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from orderbatch.bench.engine import compare_engines
from orderbatch.bench.model import UnitPrices
from orderbatch.bench.runner import BenchSettings, Progress, run_scenario
from orderbatch.bench.scenarios import SOAK, Scenario, select


def simulated(scenario: Scenario, settings: BenchSettings) -> dict[str, Any] | None:
    """The planner's forecast of the same scenario (same N, C, d, MaxConcurrency, retrier, neighbour)."""
    if scenario.work_seconds == 0:
        return None  # the scale run measures the local cloud's own cost, which the planner does not model
    from orderbatch.plan.scenarios import plan_scenario

    if scenario.work_seconds is not None:
        settings = dataclasses.replace(settings, work_seconds=scenario.work_seconds)
    plan = plan_scenario(scenario, settings)
    return {
        "makespan_seconds": round(plan.makespan_seconds, 2),
        "throttles_per_order": round(plan.throttles_per_order, 3),
        "failed_orders": plan.failed_orders,
        "transitions_per_order": round(plan.transitions_per_order, 2),
    }


def run_bench(
    settings: BenchSettings,
    scenario_names: list[str] | None = None,
    *,
    engine_items: int = 1000,
    prices: UnitPrices | None = None,
    progress: Progress | None = None,
    announce: Callable[[str], None] = lambda _text: None,
) -> dict[str, Any]:
    prices = prices or UnitPrices()
    started = time.monotonic()
    results = []
    for scenario in select(scenario_names):
        if scenario.name == SOAK.name:
            raise ValueError("the soak runs on its own, with orderbatch.bench.soak.run_soak")
        announce(f"scenario {scenario.name}: {scenario.description}")
        figures = run_scenario(scenario, settings, prices, progress)
        figures["simulated"] = simulated(scenario, settings)
        results.append(figures)
        announce("")
    engine = None
    if engine_items > 0:
        announce(
            f"engine: {engine_items} trivial Lambda tasks on the local cloud, then moto's interpreter alone"
        )
        engine = compare_engines(engine_items)
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {
            "template": str(settings.template),
            "orders": settings.orders,
            "quota": settings.quota,
            "work_seconds": settings.work_seconds,
            "steps": settings.steps,
            "warm": settings.warm,
            "batches": settings.batches,
            "local_cloud": "a fresh LocalCloud (same code, fresh tables) per scenario, one after another",
        },
        "unit_prices": prices.to_dict(),
        "scenarios": results,
        "engine": engine,
        "seconds": round(time.monotonic() - started, 1),
    }
