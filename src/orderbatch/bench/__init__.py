"""`orderbatch bench`: how close each retry and concurrency policy gets to the physical limit, and its cost.

``run_bench(BenchSettings(template=Path("template.yaml")), ["tuned"])`` returns the JSON-ready document
the command writes; ``orderbatch.bench.report`` turns it into the table and the HTML report.
"""

from orderbatch.bench.model import Neighbour, UnitPrices, cost_per_million_orders, lower_bound_seconds
from orderbatch.bench.runner import BenchSettings, run_scenario
from orderbatch.bench.scenarios import SCENARIOS, Scenario, select
from orderbatch.bench.suite import run_bench

__all__ = [
    "SCENARIOS",
    "BenchSettings",
    "Neighbour",
    "Scenario",
    "UnitPrices",
    "cost_per_million_orders",
    "lower_bound_seconds",
    "run_bench",
    "run_scenario",
    "select",
]
