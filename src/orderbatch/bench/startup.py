"""What a test pays before its first request: a local cloud's start, and its reset between two tests.

One process, alone on the machine: the first start (imports and moto's models included), later starts in
the warm process, then resets, each after a batch of the app's orders has run through its HTTP API, so
that each reset has a batch's executions, items and histories to undo. Then what a user of the command
waits: ``orderbatch local up`` started as a process, until its first StartExecution is answered.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from orderbatch.app_batches import fixture_skus, generate_orders, local_cloud_config

if TYPE_CHECKING:
    from sam_local_cloud import LocalCloud


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
    # `orderbatch local up` as a process: from its launch to its first answered StartExecution.
    command_start_seconds: list[float] = field(default_factory=list)
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
            *(
                [f"`orderbatch local up` to its first answered StartExecution: {spread(command)}"]
                if (command := self.command_start_seconds)
                else []
            ),
            f"peak RSS of this process: {self.peak_rss_mib:.0f} MiB",
            f"load average after: {' '.join(f'{x:.2f}' for x in self.load_after)}",
        ]


def measure_startup(
    template: Path, *, starts: int, resets: int, orders: int, command_starts: int = 0
) -> StartupFigures:
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
    figures.command_start_seconds = [_command_start(template) for _ in range(command_starts)]
    figures.load_after = os.getloadavg()
    return figures


def _command_start(template: Path, timeout: float = 120.0) -> float:
    """Seconds from launching `orderbatch local up` to its first StartExecution answered, as a script
    that starts the command and polls it would see (ListStateMachines every 20 ms until one is listed)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from sam_local_cloud import DUMMY_CREDENTIALS
    from sam_local_cloud.stack import DEFAULT_REGION

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="orderbatch-bench-start-") as state_dir:
        command = [sys.executable, "-m", "orderbatch.cli", "local", "up", "--template", str(template)]
        command += ["--port", str(port), "--state-dir", state_dir]
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            stepfunctions = boto3.client(
                "stepfunctions",
                endpoint_url=f"http://127.0.0.1:{port}",
                region_name=DEFAULT_REGION,  # the local cloud's, where the template names none
                config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=30),
                **DUMMY_CREDENTIALS,
            )
            while time.perf_counter() - began < timeout:
                if process.poll() is not None:
                    raise RuntimeError(f"`orderbatch local up` exited with {process.returncode}")
                try:
                    machines = stepfunctions.list_state_machines()["stateMachines"]
                except (BotoCoreError, ClientError):
                    machines = []
                if machines:
                    stepfunctions.start_execution(stateMachineArn=machines[0]["stateMachineArn"], input="{}")
                    return time.perf_counter() - began
                time.sleep(0.02)
            raise TimeoutError(f"`orderbatch local up` answered no StartExecution within {timeout:.0f} s")
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def _run_batch(cloud: LocalCloud, template: Path, orders: int, batch_id: str) -> None:
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
