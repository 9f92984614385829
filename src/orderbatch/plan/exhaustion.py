"""How likely an order is to spend its throttle retrier: the same plan run over many seeds.

One simulated batch says whether *this* draw of the jitter failed an order; it cannot say how often that
happens. Failing from 429s alone is a rare event made of a race: a throttled Map iteration sleeps in its
retrier while the Map admits fresh items, and a fresh item's first call takes a freed slot at once, so
under a neighbour an iteration can lose every wake-up until its attempts are spent. The probability of
that comes from repeating the batch with independent jitter (seeds), as the benchmark repeats it on the
local cloud, and it is given with a 95% confidence interval so that a measured rate can be held
against it:

- per batch: the chance that a batch fails at least one order from throttling (Wilson score interval
  over the runs, which are independent);
- expected failed orders per batch (normal interval of the mean over runs; failures within one batch
  are not independent, so the runs, not the orders, are the samples);
- per order: the expected failures per batch divided by the batch's orders.

With a second pass (``Workflow.second_pass_map``), an order whose retrier runs out is set aside, not
failed: the forecast counts those orders apart (``deferred_per_run``), and only an order still throttled
in the second pass fails.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from orderbatch.plan.durable import DurableCounters, DurableModel, simulate_durable
from orderbatch.plan.results import RunCounters
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.simulator import simulate
from orderbatch.plan.workflow import Workflow

# z for a two-sided 95% interval.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_json(self, digits: int = 6) -> dict[str, float]:
        return {
            "estimate": round(self.estimate, digits),
            "low": round(self.low, digits),
            "high": round(self.high, digits),
        }


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> Interval:
    """The Wilson score interval of a binomial proportion: sound at 0 and at small counts, where the
    normal approximation gives an interval of width zero."""
    if trials <= 0:
        raise ValueError("a proportion needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(samples: list[int], z: float = Z_95) -> Interval:
    """The mean of per-run counts with a normal interval; when every run saw 0, the upper end is the
    rule of three's 3/n (at least one failure in some batch is not excluded by n clean runs)."""
    n = len(samples)
    if n == 0:
        raise ValueError("a mean needs at least one sample")
    mean = sum(samples) / n
    if n == 1:
        return Interval(mean, 0.0 if mean == 0 else mean, math.inf if mean else 3.0)
    variance = sum((value - mean) ** 2 for value in samples) / (n - 1)
    half = z * math.sqrt(variance / n)
    if half == 0 and mean == 0:
        return Interval(0.0, 0.0, 3.0 / n)
    return Interval(mean, max(0.0, mean - half), mean + half)


@dataclass(frozen=True)
class RunOutcome:
    """What one simulated batch says about throttling: orders failed by 429s alone, and the longest run
    of 429s in a row any order met on one Task."""

    failed_by_throttling: int
    orders: int
    longest_throttle_streak: int
    deferred: int = 0


@dataclass(frozen=True)
class ExhaustionForecast:
    runs: int
    orders_per_run: int
    retrier_attempts: int | None
    """The throttle retrier's MaxAttempts (None when the Tasks differ or have none)."""
    failed_per_run: tuple[int, ...]
    longest_throttle_streak: int
    deferred_per_run: tuple[int, ...] = ()
    """Orders each run set aside for the second pass (their first-pass retrier ran out)."""

    @property
    def failed_orders(self) -> int:
        return sum(self.failed_per_run)

    @property
    def deferred_orders(self) -> int:
        return sum(self.deferred_per_run)

    @property
    def runs_with_failure(self) -> int:
        return sum(1 for failed in self.failed_per_run if failed)

    @property
    def batch_failure(self) -> Interval:
        """P(a batch fails at least one order from throttling alone)."""
        return wilson_interval(self.runs_with_failure, self.runs)

    @property
    def failed_per_batch(self) -> Interval:
        return mean_interval(list(self.failed_per_run))

    @property
    def per_order(self) -> Interval:
        """P(one order spends its throttle retrier)."""
        batch = self.failed_per_batch
        n = self.orders_per_run
        return Interval(batch.estimate / n, batch.low / n, min(1.0, batch.high / n))

    def agrees_with(self, measured_failed: int, measured_runs: int) -> bool:
        """Whether a measured total over ``measured_runs`` batches falls inside the forecast's interval of
        the mean per batch, widened by the measurement's own sampling error (Poisson, 95%)."""
        if measured_runs <= 0:
            raise ValueError("no measured runs to compare")
        measured = measured_failed / measured_runs
        spread = Z_95 * math.sqrt(max(measured_failed, 1)) / measured_runs
        forecast = self.failed_per_batch
        return forecast.low - spread <= measured <= forecast.high + spread

    def describe(self) -> str:
        batch, per_batch, per_order = self.batch_failure, self.failed_per_batch, self.per_order
        spent = (
            f" (a retrier of {self.retrier_attempts} attempts is spent by {self.retrier_attempts + 1})"
            if self.retrier_attempts is not None
            else ""
        )
        return "\n".join(
            (
                f"Throttle retrier exhaustion over {self.runs} simulated batches of {self.orders_per_run:,} "
                f"orders (independent jitter): {self.failed_orders} orders failed by 429s alone.",
                f"  P(a batch fails one or more orders) {batch.estimate:.3f} "
                f"(95% CI {batch.low:.3f}-{batch.high:.3f})",
                f"  failed orders per batch {per_batch.estimate:.3f} "
                f"(95% CI {per_batch.low:.3f}-{per_batch.high:.3f})",
                f"  P(an order spends its throttle retrier) {per_order.estimate:.2e} "
                f"(95% CI {per_order.low:.2e}-{per_order.high:.2e})",
                f"  longest run of 429s in a row on one Task: {self.longest_throttle_streak}{spent}",
                *(
                    [
                        "  set aside for the second pass (retrier spent in the batch): "
                        f"{self.deferred_orders} orders, "
                        f"{mean_interval(list(self.deferred_per_run)).estimate:.3f} per batch"
                    ]
                    if self.deferred_per_run
                    else []
                ),
            )
        )

    def to_json(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "orders_per_run": self.orders_per_run,
            "retrier_max_attempts": self.retrier_attempts,
            "failed_orders": self.failed_orders,
            "runs_with_failure": self.runs_with_failure,
            "failed_per_run": list(self.failed_per_run),
            "batch_failure_probability": self.batch_failure.to_json(),
            "failed_orders_per_batch": self.failed_per_batch.to_json(),
            "order_exhaustion_probability": self.per_order.to_json(digits=9),
            "longest_throttle_streak": self.longest_throttle_streak,
            "deferred_orders": self.deferred_orders,
            "deferred_per_run": list(self.deferred_per_run),
        }


