"""The fault matrix's machinery: a local cloud per configuration, batches under a fault plan, figures.

Two ways to run orders, both audited with the same per-order checks:

- through the state machine (`run_batch`): POST /batches, wait on Step Functions, `audit_batch`;
- as a direct caller (`run_direct`): each order's steps invoked one after another with boto3, a short
  read timeout and SDK retries on, then `audit_orders` on the outcomes the caller got back.

ORDERBATCH_FAULT_ORDERS sets the orders per scenario (default 12). With more than
`FEW_ORDERS` orders the faults fire with a probability instead of on every order's first attempt, so a
1,000-order run stays within minutes. ORDERBATCH_FAULT_REPORT names a JSON Lines file that receives
each scenario's figures.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError, ReadTimeoutError

from order_processing.contract import PER_ORDER_FUNCTIONS
from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.audit import AuditedOrder, AuditReport, BatchLocations, audit_orders
from orderbatch.audit_logs import body_runs_from_logs
from orderbatch.durable_batches import wait_for_durable_batch
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, wait_for_execution

TEMPLATE = PROJECT_ROOT / "template.yaml"
QUOTA = 10
# Fits the quota: throttles come only from faults (the noisy neighbour), not from the Map itself.
MAP_MAX_CONCURRENCY = 8
# The timeout fault waits this out, and the retried orders wait for its in-progress records to expire, so
# it sets most of the timeout scenarios' length. Init has its own clock (as on AWS), so it need only
# cover a loaded machine's handler, and the held response of the client-timeout scenario (2.5 s).
FUNCTION_TIMEOUT_SECONDS = 4
ORDERS = int(os.environ.get("ORDERBATCH_FAULT_ORDERS", "12"))
FEW_ORDERS = 50
LARGE_RUN_PROBABILITY = 0.05
REPORT_FILE = os.environ.get("ORDERBATCH_FAULT_REPORT")

TASK_FUNCTIONS = PER_ORDER_FUNCTIONS
IDEMPOTENCY_OFF = {"POWERTOOLS_IDEMPOTENCY_DISABLED": "1"}
BOTH_DEFENCES_OFF = {"POWERTOOLS_IDEMPOTENCY_DISABLED": "1", "EFFECT_KEYS_DISABLED": "true"}

# The direct caller: a read timeout shorter than the held response, SDK retries on (standard mode).
DIRECT_READ_TIMEOUT_SECONDS = 1.5
DIRECT_RESPONSE_DELAY_SECONDS = 2.5
DIRECT_WORKERS = 3


def start_cloud(
    function_environment: Mapping[str, str] | None = None,
    parameter_overrides: Mapping[str, str] | None = None,
) -> LocalCloud:
    config = local_cloud_config(
        TEMPLATE,
        account_concurrency=QUOTA,
        parameter_overrides={
            "MapMaxConcurrency": str(MAP_MAX_CONCURRENCY),
            "FunctionTimeoutSeconds": str(FUNCTION_TIMEOUT_SECONDS),
            "TaskTimeoutSeconds": str(FUNCTION_TIMEOUT_SECONDS * 2),
            "InProgressRetryIntervalSeconds": "2",
            **(parameter_overrides or {}),
        },
        function_environment=dict(function_environment or {}),
    )
    return LocalCloud(config).start()


def api_client(cloud: LocalCloud) -> BatchesApiClient:
    session = boto3.Session(**DUMMY_CREDENTIALS, region_name=cloud.stack.region)
    return BatchesApiClient(cloud.api_url, session=session)


def when(orders: int) -> dict[str, Any]:
    """When a fault fires: every order's first attempt in small runs, 5% of attempts in large ones."""
    if orders <= FEW_ORDERS:
        return {"attempts": [1]}
    return {"probability": LARGE_RUN_PROBABILITY}


def fault_plan(kind: str, orders: int = ORDERS) -> dict[str, Any]:
    """The plan of one scenario of the matrix (the kinds of GitHub issue 4)."""
    fires = when(orders)
    if kind == "latency":
        return {
            "functions": {
                "ReserveInventoryFunction": [{"kind": "latency", "seconds": 0.3}],
                "ChargePaymentFunction": [{"kind": "latency", "seconds": 0.3}],
            }
        }
    if kind == "error_before_body":
        return {
            "seed": 1,
            "functions": {
                "ReserveInventoryFunction": [{"kind": "error_before_body", **fires}],
                "ChargePaymentFunction": [{"kind": "error_before_body", **fires}],
            },
        }
    if kind == "error_after_body":
        return {
            "seed": 2,
            "functions": {
                "ReserveInventoryFunction": [{"kind": "error_after_body", **fires}],
                "ChargePaymentFunction": [{"kind": "error_after_body", **fires}],
            },
        }
    if kind == "timeout":
        return {
            "seed": 3,
            "functions": {
                "ReserveInventoryFunction": [{"kind": "timeout", "phase": "after_body", **fires}],
                "ChargePaymentFunction": [{"kind": "timeout", "phase": "before_body", **fires}],
            },
        }
    if kind == "noisy_neighbour":
        # Holds 8 of the 10: the Map's 5 fit the quota but not what the neighbour leaves.
        duration = 15.0 if orders <= FEW_ORDERS else 60.0
        return {"noisy_neighbour": {"slots": QUOTA - 2, "duration_seconds": duration}}
    if kind == "client_timeout":
        delay = {"kind": "response_delay", "seconds": DIRECT_RESPONSE_DELAY_SECONDS, **fires}
        return {
            "seed": 4,
            "functions": {"ReserveInventoryFunction": [delay], "ChargePaymentFunction": [delay]},
        }
    raise ValueError(f"unknown scenario {kind}")


