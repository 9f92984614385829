"""What a plan found: the raw counts of a run and the figures derived from them (per order, cost, bound)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Self

from orderbatch.capacity.model import MeasuredWork, UnitPrices, cost_per_million_orders

if TYPE_CHECKING:
    from orderbatch.plan.settings import PlanSettings
    from orderbatch.plan.workflow import Workflow


class _OrdersAndMakespan(Protocol):
    @property
    def orders(self) -> int: ...
    @property
    def makespan_seconds(self) -> float: ...


class OrchestratorResult:
    """What the plan of either orchestrator reports alike: its label, its makespan against the bound and
    its 429s per order. A frozen dataclass with ``counters``, ``bound_seconds`` and ``label`` fields, whose
    ``throttles`` counts every 429 of the run, mixes it in."""

    counters: _OrdersAndMakespan
    bound_seconds: float
    label: str

    @property
    def throttles(self) -> int:
        raise NotImplementedError

    def labelled(self, label: str) -> Self:
        labelled: Self = dataclasses.replace(self, label=label)  # type: ignore[type-var]
        return labelled

    @property
    def orders(self) -> int:
        return self.counters.orders

    @property
    def makespan_seconds(self) -> float:
        return self.counters.makespan_seconds

    @property
    def bound_ratio(self) -> float | None:
        return self.makespan_seconds / self.bound_seconds if self.bound_seconds > 0 else None

    @property
    def throttles_per_order(self) -> float:
        return self.throttles / self.orders


@dataclass(frozen=True)
class AttemptRecord:
    """One call attempt of a traced order (``PlanSettings.trace_orders``)."""

    order: int
    step: str
    time_seconds: float
    admitted: bool


class TimelinePoint(NamedTuple):
    """The account at one moment: our calls running, the neighbour's slots, and running totals."""

    time_seconds: float
    running_calls: int
    neighbour_slots: int
    throttles: int
    orders_finished: int
    transitions: int


@dataclass(frozen=True)
class RunCounters:
    """Everything the simulator counted; per function in ``functions`` order."""

    functions: tuple[str, ...]
    memory_mb: tuple[int, ...]
    reserved: tuple[int | None, ...]
    unreserved_pool: int
    calls: tuple[int, ...]
    throttles: tuple[int, ...]
    cold_starts: tuple[int, ...]
    peak_concurrency: tuple[int, ...]
    held_seconds: tuple[float, ...]
    environments: tuple[int, ...]
    orders: int
    succeeded: int
    compensated: int
    failed_throttled: int
    failed_timed_out: int
    compensation_failed: int
    uncaught: int
    makespan_seconds: float
    transitions: int
    throttle_retries: int
    timeout_retries: int
    timeouts: int
    scaling_throttles: int
    longest_throttle_streak: int
    """The most 429s any order met in a row on one Task (its throttle retrier's attempts + 1 when spent)."""
    peak_busy: int
    peak_account: int
    transition_wait_seconds: float
    start_execution_wait_seconds: float
    write_units: int
    order_seconds: list[float] = field(repr=False)
    """Each order's time from its start to its end (what an Express child would be billed for)."""
    deferred: int = 0
    """Orders set aside when their throttle retrier ran out, run again by the second pass."""

    @property
    def failed(self) -> int:
        """Orders whose forward tasks ran out of retries (then compensated, or not)."""
        return self.failed_throttled + self.failed_timed_out

    @property
    def lambda_gb_seconds(self) -> float:
        return sum(
            seconds * memory / 1024 for seconds, memory in zip(self.held_seconds, self.memory_mb, strict=True)
        )