# Simulated orders a forecast aims at when the caller names no number of runs: enough runs for a rate
# near one failure in a thousand batches to show, few enough to stay within seconds.
DEFAULT_SIMULATED_ORDERS = 200_000
MIN_RUNS = 20
MAX_RUNS = 400


def default_runs(orders_per_run: int) -> int:
    return max(MIN_RUNS, min(MAX_RUNS, DEFAULT_SIMULATED_ORDERS // max(1, orders_per_run)))


def forecast_exhaustion(
    run_once: Callable[[int], RunOutcome],
    *,
    first_seed: int,
    runs: int,
    retrier_attempts: int | None,
    second_pass: bool = False,
) -> ExhaustionForecast:
    """``run_once(seed)`` for ``runs`` consecutive seeds from ``first_seed``."""
    if runs < 1:
        raise ValueError("a forecast needs at least one run")
    outcomes = [run_once(first_seed + index) for index in range(runs)]
    sizes = {outcome.orders for outcome in outcomes}
    if len(sizes) != 1:
        raise ValueError(f"runs of different sizes: {sorted(sizes)}")
    return ExhaustionForecast(
        runs=runs,
        orders_per_run=sizes.pop(),
        retrier_attempts=retrier_attempts,
        failed_per_run=tuple(outcome.failed_by_throttling for outcome in outcomes),
        longest_throttle_streak=max(outcome.longest_throttle_streak for outcome in outcomes),
        deferred_per_run=tuple(outcome.deferred for outcome in outcomes) if second_pass else (),
    )


def throttle_retrier_attempts(workflow: Workflow) -> int | None:
    """The forward Tasks' throttle retrier MaxAttempts when they share one, else None."""
    attempts = {step.throttle_retry.max_attempts if step.throttle_retry else 0 for step in workflow.forward}
    return attempts.pop() if len(attempts) == 1 else None


def forecast_state_machine(
    workflow: Workflow, settings: PlanSettings, runs: int | None = None
) -> ExhaustionForecast:
    """The Step Functions plan of ``settings`` repeated over seeds from ``settings.seed``."""
    return _repeated(
        lambda seed: (
            simulate(workflow, dataclasses.replace(settings, seed=seed, timeline_points=10)).counters
        ),
        workflow,
        settings,
        runs,
    )


def forecast_durable(
    workflow: Workflow, settings: PlanSettings, model: DurableModel | None = None, runs: int | None = None
) -> ExhaustionForecast:
    """The durable orchestrator's plan of ``settings`` repeated over seeds from ``settings.seed``."""
    return _repeated(
        lambda seed: simulate_durable(workflow, dataclasses.replace(settings, seed=seed), model).counters,
        workflow,
        settings,
        runs,
    )


def _repeated(
    counters_for: Callable[[int], RunCounters | DurableCounters],
    workflow: Workflow,
    settings: PlanSettings,
    runs: int | None,
) -> ExhaustionForecast:
    def run_once(seed: int) -> RunOutcome:
        counters = counters_for(seed)
        return RunOutcome(
            counters.failed_throttled,
            counters.orders,
            counters.longest_throttle_streak,
            getattr(counters, "deferred", 0),
        )

    return forecast_exhaustion(
        run_once,
        first_seed=settings.seed,
        runs=runs or default_runs(settings.orders * settings.batches),
        retrier_attempts=throttle_retrier_attempts(workflow),
        second_pass=workflow.second_pass_map is not None,
    )


def distinct_maps(workflows: list[Workflow]) -> list[Workflow]:
    """One workflow per Map body and setting: the S3 copies of one processor fed by the same parameter
    plan alike, so they are forecast once."""
    seen: set[tuple[str, str, bool]] = set()
    distinct = []
    # A second pass's Map runs only the orders another Map set aside: it is planned as part of that Map.
    second_passes = {(item.state_machine, item.second_pass_map) for item in workflows if item.second_pass_map}
    for workflow in workflows:
        if (workflow.state_machine, workflow.map_state) in second_passes:
            continue
        key = (
            workflow.state_machine,
            workflow.max_concurrency_parameter or workflow.map_state,
            workflow.distributed,
        )
        if key not in seen:
            seen.add(key)
            distinct.append(workflow)
    return distinct