@dataclass
class ScenarioFigures:
    """What the report per fault shows."""

    scenario: str
    configuration: str
    orders: int
    lost: int
    doubled: int
    body_runs_beyond_one: int
    orders_run_more_than_once: int
    throttles: int
    # Calls to the task functions beyond the four each succeeded order needs, throttled calls included.
    retries: int
    violations: int
    seconds: float
    outcomes: dict[str, int]

    def publish(self) -> None:
        print(f"\nfault matrix: {json.dumps(asdict(self))}")
        if REPORT_FILE:
            with Path(REPORT_FILE).open("a") as report:
                report.write(json.dumps(asdict(self)) + "\n")


def task_throttles(cloud: LocalCloud) -> int:
    assert cloud.lambda_service is not None
    functions = cloud.lambda_service.stats(include_timeseries=False)["functions"]
    return sum(sum(functions[name]["throttles"].values()) for name in TASK_FUNCTIONS if name in functions)


def task_invocations(cloud: LocalCloud) -> int:
    assert cloud.lambda_service is not None
    functions = cloud.lambda_service.stats(include_timeseries=False)["functions"]
    return sum(int(functions[name]["invocations"]) for name in TASK_FUNCTIONS if name in functions)


@dataclass
class FaultRun:
    report: AuditReport
    figures: ScenarioFigures
    # Direct callers only: SDK retries after a read timeout.
    read_timeouts: int = 0


class Scenario:
    """Sets a fault plan, counts throttles and invocations around a run, and clears the plan after."""

    def __init__(self, cloud: LocalCloud, name: str, configuration: str, plan: Mapping[str, Any]) -> None:
        self.cloud = cloud
        self.name = name
        self.configuration = configuration
        self.plan = plan

    def __enter__(self) -> Scenario:
        assert self.cloud.lambda_service is not None
        self.throttles_before = task_throttles(self.cloud)
        self.invocations_before = task_invocations(self.cloud)
        self.started = time.monotonic()
        self.cloud.lambda_service.set_fault_plan(dict(self.plan))
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.cloud.lambda_service is not None
        self.cloud.lambda_service.set_fault_plan(None)

    def figures(self, report: AuditReport) -> ScenarioFigures:
        throttles = task_throttles(self.cloud) - self.throttles_before
        calls = task_invocations(self.cloud) - self.invocations_before + throttles
        needed = len(DIRECT_STEPS) * report.outcomes.get("SUCCEEDED", 0)
        return ScenarioFigures(
            scenario=self.name,
            configuration=self.configuration,
            orders=report.orders_in_input,
            lost=len(report.lost),
            doubled=len(report.doubled),
            body_runs_beyond_one=report.body_runs_beyond_one,
            orders_run_more_than_once=len(report.orders_with_repeated_body_runs),
            throttles=throttles,
            retries=max(0, calls - needed),
            violations=len(report.violations),
            seconds=round(time.monotonic() - self.started, 1),
            outcomes=report.outcomes,
        )


def orders_for(batch_id: str, count: int = ORDERS) -> list[dict[str, Any]]:
    return generate_orders(count, fixture_skus(TEMPLATE), prefix=batch_id)


def batch_timeout(orders: int) -> float:
    return 240.0 + orders * 3.0


def run_batch(
    cloud: LocalCloud,
    scenario: Scenario,
    batch_id: str,
    orders: list[dict[str, Any]],
    *,
    orchestrator: str = "stepfunctions",
) -> FaultRun:
    """POST the batch to the HTTP API for the ``orchestrator`` to run; wait for it; audit it."""
    locations = BatchLocations.from_outputs(cloud.stack.outputs)
    batch: dict[str, Any] = {"batch_id": batch_id, "orders": orders}
    if orchestrator == "durable":
        # The durable variant takes inline batches only.
        submitted = api_client(cloud).submit({**batch, "orchestrator": orchestrator})
        assert submitted.status == 202, submitted.body
        arn = str(submitted.body["execution_arn"])
        lambda_client = cloud.client("lambda")
        execution = wait_for_durable_batch(lambda_client, arn, timeout=batch_timeout(len(orders)))
        assert execution["Status"] == "SUCCEEDED", f"batch {batch_id} ended {execution['Status']}"
        report = audit_local_batch(cloud, batch_id)
        figures = scenario.figures(report)
        figures.publish()
        return FaultRun(report, figures)
    if len(orders) > FEW_ORDERS:
        # A large batch goes through S3 (the Distributed Map), as the API tells its users: inline batches
        # hold at most 500 orders so their outcomes fit the 256 KiB state limit.
        bucket, key = cloud.stack.outputs["BatchBucketName"], f"incoming/{batch_id}.json"
        cloud.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(orders).encode())
        batch = {"batch_id": batch_id, "source": {"bucket": bucket, "key": key}}
    submitted = api_client(cloud).submit(batch)
    assert submitted.status == 202, submitted.body
    execution_arn = locations.execution_arn(batch_id)
    status = wait_for_execution(
        cloud.client("stepfunctions"), execution_arn, timeout=batch_timeout(len(orders))
    )
    assert status == "SUCCEEDED", f"batch {batch_id} ended {status}"
    report = audit_local_batch(cloud, batch_id)
    figures = scenario.figures(report)
    figures.publish()
    return FaultRun(report, figures)


