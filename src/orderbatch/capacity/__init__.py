"""The capacity model the benchmark (``orderbatch.bench``) and the planner (``orderbatch.plan``) share.

The physical lower bound of a batch's makespan and the cost of its work (``model``), what a scenario
changes and the settings it runs at (``scenario``), and the retrier rewrites a scenario may apply
(``retriers``). It imports neither of them: the benchmark measures a scenario, the planner simulates it.
"""

from orderbatch.capacity.model import (
    MeasuredWork,
    Neighbour,
    UnitPrices,
    cost_per_million_orders,
    lower_bound_seconds,
)
from orderbatch.capacity.retriers import (
    DOCS_RETRIER,
    with_docs_retrier,
    without_second_pass,
    without_throttle_jitter,
)
from orderbatch.capacity.scenario import BenchSettings, Scenario, Targets, neighbour_for

__all__ = [
    "DOCS_RETRIER",
    "BenchSettings",
    "MeasuredWork",
    "Neighbour",
    "Scenario",
    "Targets",
    "UnitPrices",
    "cost_per_million_orders",
    "lower_bound_seconds",
    "neighbour_for",
    "with_docs_retrier",
    "without_second_pass",
    "without_throttle_jitter",
]
