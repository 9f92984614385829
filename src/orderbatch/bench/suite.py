"""All the chosen scenarios one after another, then the engine figure, as one JSON-ready document."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from orderbatch.bench.durable_runner import run_durable_scenario
from orderbatch.bench.engine import compare_engines
from orderbatch.bench.runner import Progress, run_scenario
from orderbatch.bench.scenarios import SOAK, select
from orderbatch.capacity.model import UnitPrices
from orderbatch.capacity.scenario import BenchSettings, Scenario

# The forecast of a scenario set beside its measurement (the planner's, orderbatch.plan.scenarios), or
# None where there is none.
Forecast = Callable[[Scenario, BenchSettings], dict[str, Any] | None]

ORCHESTRATORS = ("stepfunctions", "durable")


def run_bench(
    settings: BenchSettings,
    scenario_names: list[str] | None = None,
    *,
    engine_items: int = 1000,
    prices: UnitPrices | None = None,
    progress: Progress | None = None,
    announce: Callable[[str], None] = lambda _text: None,
    forecast: Forecast | None = None,
    orchestrators: tuple[str, ...] = ORCHESTRATORS,
    durable_forecast: Forecast | None = None,
) -> dict[str, Any]:
    """Every scenario measured on each of ``orchestrators``; each with ``forecast``'s figures under
    "simulated" (None without one). The state machine's figures are the scenario's own keys; the durable
    function's, of the same batch on a fresh local cloud, are under "durable" (None when not run)."""
    unknown = sorted(set(orchestrators) - set(ORCHESTRATORS))
    if unknown or not orchestrators:
        raise ValueError(f"orchestrators must be among {', '.join(ORCHESTRATORS)}; got {list(orchestrators)}")
    prices = prices or UnitPrices()
    started = time.monotonic()
    results = []
    for scenario in select(scenario_names):
        if scenario.name == SOAK.name:
            raise ValueError("the soak runs on its own, with orderbatch.bench.soak.run_soak")
        announce(f"scenario {scenario.name}: {scenario.description}")
        figures: dict[str, Any]
        if "stepfunctions" in orchestrators:
            figures = run_scenario(scenario, settings, prices, progress)
            figures["simulated"] = forecast(scenario, settings) if forecast is not None else None
        else:
            figures = {
                "name": scenario.name,
                "description": scenario.description,
                "changed": list(scenario.changed),
            }
        figures["durable"] = None
        durable_runs = "durable" in orchestrators
        if durable_runs and scenario.source_for(settings.orders) != "inline":
            # DurableOrderBatchFunction takes the orders in its input only (docs/architecture.md).
            figures["durable_skipped"] = "the durable function takes inline batches (up to 500 orders) only"
            announce(f"durable: skipped, {figures['durable_skipped']}")
            durable_runs = False
        if durable_runs:
            durable = run_durable_scenario(scenario, settings, prices, progress)
            durable["simulated"] = (
                durable_forecast(scenario, settings) if durable_forecast is not None else None
            )
            figures["durable"] = durable
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
            "orchestrators": list(orchestrators),
            "local_cloud": "a fresh LocalCloud (same code, fresh tables) per scenario, one after another",
        },
        "unit_prices": prices.to_dict(),
        "scenarios": results,
        "engine": engine,
        "seconds": round(time.monotonic() - started, 1),
    }
