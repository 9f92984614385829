"""What a benchmark scenario is and the settings it runs at: the benchmark measures it on the local cloud,
the planner simulates the same N, C, d, MaxConcurrency, retrier and neighbour in virtual time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from order_processing.contract import MAX_INLINE_ORDERS, ORDER_STEP_FUNCTIONS
from orderbatch.capacity.model import Neighbour
from orderbatch.capacity.retriers import DefinitionTransform

# The neighbour holds its share for this fraction of the run it would force if it never left.
NEIGHBOUR_RUN_FRACTION = 0.75


@dataclass(frozen=True)
class Targets:
    """What a scenario should reach; reported against, never asserted."""

    max_bound_ratio: float | None = None
    max_lost: int | None = None
    max_doubled: int | None = 0
    max_throttles_per_order: float | None = None
    # Orders failed by 429s alone over every batch of the scenario (their retriers, both passes, spent).
    max_failed_by_throttling: int | None = None
    compare_with: str | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    # Map MaxConcurrency as a multiple of the account quota.
    concurrency_factor: float
    targets: Targets
    definition_transform: DefinitionTransform | None = None
    # Share of the quota another tenant holds, and for how much of the expected run.
    neighbour_share: float = 0.0
    changed: tuple[str, ...] = field(default_factory=tuple)
    # Where the batch's orders are: "inline" (the execution input, the inline Map) or "s3" (an object in
    # the batch bucket, the Distributed Map).
    source: str = "inline"
    # Seconds of work per step for this scenario; None = the benchmark's d.
    work_seconds: float | None = None
    # Keep every warm environment, as an account in steady state does (the policy scenarios measure
    # against the physical bound, so cold starts must not creep in); False: the local cloud's default
    # bound on live environments, as a user runs it.
    keep_every_environment: bool = True

    def max_concurrency(self, quota: int) -> int:
        return max(1, round(self.concurrency_factor * quota))

    def source_for(self, orders: int) -> str:
        """Where a batch of ``orders`` goes: an inline scenario too large for the input goes to S3."""
        if self.source == "inline" and orders > MAX_INLINE_ORDERS:
            return "s3"
        return self.source


@dataclass(frozen=True)
class BenchSettings:
    template: Path
    orders: int = 200
    quota: int = 10
    work_seconds: float = 0.5
    warm: bool = True
    timeout_seconds: float | None = None
    seed: int = 7
    # Batches run back to back on the same local cloud; the figures are the first's, and every batch's
    # makespan, audit and memory afterwards are listed (is memory flat from batch to batch?).
    batches: int = 1
    # How long the noisy neighbour holds its share of the quota; None: most of the expected run.
    neighbour_seconds: float | None = None

    @property
    def steps(self) -> int:
        return len(ORDER_STEP_FUNCTIONS)


def neighbour_for(scenario: Scenario, settings: BenchSettings) -> Neighbour | None:
    slots = int(settings.quota * scenario.neighbour_share)
    if slots < 1:
        return None
    work = settings.orders * settings.steps * settings.work_seconds
    duration = settings.neighbour_seconds
    if duration is None:
        duration = round(NEIGHBOUR_RUN_FRACTION * work / (settings.quota - slots), 1)
    return Neighbour(slots=slots, start_seconds=0.0, duration_seconds=duration)
