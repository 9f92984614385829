"""The benchmark's scenarios: the app's real state machine with only the named parameters changed.

Each scenario is the shipped template plus template parameters and, where no parameter exists, a
rewrite of every Task's ``Retry`` list (``definition_transform`` of the local cloud).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from order_processing.contract import MAX_INLINE_ORDERS
from orderbatch.aws_limits import THROTTLE_ERROR

# AWS's "Handle Lambda service exceptions" page, as published: TooManyRequests is named there but not listed.
DOCS_RETRIER: dict[str, Any] = {
    "ErrorEquals": [
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.ClientExecutionTimeoutException",
    ],
    "IntervalSeconds": 2,
    "MaxAttempts": 6,
    "BackoffRate": 2,
}

DefinitionTransform = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Targets:
    """What a scenario should reach; reported against, never asserted."""

    max_bound_ratio: float | None = None
    max_lost: int | None = None
    max_doubled: int | None = 0
    max_throttles_per_order: float | None = None
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


def task_states(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every Task state, inside Map and Parallel states too."""
    for state in (definition.get("States") or {}).values():
        if state.get("Type") == "Task":
            yield state
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                yield from task_states(state[key])
        for branch in state.get("Branches") or []:
            yield from task_states(branch)


def with_docs_retrier(_logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
    """Every Task's Retry replaced by exactly the retrier of AWS's page."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        state["Retry"] = [copy.deepcopy(DOCS_RETRIER)]
    return rewritten


def without_throttle_jitter(_logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
    """The TooManyRequests retrier keeps its backoff but loses its jitter (JitterStrategy NONE)."""
    rewritten = copy.deepcopy(definition)
    for state in task_states(rewritten):
        for retrier in state.get("Retry") or []:
            if THROTTLE_ERROR in retrier.get("ErrorEquals", []):
                retrier["JitterStrategy"] = "NONE"
    return rewritten


SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "tuned",
            "the app as shipped, MaxConcurrency = the quota",
            1.0,
            Targets(max_bound_ratio=1.10, max_lost=0, max_throttles_per_order=0.05),
            changed=("MapMaxConcurrency = C",),
        ),
        Scenario(
            "oversubscribed",
            "MaxConcurrency 3 x the quota, the app's retriers (backoff, full jitter, cap)",
            3.0,
            Targets(max_bound_ratio=1.25, max_lost=0),
            changed=("MapMaxConcurrency = 3C",),
        ),
        Scenario(
            "docs-retrier",
            "oversubscribed, every Task retried only as AWS's 'Handle Lambda service exceptions' page "
            "shows (interval 2, 6 attempts, rate 2, no jitter, TooManyRequests not listed)",
            3.0,
            Targets(compare_with="tuned"),
            definition_transform=with_docs_retrier,
            changed=("MapMaxConcurrency = 3C", "every Task's Retry = the docs retrier"),
        ),
        Scenario(
            "no-jitter",
            "oversubscribed, TooManyRequests retried with the same backoff but JitterStrategy NONE",
            3.0,
            Targets(compare_with="tuned"),
            definition_transform=without_throttle_jitter,
            changed=("MapMaxConcurrency = 3C", "TooManyRequests retrier JitterStrategy = NONE"),
        ),
        Scenario(
            "noisy-neighbour",
            "tuned, while another tenant holds half the quota for most of the run",
            1.0,
            Targets(max_bound_ratio=1.25, max_lost=0),
            neighbour_share=0.5,
            changed=("MapMaxConcurrency = C", "a neighbour holds C/2 for most of the run"),
        ),
    )
}

SCALE = Scenario(
    "scale",
    "a large batch from S3 through the Distributed Map with no added work: the local cloud's own cost "
    "per order (run with --orders 10000)",
    1.0,
    Targets(max_lost=0),
    changed=("orders in S3 (Distributed Map)", "MapMaxConcurrency = C", "d = 0"),
    source="s3",
    work_seconds=0.0,
    keep_every_environment=False,
)
SCENARIOS[SCALE.name] = SCALE

SOAK = Scenario(
    "soak",
    "batches back to back on one local cloud for --minutes, inline and S3 alternating, every fault kind "
    "at 5% on every function and a neighbour that comes and goes (run by orderbatch.bench.soak)",
    1.0,
    Targets(max_lost=0),
    changed=("MapMaxConcurrency = C", "faults at 5% of invocations", "neighbour C/2, 30 s on, 60 s off"),
    keep_every_environment=False,
)
SCENARIOS[SOAK.name] = SOAK

# What `orderbatch bench` runs when no scenario is named: the policy comparison at N = 200, not the
# scale run, which is meant for thousands of orders, nor the soak, which runs for half an hour.
DEFAULT_SCENARIOS = tuple(name for name in SCENARIOS if name not in {SCALE.name, SOAK.name})


def select(names: list[str] | None) -> list[Scenario]:
    if not names:
        return [SCENARIOS[name] for name in DEFAULT_SCENARIOS]
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; choose from {sorted(SCENARIOS)}")
    return [SCENARIOS[name] for name in names]
