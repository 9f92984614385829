"""What a plan assumes about the load and the account, with AWS's quotas as defaults.

Every default names its source: AWS's quota pages (through sam_local_cloud.aws_limits), the benchmark
(d = 0.5 s of work per step), or says it is an assumption to replace with your own measurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orderbatch.capacity.model import Neighbour
from orderbatch.plan.durations import DEFAULT_MEAN_SECONDS, Duration
from sam_local_cloud.aws_limits import (
    LAMBDA_DEFAULT_ACCOUNT_CONCURRENCY,
    LAMBDA_SCALING_ENVIRONMENTS_PER_WINDOW,
    LAMBDA_SCALING_WINDOW_SECONDS,
    SMALL_REGION_STATE_TRANSITIONS_PER_SECOND,
    START_EXECUTIONS_PER_SECOND,
    STATE_TRANSITIONS_BURST,
    STATE_TRANSITIONS_PER_SECOND,
)

# Lambda: 1,000 concurrent executions per Region by default; each function adds at most 1,000
# execution environments every 10 seconds (Lambda quotas and scaling pages).
DEFAULT_ACCOUNT_CONCURRENCY = LAMBDA_DEFAULT_ACCOUNT_CONCURRENCY
SCALING_ENVIRONMENTS = LAMBDA_SCALING_ENVIRONMENTS_PER_WINDOW
SCALING_WINDOW_SECONDS = LAMBDA_SCALING_WINDOW_SECONDS
# Step Functions Standard state transitions: a token bucket of 5,000, refilled 5,000/s in the largest
# Regions (800/s elsewhere); StartExecution 300/s (Step Functions quotas page).
DEFAULT_TRANSITIONS_PER_SECOND = STATE_TRANSITIONS_PER_SECOND
DEFAULT_TRANSITIONS_BURST = STATE_TRANSITIONS_BURST
SMALL_REGION_TRANSITIONS_PER_SECOND = SMALL_REGION_STATE_TRANSITIONS_PER_SECOND
DEFAULT_START_EXECUTIONS_PER_SECOND = START_EXECUTIONS_PER_SECOND
# An assumption, not a measurement: a Python 3.12 function with Powertools and boto3 typically spends
# about a second in INIT. Read yours from the REPORT line's "Init Duration" and pass --cold-start.
DEFAULT_COLD_START_SECONDS = 1.0
# An assumption, not a measurement (AWS publishes no figure): Step Functions takes some time between
# a Task's end and its next Lambda call. Without any gap, the slot one order's Task frees is always taken
# by the same order's next Task, and orders waiting in a retrier never get in. Set 0 for the idealised
# closed form; calibrate against the benchmark with --step-overhead.
DEFAULT_STEP_OVERHEAD_SECONDS = 0.02
# Points of the concurrency timeline kept for the plot, whatever the number of orders.
DEFAULT_TIMELINE_POINTS = 1000


@dataclass(frozen=True)
class PlanSettings:
    """The load and the account a plan runs on; mirrors the benchmark's settings where they overlap."""

    orders: int = 10_000
    """Orders per batch (N)."""
    batches: int = 1
    """Batches (executions) started at the same time, each with its own Map."""
    account_concurrency: int = DEFAULT_ACCOUNT_CONCURRENCY
    """The account's Lambda concurrency quota (C)."""
    work_seconds: float = DEFAULT_MEAN_SECONDS
    """Mean duration of every function not named in ``durations`` (the benchmark's d)."""
    durations: Mapping[str, Duration] = field(default_factory=dict)
    """Per function (logical ID): mean and p99 of one invocation."""
    fixed_durations: bool = False
    """Functions not in ``durations`` run exactly ``work_seconds`` (as the benchmark's added latency)."""
    reserved: Mapping[str, int] = field(default_factory=dict)
    """ReservedConcurrentExecutions per function, over what the template says."""
    cold_start_seconds: float = DEFAULT_COLD_START_SECONDS
    warm_environments: int = 0
    """Execution environments per function already warm at the start (the benchmark warms C of them)."""
    max_concurrency: int | None = None
    """The Map's MaxConcurrency, over the template's (None: as the template says)."""
    neighbour: Neighbour | None = None
    """Another tenant wanting ``slots`` of the unreserved pool from ``start`` for ``duration`` seconds."""
    transitions_per_second: float = DEFAULT_TRANSITIONS_PER_SECOND
    transitions_burst: float = DEFAULT_TRANSITIONS_BURST
    start_executions_per_second: float = DEFAULT_START_EXECUTIONS_PER_SECOND
    start_executions_burst: float = DEFAULT_START_EXECUTIONS_PER_SECOND
    scaling_environments: int = SCALING_ENVIRONMENTS
    scaling_window_seconds: float = SCALING_WINDOW_SECONDS
    step_overhead_seconds: float = DEFAULT_STEP_OVERHEAD_SECONDS
    """Time between a Task's end and the order's next call (Step Functions' own latency)."""
    write_units: Mapping[str, int] | None = None
    """DynamoDB write units per completed call, by function; None: the app's (orderbatch.plan.writes)."""
    seed: int = 0
    timeline_points: int = DEFAULT_TIMELINE_POINTS
    trace_orders: int = 0
    """Record every call attempt of the first ``trace_orders`` orders (for tests and debugging)."""

    def __post_init__(self) -> None:
        if self.orders < 1 or self.batches < 1:
            raise ValueError("orders and batches must be at least 1")
        if self.account_concurrency < 0 or self.warm_environments < 0:
            raise ValueError("account concurrency and warm environments cannot be negative")
        if self.work_seconds < 0 or self.cold_start_seconds < 0 or self.step_overhead_seconds < 0:
            raise ValueError("durations cannot be negative")
        if min(self.transitions_per_second, self.start_executions_per_second) <= 0:
            raise ValueError("quota rates must be positive")
        if self.max_concurrency is not None and self.max_concurrency < 0:
            raise ValueError("MaxConcurrency cannot be negative")
        if any(value < 0 for value in self.reserved.values()):
            raise ValueError("reserved concurrency cannot be negative")

    def duration_of(self, function: str) -> Duration:
        if function in self.durations:
            return self.durations[function]
        if self.fixed_durations:
            return Duration.fixed(self.work_seconds)
        return Duration.with_default_tail(self.work_seconds)

    def to_json(self) -> dict[str, Any]:
        return {
            "orders_per_batch": self.orders,
            "batches": self.batches,
            "account_concurrency": self.account_concurrency,
            "work_seconds": self.work_seconds,
            "fixed_durations": self.fixed_durations,
            "durations": {
                name: {"mean_seconds": value.mean_seconds, "p99_seconds": value.p99_seconds}
                for name, value in self.durations.items()
            },
            "reserved": dict(self.reserved),
            "cold_start_seconds": self.cold_start_seconds,
            "warm_environments": self.warm_environments,
            "max_concurrency_override": self.max_concurrency,
            "neighbour": None
            if self.neighbour is None
            else {
                "slots": self.neighbour.slots,
                "start_seconds": self.neighbour.start_seconds,
                "duration_seconds": self.neighbour.duration_seconds,
            },
            "transitions_per_second": self.transitions_per_second,
            "transitions_burst": self.transitions_burst,
            "start_executions_per_second": self.start_executions_per_second,
            "start_executions_burst": self.start_executions_burst,
            "scaling": f"{self.scaling_environments} environments per {self.scaling_window_seconds:g} s",
            "step_overhead_seconds": self.step_overhead_seconds,
            "seed": self.seed,
        }


def parse_neighbour(text: str) -> Neighbour:
    """``SLOTS@START+DURATION`` in slots and seconds, e.g. ``5@0+120``; ``SLOTS`` alone: held throughout."""
    slots_text, _, window = text.partition("@")
    start_text, _, duration_text = window.partition("+")
    try:
        slots = int(slots_text)
        start = float(start_text) if start_text else 0.0
        duration = float(duration_text) if duration_text else float("inf")
    except ValueError:
        raise ValueError(f"neighbour {text!r} is not SLOTS@START+DURATION (e.g. 5@0+120)") from None
    if slots < 0 or start < 0 or duration < 0:
        raise ValueError(f"neighbour {text!r}: slots and times cannot be negative")
    return Neighbour(slots, start, duration)


def parse_assignments(items: list[str], what: str) -> dict[str, str]:
    """``NAME=VALUE`` items of a repeated option."""
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ValueError(f"{what} {item!r} is not NAME=VALUE")
        pairs[name.strip()] = value.strip()
    return pairs
