"""The physical lower bound of a batch's makespan, and the modelled cost of its measured work."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Neighbour:
    """Another tenant holding ``slots`` of the quota from ``start`` for ``duration`` seconds."""

    slots: int
    start_seconds: float
    duration_seconds: float


def lower_bound_seconds(
    orders: int,
    steps: int,
    work_seconds: float,
    quota: int,
    *,
    max_concurrency: int | None = None,
    neighbour: Neighbour | None = None,
) -> float:
    """No batch of ``orders`` x ``steps`` Lambda calls of ``work_seconds`` finishes sooner.

    Work W = N.k.d slot-seconds must fit under the capacity actually available, c(t) = min(MaxConcurrency,
    quota - the neighbour's slots at t); and one order's k steps run one after another, so never below k.d.
    """
    work = orders * steps * work_seconds
    ceiling = quota if max_concurrency is None else min(quota, max_concurrency)

    def capacity(held: int) -> int:
        return max(0, min(ceiling, quota - held))

    if neighbour is None or neighbour.slots == 0:
        return max(work / ceiling, steps * work_seconds)
    # Piecewise-constant capacity: before, during and after the neighbour's window.
    pieces = [
        (neighbour.start_seconds, capacity(0)),
        (neighbour.duration_seconds, capacity(neighbour.slots)),
        (math.inf, capacity(0)),
    ]
    elapsed = 0.0
    remaining = work
    for length, rate in pieces:
        if rate > 0 and remaining <= rate * length:
            elapsed += remaining / rate
            break
        remaining -= rate * length
        elapsed += length
    return max(elapsed, steps * work_seconds)


@dataclass(frozen=True)
class DurablePrices:
    """Lambda durable functions' own charges, on top of the Lambda requests and duration they also pay.

    Durable operations: $8.00 per million, as https://aws.amazon.com/lambda/pricing/ gives it in its
    durable functions pricing example (us-east-1), read 2026-12-02 through a transcription of that page
    dated 2026-09-20 (the page renders its rate tables client-side). Data written ($0.25 per GB) and data
    retained ($0.15 per GB-month): the rates AWS announced with durable functions at re:Invent 2025, not
    found in a stored copy of the pricing page on 2026-12-02; check them there before quoting a cost.
    """

    as_of: str = (
        "us-east-1, read 2026-12-02: https://aws.amazon.com/lambda/pricing/ (durable operations $8.00/M, "
        "its pricing example); data written $0.25/GB and retained $0.15/GB-month as announced, unverified"
    )
    per_operation: float = 8.00 / 1_000_000
    per_gb_written: float = 0.25
    per_gb_month_retained: float = 0.15


@dataclass(frozen=True)
class UnitPrices:
    """us-east-1 list prices the cost model multiplies by; ``as_of`` says where they come from."""

    as_of: str = (
        "us-east-1 list prices as of 2026-12-01: https://aws.amazon.com/step-functions/pricing/ "
        "(Express duration: the first tier), https://aws.amazon.com/lambda/pricing/, "
        "https://aws.amazon.com/dynamodb/pricing/on-demand/"
    )
    # https://aws.amazon.com/step-functions/pricing/ (Standard transitions; Express requests and duration)
    standard_per_transition: float = 0.025 / 1000
    express_per_request: float = 1.00 / 1_000_000
    express_per_gb_second: float = 0.00001667
    express_memory_gb: float = 64 / 1024  # billed in 64 MB chunks; a per-order child needs the first one
    express_billing_increment_seconds: float = 0.1
    # https://aws.amazon.com/lambda/pricing/ (x86, first duration tier)
    lambda_per_request: float = 0.20 / 1_000_000
    lambda_per_gb_second: float = 0.0000166667
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ (write request units)
    dynamodb_per_write_unit: float = 0.625 / 1_000_000
    durable: DurablePrices = DurablePrices()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MeasuredWork:
    """What one batch consumed, as counted during the run."""

    orders: int
    transitions: int
    top_level_transitions: int
    lambda_requests: int
    lambda_gb_seconds: float
    dynamodb_write_units: int
    per_order_seconds: list[float]


def lambda_gb_seconds(duration_ms_by_function: Mapping[str, float], memory_mb: Mapping[str, int]) -> float:
    return sum(ms / 1000 * memory_mb[name] / 1024 for name, ms in duration_ms_by_function.items())


def cost_per_million_orders(work: MeasuredWork, prices: UnitPrices) -> dict[str, Any]:
    """Dollars per million orders, by service, with Standard and Express children side by side.

    Standard: every transition the execution billed (the inline Map ran; a Distributed Map with Standard
    children pays the same per-order transitions plus one per child start). Express children: the parent's
    own transitions and one per child start, then one Express request per order and its duration (from the
    measured per-order times, rounded up to 100 ms, at 64 MB), retries' waits included.
    """
    scale = 1_000_000 / work.orders
    lambda_cost = (
        work.lambda_requests * prices.lambda_per_request
        + work.lambda_gb_seconds * prices.lambda_per_gb_second
    ) * scale
    dynamodb_cost = work.dynamodb_write_units * prices.dynamodb_per_write_unit * scale
    standard_sfn = work.transitions * prices.standard_per_transition * scale
    increment = prices.express_billing_increment_seconds
    express_seconds = sum(math.ceil(seconds / increment) * increment for seconds in work.per_order_seconds)
    express_sfn = (
        (work.top_level_transitions + work.orders) * prices.standard_per_transition
        + work.orders * prices.express_per_request
        + express_seconds * prices.express_memory_gb * prices.express_per_gb_second
    ) * scale
    return {
        "lambda": round(lambda_cost, 2),
        "dynamodb": round(dynamodb_cost, 2),
        "step_functions_standard": round(standard_sfn, 2),
        "step_functions_express_children": round(express_sfn, 2),
        "total_standard": round(lambda_cost + dynamodb_cost + standard_sfn, 2),
        "total_express_children": round(lambda_cost + dynamodb_cost + express_sfn, 2),
    }
