"""What a test pays before its first request: a local cloud's start, and its reset between two tests.

One process, alone on the machine: the first start (imports and moto's models included), later starts in
the warm process, then resets, each after a batch of the app's orders has run through its HTTP API, so
that each reset has a batch's executions, items and histories to undo.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orderbatch.app_batches import fixture_skus, generate_orders, local_cloud_config


@dataclass
class StartupFigures:
    template: Path
    orders_per_batch: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    first_start_seconds: float = 0.0
    warm_start_seconds: list[float] = field(default_factory=list)
    reset_seconds: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    peak_rss_mib: float = 0.0

    def lines(self) -> list[str]:
        def spread(values: list[float], *, unit: float = 1.0, suffix: str = "s") -> str:
            scaled = [value * unit for value in values]
            median, low, high = statistics.median(scaled), min(scaled), max(scaled)
            return f"median {median:.1f} {suffix}, min {low:.1f}, max {high:.1f} ({len(scaled)} runs)"

        return [
            f"template: {self.template}",
            f"load average before: {' '.join(f'{x:.2f}' for x in self.load_before)}",
            f"first start in this process (imports included): {self.first_start_seconds:.2f} s",
            f"start in the warm process: {spread(self.warm_start_seconds)}",
            f"reset after a batch of {self.orders_per_batch} orders: "
            f"{spread(self.reset_seconds, unit=1000, suffix='ms')}",
            f"the batch itself: {spread(self.batch_seconds)}",
            f"peak RSS of this process: {self.peak_rss_mib:.0f} MiB",
            f"load average after: {' '.join(f'{x:.2f}' for x in self.load_after)}",
        ]


def measure_startup(template: Path, *, starts: int, resets: int, orders: int) -> StartupFigures:
    from sam_local_cloud import LocalCloud

    figures = StartupFigures(template, orders, os.getloadavg())
    for start in range(1 + starts):
        began = time.perf_counter()
        with LocalCloud(local_cloud_config(template, account_concurrency=10)) as cloud:
            elapsed = time.perf_counter() - began
            if start == 0:
                figures.first_start_seconds = elapsed
            else:
                figures.warm_start_seconds.append(elapsed)
            if start == starts:
                for run in range(resets):
                    began = time.perf_counter()
                    _run_batch(cloud, template, orders, f"reset-bench-{run}")
                    figures.batch_seconds.append(time.perf_counter() - began)
                    figures.reset_seconds.append(_timed(cloud.reset))
    figures.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures.load_after = os.getloadavg()
    return figures


def _timed(action: Callable[[], Any]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def _run_batch(cloud: Any, template: Path, orders: int, batch_id: str) -> None:
    import boto3

    from orderbatch.api_client import BatchesApiClient
    from orderbatch.audit import BatchLocations
    from sam_local_cloud import DUMMY_CREDENTIALS, wait_for_execution

    session = boto3.Session(**DUMMY_CREDENTIALS, region_name=cloud.stack.region)
    api = BatchesApiClient(cloud.api_url, session=session)
    batch = {"batch_id": batch_id, "orders": generate_orders(orders, fixture_skus(template), prefix=batch_id)}
    submitted = api.submit(batch)
    if submitted.status != 202:
        raise RuntimeError(f"POST /batches answered {submitted.status}: {submitted.body}")
    arn = BatchLocations.from_outputs(cloud.stack.outputs).execution_arn(batch_id)
    status = wait_for_execution(cloud.client("stepfunctions"), arn, timeout=300, poll_seconds=0.1)
    if status != "SUCCEEDED":
        raise RuntimeError(f"the batch {batch_id} ended {status}")