@dataclass(frozen=True)
class PlanResult(OrchestratorResult):
    workflow: Workflow
    settings: PlanSettings
    counters: RunCounters
    timeline: list[TimelinePoint]
    trace: list[AttemptRecord]
    bound_seconds: float
    transitions_total: int
    """Billed transitions: every order's (retries included) plus each batch execution's own."""
    cost_per_million_orders: dict[str, Any]
    unit_prices: UnitPrices
    wall_seconds: float
    label: str = ""

    @classmethod
    def build(
        cls,
        workflow: Workflow,
        settings: PlanSettings,
        counters: RunCounters,
        timeline: list[TimelinePoint],
        trace: list[AttemptRecord],
        *,
        bound_seconds: float,
        wall_seconds: float,
        prices: UnitPrices | None = None,
    ) -> PlanResult:
        prices = prices or UnitPrices()
        top_level = workflow.top_level_transitions * settings.batches
        transitions_total = counters.transitions + top_level
        work = MeasuredWork(
            orders=counters.orders,
            transitions=transitions_total,
            top_level_transitions=top_level,
            lambda_requests=sum(counters.calls),
            lambda_gb_seconds=counters.lambda_gb_seconds,
            dynamodb_write_units=counters.write_units,
            per_order_seconds=counters.order_seconds,
        )
        return cls(
            workflow=workflow,
            settings=settings,
            counters=counters,
            timeline=timeline,
            trace=trace,
            bound_seconds=bound_seconds,
            transitions_total=transitions_total,
            cost_per_million_orders=cost_per_million_orders(work, prices),
            unit_prices=prices,
            wall_seconds=wall_seconds,
        )

    # --- figures

    @property
    def failed_orders(self) -> int:
        return self.counters.failed

    @property
    def throttles(self) -> int:
        return sum(self.counters.throttles)

    @property
    def retries(self) -> int:
        return self.counters.throttle_retries + self.counters.timeout_retries

    @property
    def retries_per_order(self) -> float:
        return self.retries / self.orders

    @property
    def transitions_per_order(self) -> float:
        return self.transitions_total / self.orders

    @property
    def calls_per_order(self) -> float:
        return sum(self.counters.calls) / self.orders

    @property
    def write_units_per_order(self) -> float:
        return self.counters.write_units / self.orders

    @property
    def gb_seconds_per_order(self) -> float:
        return self.counters.lambda_gb_seconds / self.orders

    def throughput_limits(self) -> dict[str, float]:
        """Orders per second each quota allows on its own, at the planned durations.

        Lambda concurrency: the capacity min(C, batches x MaxConcurrency) over one order's mean time in
        its calls (step overhead included); StartExecution: its rate, for a Distributed Map's children;
        state transitions: the bucket's rate over the transitions of an order that succeeds (Standard).
        """
        settings, workflow = self.settings, self.workflow
        capacity = min(
            settings.account_concurrency,
            settings.batches * workflow.effective_concurrency(settings.max_concurrency),
        )
        per_order = sum(
            settings.duration_of(step.function).mean_seconds + settings.step_overhead_seconds
            for step in workflow.forward
        )
        limits = {"Lambda concurrency": capacity / per_order if per_order > 0 else float("inf")}
        if workflow.distributed:
            limits["StartExecution"] = settings.start_executions_per_second
        if not (workflow.distributed and workflow.child_execution_type == "EXPRESS"):
            limits["state transitions"] = (
                settings.transitions_per_second / workflow.transitions_per_succeeded_order
            )
        return limits

    @property
    def limited_by(self) -> str:
        limits = self.throughput_limits()
        return min(limits, key=lambda name: limits[name])

    def to_json(self, *, include_timeline: bool = True) -> dict[str, Any]:
        counters = self.counters
        workflow = self.workflow
        document: dict[str, Any] = {
            "label": self.label,
            "workflow": {
                "state_machine": workflow.state_machine,
                "map_state": workflow.map_state,
                "kind": workflow.kind,
                "max_concurrency": workflow.max_concurrency,
                "max_concurrency_parameter": workflow.max_concurrency_parameter,
                "effective_concurrency": workflow.effective_concurrency(self.settings.max_concurrency),
                "retrier": workflow.retrier,
                "forward_tasks": [step.state_name for step in workflow.forward],
                "compensation_tasks": [step.state_name for step in workflow.compensation],
                "throttle_retriers": {
                    step.state_name: step.throttle_retry.describe() if step.throttle_retry else None
                    for step in workflow.steps
                },
                "notes": list(workflow.notes),
            },
            "settings": self.settings.to_json(),
            "makespan_seconds": round(self.makespan_seconds, 3),
            "lower_bound_seconds": round(self.bound_seconds, 3),
            "bound_ratio": None if self.bound_ratio is None else round(self.bound_ratio, 4),
            "throughput_limits_orders_per_second": {
                name: round(value, 3) for name, value in self.throughput_limits().items()
            },
            "limited_by": self.limited_by,
            "orders": {
                "total": counters.orders,
                "succeeded": counters.succeeded,
                "failed": counters.failed,
                "failed_after_429_retries": counters.failed_throttled,
                "deferred_to_second_pass": counters.deferred,
                "failed_after_timeout_retries": counters.failed_timed_out,
                "compensated": counters.compensated,
                "compensation_failed": counters.compensation_failed,
                "uncaught_failures": counters.uncaught,
            },
            "lambda": {
                "quota": self.settings.account_concurrency,
                "unreserved_pool": counters.unreserved_pool,
                "calls": sum(counters.calls),
                "calls_per_order": round(self.calls_per_order, 4),
                "throttles": self.throttles,
                "throttles_per_order": round(self.throttles_per_order, 4),
                "throttles_beyond_scaling_rate": counters.scaling_throttles,
                "longest_throttle_streak": counters.longest_throttle_streak,
                "retries": self.retries,
                "retries_per_order": round(self.retries_per_order, 4),
                "timeouts": counters.timeouts,
                "cold_starts": sum(counters.cold_starts),
                "peak_concurrency": counters.peak_busy,
                "peak_account_concurrency": counters.peak_account,
                "gb_seconds": round(counters.lambda_gb_seconds, 3),
                "gb_seconds_per_order": round(self.gb_seconds_per_order, 5),
                "by_function": {
                    name: {
                        "reserved": counters.reserved[index],
                        "memory_mb": counters.memory_mb[index],
                        "calls": counters.calls[index],
                        "throttles": counters.throttles[index],
                        "cold_starts": counters.cold_starts[index],
                        "peak_concurrency": counters.peak_concurrency[index],
                        "environments": counters.environments[index],
                    }
                    for index, name in enumerate(counters.functions)
                },
            },
            "transitions": {
                "total": self.transitions_total,
                "per_order": round(self.transitions_per_order, 4),
                "top_level": workflow.top_level_transitions * self.settings.batches,
                "waited_for_quota_seconds": round(counters.transition_wait_seconds, 3),
                "start_execution_wait_seconds": round(counters.start_execution_wait_seconds, 3),
            },
            "dynamodb": {
                "write_units": counters.write_units,
                "write_units_per_order": round(self.write_units_per_order, 4),
            },
            "cost_per_million_orders": self.cost_per_million_orders,
            "unit_prices": self.unit_prices.to_dict(),
            "simulation_wall_seconds": round(self.wall_seconds, 3),
        }
        if include_timeline:
            document["timeline"] = {
                "fields": list(TimelinePoint._fields),
                "points": [list(point) for point in self.timeline],
            }
        return document