# ---------------------------------------------------------------- the direct caller

DIRECT_STEPS = (
    ("ValidateOrderFunction", "VALID"),
    ("ReserveInventoryFunction", "RESERVED"),
    ("ChargePaymentFunction", "CHARGED"),
    ("ConfirmOrderFunction", "SUCCEEDED"),
)
IN_PROGRESS_ERROR = "IdempotencyAlreadyInProgressError"
IN_PROGRESS_RETRIES = 8


@dataclass
class DirectCaller:
    """Invokes the task functions itself, as a script or another service would, with SDK retries on."""

    cloud: LocalCloud
    read_timeout: float = DIRECT_READ_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        self.client = self.cloud.client(
            "lambda",
            read_timeout=self.read_timeout,
            connect_timeout=5,
            retries={"mode": "standard", "total_max_attempts": 3},
            max_pool_connections=DIRECT_WORKERS * 4,
        )
        self._lock = threading.Lock()
        self.sdk_retries = 0
        self.caller_retries = 0
        self.client.meta.events.register("needs-retry.lambda.Invoke", self._count_retry)

    def _count_retry(self, attempts: int = 0, caught_exception: Any = None, **_: Any) -> None:
        if isinstance(caught_exception, ReadTimeoutError):
            with self._lock:
                self.sdk_retries += 1

    def invoke(self, function: str, event: Mapping[str, Any]) -> dict[str, Any]:
        """One step. An in-progress duplicate (the SDK retried while the first run was busy) is retried
        after a pause, as the state machine does; so is a call whose SDK retries all timed out."""
        for _ in range(IN_PROGRESS_RETRIES):
            try:
                response = self.client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
            except ReadTimeoutError:
                # The SDK's own retries all timed out (cold starts on a loaded machine): call again,
                # which is safe because the step is idempotent on the order ID.
                with self._lock:
                    self.caller_retries += 1
                continue
            answer: dict[str, Any] = json.loads(response["Payload"].read())
            if response.get("FunctionError") and answer.get("errorType") == IN_PROGRESS_ERROR:
                with self._lock:
                    self.caller_retries += 1
                time.sleep(1.0)
                continue
            if response.get("FunctionError"):
                raise AssertionError(f"{function} failed for {event.get('order_id')}: {answer}")
            return answer
        raise AssertionError(f"{function} stayed in progress for {event.get('order_id')}")

    def run_order(self, batch_id: str, index: int, order: Mapping[str, Any]) -> dict[str, Any] | None:
        state: dict[str, Any] = {
            "batch_id": batch_id,
            "item_index": index,
            "source_format": "inline",
            "order": dict(order),
        }
        try:
            for function, expected in DIRECT_STEPS:
                state = self.invoke(function, state)
                if state.get("outcome") != expected:
                    return self.invoke("CancelOrderFunction", state) if expected != "VALID" else state
        except (ClientError, ReadTimeoutError, AssertionError) as error:
            print(f"direct caller lost order {order.get('order_id')}: {error}")
            return None
        return state


def run_direct(
    cloud: LocalCloud, scenario: Scenario, batch_id: str, orders: list[dict[str, Any]]
) -> FaultRun:
    """Each order's steps in sequence, a few orders at a time, then the audit's per-order checks."""
    caller = DirectCaller(cloud)
    with ThreadPoolExecutor(max_workers=DIRECT_WORKERS) as pool:
        outcomes = list(pool.map(lambda pair: caller.run_order(batch_id, *pair), list(enumerate(orders))))
    audited = [
        AuditedOrder(index, order, outcome)
        for index, (order, outcome) in enumerate(zip(orders, outcomes, strict=True))
    ]
    report = audit_orders(
        batch_id,
        audited,
        BatchLocations.from_outputs(cloud.stack.outputs),
        dynamodb=cloud.client("dynamodb"),
        body_runs=body_runs_from_logs(cloud.log_dir),
    )
    figures = scenario.figures(report)
    figures.publish()
    return FaultRun(report, figures, read_timeouts=caller.sdk_retries)


def cloud_fixture(function_environment: Mapping[str, str] | None = None) -> Iterator[LocalCloud]:
    cloud = start_cloud(function_environment)
    try:
        yield cloud
    finally:
        cloud.stop()
