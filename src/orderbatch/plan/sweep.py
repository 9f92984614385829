"""Plans side by side: one setting varied over values, and the best of them named with the reason.

``--sweep MapMaxConcurrency=4,8,16`` varies a template parameter (as ``--parameter-overrides`` would),
``--sweep MaxConcurrency=...`` the Map's field directly, ``--sweep retrier=app,docs,no-jitter`` the
retriers (the benchmark's rewrites). Every run uses the same seed, so they differ only by the setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan.durable import DurableModel, DurableResult, simulate_durable
from orderbatch.plan.results import PlanResult
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.simulator import simulate
from orderbatch.plan.workflow import RETRIER_TRANSFORMS, Workflow, load_workflow

RETRIER_KEY = "retrier"
MAX_CONCURRENCY_KEY = "MaxConcurrency"
# Makespans within this fraction of the shortest count as a tie, decided by fewer 429s, then cost.
TIE_TOLERANCE = 0.02


@dataclass(frozen=True)
class Sweep:
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Sweep:
        key, sep, values_text = text.partition("=")
        values = tuple(value.strip() for value in values_text.split(",") if value.strip())
        if not sep or not key.strip() or not values:
            raise ValueError(f"sweep {text!r} is not KEY=VALUE,VALUE,... (e.g. MapMaxConcurrency=4,8,16)")
        return cls(key.strip(), values)

    def label(self, value: str) -> str:
        return f"{self.key}={value}"


@dataclass(frozen=True)
class PlanRequest:
    """Everything one plan needs besides the swept setting."""

    model: TemplateModel
    settings: PlanSettings
    parameter_overrides: Mapping[str, object] = dataclasses.field(default_factory=dict)
    retrier: str = "app"
    state_machine: str | None = None
    map_state: str | None = None

    def workflow(self) -> Workflow:
        return load_workflow(
            self.model,
            parameter_overrides=self.parameter_overrides,
            retrier=self.retrier,
            state_machine=self.state_machine,
            map_state=self.map_state,
        )

    def run(self, label: str = "") -> PlanResult:
        return simulate(self.workflow(), self.settings).labelled(label)

    def run_durable(self, model: DurableModel | None = None, label: str = "") -> DurableResult:
        """The same batch through DurableOrderBatchFunction: its map reads the same MapMaxConcurrency and
        its 429 backoff the same ThrottleRetry parameters, so the workflow read for the state machine
        gives the durable model its steps, memory and retrier."""
        return simulate_durable(self.workflow(), self.settings, model).labelled(label)

    def varied(self, key: str, value: str) -> PlanRequest:
        if key == RETRIER_KEY:
            if value not in RETRIER_TRANSFORMS:
                raise ValueError(f"unknown retrier {value!r}; choose from {', '.join(RETRIER_TRANSFORMS)}")
            return dataclasses.replace(self, retrier=value)
        if key == MAX_CONCURRENCY_KEY:
            try:
                limit = int(value)
            except ValueError:
                raise ValueError(f"MaxConcurrency {value!r} is not a whole number") from None
            return dataclasses.replace(
                self, settings=dataclasses.replace(self.settings, max_concurrency=limit)
            )
        if key in self.model.parameters:
            return dataclasses.replace(self, parameter_overrides={**self.parameter_overrides, key: value})
        raise ValueError(
            f"cannot sweep {key!r}: not '{RETRIER_KEY}', '{MAX_CONCURRENCY_KEY}' or a template parameter "
            f"({', '.join(sorted(self.model.parameters))})"
        )


def run_sweep(request: PlanRequest, sweep: Sweep) -> list[PlanResult]:
    return [request.varied(sweep.key, value).run(sweep.label(value)) for value in sweep.values]


def choose_best(results: list[PlanResult]) -> tuple[PlanResult, str]:
    """The shortest makespan with no failed orders; near-ties go to fewer 429s per order, then lower cost.

    When every setting fails orders, the fewest failed orders wins (then the makespan); the reason says so.
    """
    if not results:
        raise ValueError("nothing to choose from")
    clean = [result for result in results if _orders_lost_to_retries(result) == 0]
    if clean:
        shortest = min(result.makespan_seconds for result in clean)
        near = [result for result in clean if result.makespan_seconds <= shortest * (1 + TIE_TOLERANCE)]
        best = min(near, key=lambda r: (r.throttles_per_order, _cost(r), r.makespan_seconds))
        reason = (
            f"{best.label or 'this plan'}: the shortest makespan with zero failed orders "
            f"({best.makespan_seconds:,.1f} s, {_ratio(best)} the bound)"
        )
        if len(near) > 1:
            others = ", ".join(r.label for r in near if r is not best)
            reason += (
                f"; {others} finished within {TIE_TOLERANCE:.0%} of it, and this one had the fewest 429s "
                f"per order ({best.throttles_per_order:.3f}) and then the lowest cost "
                f"(${_cost(best):,.2f} per million orders, Standard)"
            )
        rejected = [r for r in results if r not in clean]
        if rejected:
            reason += "; " + ", ".join(
                f"{r.label} failed {_orders_lost_to_retries(r):,} orders" for r in rejected
            )
        return best, reason + "."
    best = min(results, key=lambda r: (_orders_lost_to_retries(r), r.makespan_seconds))
    return best, (
        f"{best.label or 'this plan'}: every setting failed orders; this one the fewest "
        f"({_orders_lost_to_retries(best):,} of {best.orders:,}), makespan {best.makespan_seconds:,.1f} s."
    )


def _orders_lost_to_retries(result: PlanResult) -> int:
    """Orders whose forward tasks ran out of retries (compensated or not)."""
    return result.failed_orders


def _cost(result: PlanResult) -> float:
    return float(result.cost_per_million_orders["total_standard"])


def _ratio(result: PlanResult) -> str:
    ratio = result.bound_ratio
    return "n/a x" if ratio is None else f"{ratio:.2f} x"
