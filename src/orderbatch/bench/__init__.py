"""`orderbatch bench`: how close each retry and concurrency policy gets to the physical limit, and its cost.

``run_bench(BenchSettings(template=Path("template.yaml")), ["tuned"])`` returns the JSON-ready document
the command writes; ``orderbatch.bench.report`` turns it into the table and the HTML report. The bound,
the cost model and what a scenario is live in ``orderbatch.capacity``, which the planner shares.
"""

from orderbatch.bench.runner import run_scenario
from orderbatch.bench.scenarios import SCENARIOS, select
from orderbatch.bench.suite import run_bench

__all__ = [
    "SCENARIOS",
    "run_bench",
    "run_scenario",
    "select",
]
