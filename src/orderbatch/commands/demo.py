"""`orderbatch demo`: the main job. Starts the local cloud, reproduces the field report, runs a batch.

Part 1 (the field report): 12 concurrent direct invocations of one function, SDK retries off, each
held 3 s, against an account quota of 10: 10 answer 200, 2 answer 429 TooManyRequestsException /
ConcurrentInvocationLimitExceeded, the function runs 10 times, and CloudWatch says the same.
Part 2: a batch of orders through the HTTP API with MaxConcurrency above the quota: every throttle
absorbed by the state machine's retries, every order executed exactly once (audited).
Exits non-zero if any figure is not what it must be.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from order_processing.contract import (
    CHARGE_PAYMENT_FUNCTION,
    PER_ORDER_FUNCTIONS,
    STEP_LOG_NAMES,
    VALIDATE_ORDER_FUNCTION,
)
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.project import default_template
from sam_local_cloud import DUMMY_CREDENTIALS, ExecutionStillRunningError, wait_for_execution
from sam_local_cloud.aws_limits import THROTTLE_ERROR
from sam_local_cloud.executions import execution_history

if TYPE_CHECKING:
    from sam_local_cloud import LocalCloud

DIRECT_FUNCTION = VALIDATE_ORDER_FUNCTION


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser(
        "demo", help="the local demo: 429s reproduced, a throttled batch exactly once"
    )
    demo.add_argument("--orders", type=int, default=200, help="orders in the batch (default 200)")
    demo.add_argument("--account-concurrency", type=int, default=10)
    demo.add_argument(
        "--max-concurrency",
        type=int,
        default=20,
        help="the batch's Map MaxConcurrency, above the quota on purpose (default 20)",
    )
    demo.add_argument("--template", type=Path, default=None)
    demo.add_argument("--timeout", type=float, default=170.0, help="seconds to wait for the batch")
    demo.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    demo.set_defaults(func=run)


class Demo:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.template = (args.template or default_template()).resolve()
        self.figures: dict[str, Any] = {}
        self.problems: list[str] = []
        self.quiet = bool(args.json)

    def say(self, text: str = "", end: str = "\n") -> None:
        if not self.quiet:
            print(text, end=end, flush=True)

    def expect(self, what: str, actual: object, expected: object) -> None:
        if actual != expected:
            self.problems.append(f"{what}: got {actual}, expected {expected}")

    def run(self) -> int:
        from sam_local_cloud import LocalCloud

        started = time.monotonic()
        config = local_cloud_config(
            self.template,
            account_concurrency=self.args.account_concurrency,
            map_max_concurrency=self.args.max_concurrency,
        )
        self.say(f"Starting the local cloud (account concurrency {self.args.account_concurrency}) ...")
        with LocalCloud(config) as cloud:
            self.say(
                f"  endpoint {cloud.endpoint}, {len(cloud.stack.functions)} functions, "
                f"{len(cloud.stack.tables)} tables, state machine {cloud.stack.state_machine().name}\n"
            )
            self.field_report(cloud)
            self.batch(cloud)
        self.figures["seconds"] = round(time.monotonic() - started, 1)
        self.figures["problems"] = self.problems
        if self.args.json:
            print(json.dumps(self.figures, indent=2, default=str))
        elif self.problems:
            self.say("\nFAILED:\n  " + "\n  ".join(self.problems))
        else:
            self.say(f"\nAll figures as expected ({self.figures['seconds']} s).")
        return 1 if self.problems else 0

    # ------------------------------------------------------------------ part 1
    def field_report(self, cloud: LocalCloud) -> None:
        quota = self.args.account_concurrency
        calls = quota + 2
        self.say(
            f"1. The field report: {calls} concurrent invocations of {DIRECT_FUNCTION}, each held 3 s, "
            "SDK retries off"
        )
        lambda_client = cloud.client(
            "lambda", retries={"total_max_attempts": 1}, read_timeout=60, max_pool_connections=calls + 4
        )
        service = cloud.lambda_service
        assert service is not None, "the local cloud has started"
        service.set_latency({DIRECT_FUNCTION: 3.0})
        ran_before = service.stats(include_timeseries=False)["functions"][DIRECT_FUNCTION]["invocations"]
        window_start = datetime.now(UTC) - timedelta(minutes=1)

        def invoke(number: int) -> dict[str, Any]:
            event = {
                "batch_id": "field-report",
                "item_index": number,
                "source_format": "inline",
                "order": {
                    "order_id": f"field-report-{number:02d}",
                    "customer_id": "c-1",
                    "currency": "USD",
                    "items": [{"sku": "SKU-001", "quantity": 1, "unit_price": "1.00"}],
                },
            }
            try:
                response = lambda_client.invoke(
                    FunctionName=DIRECT_FUNCTION, Payload=json.dumps(event).encode()
                )
                return {"status": response["StatusCode"], "error": response.get("FunctionError")}
            except ClientError as error:
                return {
                    "status": error.response["ResponseMetadata"]["HTTPStatusCode"],
                    "error": error.response["Error"]["Code"],
                    "reason": error.response.get("Reason"),
                }

        barrier = threading.Barrier(calls)

        def invoke_together(number: int) -> dict[str, Any]:
            barrier.wait(timeout=30)
            return invoke(number)

        with ThreadPoolExecutor(max_workers=calls) as pool:
            results = list(pool.map(invoke_together, range(1, calls + 1)))
        service.set_latency({})
        for number, result in enumerate(results, start=1):
            detail = (
                f"{result['error']} / {result['reason']}" if result.get("reason") else (result["error"] or "")
            )
            self.say(f"   call {number:2d}: HTTP {result['status']} {detail}")
        ok = sum(1 for r in results if r["status"] == 200 and not r["error"])
        throttled = [r for r in results if r["status"] == 429]
        ran = (
            service.stats(include_timeseries=False)["functions"][DIRECT_FUNCTION]["invocations"] - ran_before
        )
        metrics = self.read_lambda_metrics(cloud, window_start)
        self.say(f"   {ok} x 200, {len(throttled)} x 429; the function ran {ran} times")
        self.say(
            f"   CloudWatch AWS/Lambda: Invocations {metrics['Invocations']:.0f}, "
            f"Throttles {metrics['Throttles']:.0f}\n"
        )
        self.figures["field_report"] = {
            "calls": calls,
            "ok": ok,
            "throttled": len(throttled),
            "throttle_errors": sorted({f"{r['error']}/{r['reason']}" for r in throttled}),
            "function_ran": ran,
            "cloudwatch": metrics,
        }
        self.expect("direct calls answered 200", ok, quota)
        self.expect("direct calls throttled", len(throttled), 2)
        self.expect(
            "throttle error",
            self.figures["field_report"]["throttle_errors"],
            ["TooManyRequestsException/ConcurrentInvocationLimitExceeded"],
        )
        self.expect("function runs", ran, quota)
        self.expect("CloudWatch Invocations", int(metrics["Invocations"]), quota)
        self.expect("CloudWatch Throttles", int(metrics["Throttles"]), 2)

    def read_lambda_metrics(self, cloud: LocalCloud, start: datetime) -> dict[str, float]:
        cloud.flush_metrics()
        cloudwatch = cloud.client("cloudwatch")
        figures = {}
        for name in ("Invocations", "Throttles"):
            response = cloudwatch.get_metric_statistics(
                Namespace="AWS/Lambda",
                MetricName=name,
                Statistics=["Sum"],
                Period=3600,
                Dimensions=[{"Name": "FunctionName", "Value": DIRECT_FUNCTION}],
                StartTime=start,
                EndTime=datetime.now(UTC) + timedelta(minutes=1),
            )
            figures[name] = sum(point["Sum"] for point in response["Datapoints"])
        return figures

    # ------------------------------------------------------------------ part 2
    def batch(self, cloud: LocalCloud) -> None:
        from orderbatch.api_client import BatchesApiClient
        from orderbatch.audit import BatchLocations

        count = self.args.orders
        batch_id = f"demo-{datetime.now(UTC):%Y%m%dT%H%M%S}"
        orders = generate_orders(count, fixture_skus(self.template), prefix=batch_id)
        self.say(
            f"2. A batch of {count} orders through the HTTP API, MaxConcurrency {self.args.max_concurrency} "
            f"against a quota of {self.args.account_concurrency}"
        )
        import boto3

        session = boto3.Session(**DUMMY_CREDENTIALS, region_name=cloud.stack.region)
        api = BatchesApiClient(cloud.api_url, session=session)
        throttles_before = self.task_throttles(cloud)
        submitted = api.submit({"batch_id": batch_id, "orders": orders})
        self.say(
            f"   POST /batches -> {submitted.status} {submitted.body.get('execution_arn', submitted.body)}"
        )
        self.expect("POST /batches status", submitted.status, 202)
        again = api.submit({"batch_id": batch_id, "orders": orders})
        self.say(f"   POST /batches again -> {again.status} (submitted: {again.body.get('submitted')})")
        self.expect("resubmission status", again.status, 200)

        locations = BatchLocations.from_outputs(cloud.stack.outputs)
        dynamodb = cloud.client("dynamodb")
        started = time.monotonic()
        sfn = cloud.client("stepfunctions")
        execution_arn = locations.execution_arn(batch_id)

        # Progress is read from Step Functions and DynamoDB, not from GET /batches: with MaxConcurrency
        # above the quota the API's own function is throttled too, which is the point of this part.
        def show_progress(execution_status: str, elapsed: float) -> None:
            finished = dynamodb.scan(
                TableName=locations.orders_table,
                Select="COUNT",
                FilterExpression="begins_with(order_id, :p) AND #s <> :r",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":p": {"S": batch_id}, ":r": {"S": "RECEIVED"}},
            )["Count"]
            throttles = self.task_throttles(cloud) - throttles_before
            self.say(
                f"\r   {elapsed:5.1f} s  orders finished {finished:4d}/{count}  "
                f"429s absorbed so far {throttles:4d}  status {execution_status}   ",
                end="",
            )

        # Past the timeout the batch is judged as it stands: the status check below reports it.
        with contextlib.suppress(ExecutionStillRunningError):
            wait_for_execution(sfn, execution_arn, timeout=self.args.timeout, on_poll=show_progress)
        self.say()
        makespan = time.monotonic() - started
        status = api.status(batch_id).body
        self.say(f"   GET /batches/{batch_id} -> {status.get('status')}")
        summary = status.get("summary") or {}
        self.expect("batch status", status.get("status"), "SUCCEEDED")

        throttled_task_events = 0
        for event in execution_history(sfn, execution_arn):
            details = event.get("taskFailedEventDetails") or {}
            if event["type"] == "TaskFailed" and details.get("error") == THROTTLE_ERROR:
                throttled_task_events += 1
        report = audit_local_batch(cloud, batch_id)
        # The audit counted every body run from the logs: {runs: orders} for the charge step.
        runs_per_order = report.body_runs_by_step.get(STEP_LOG_NAMES[CHARGE_PAYMENT_FUNCTION], {})
        throttles = self.task_throttles(cloud) - throttles_before
        self.say(
            f"   summary: {json.dumps({k: v for k, v in summary.items() if k not in ('orders', 'batch_id')})}"
        )
        self.say(
            f"   makespan {makespan:.1f} s; 429s absorbed by retries: {throttles} "
            f"({throttled_task_events} TaskFailed Lambda.TooManyRequestsException events in the history)"
        )
        self.say(f"   executions per order: {runs_per_order}")
        self.say(
            f"   audit: {len(report.lost)} lost, {len(report.doubled)} doubled, "
            f"{len(report.violations)} violations"
        )
        self.figures["batch"] = {
            "batch_id": batch_id,
            "orders": count,
            "status": status.get("status"),
            "makespan_seconds": round(makespan, 1),
            "summary": {k: v for k, v in summary.items() if k != "orders"},
            "throttles_absorbed": throttles,
            "throttled_task_events": throttled_task_events,
            "executions_per_order": runs_per_order,
            "lost": report.lost,
            "doubled": report.doubled,
            "violations": [v.detail for v in report.violations][:20],
        }
        self.expect("orders succeeded", summary.get("succeeded"), count)
        self.expect("lost orders", len(report.lost), 0)
        self.expect("doubled orders", len(report.doubled), 0)
        self.expect("audit violations", len(report.violations), 0)
        self.expect("executions per order", runs_per_order, {"1": count})
        if throttles == 0:
            self.problems.append("no 429 was absorbed although MaxConcurrency is above the quota")

    @staticmethod
    def task_throttles(cloud: LocalCloud) -> int:
        service = cloud.lambda_service
        assert service is not None, "the local cloud has started"
        functions = service.stats(include_timeseries=False)["functions"]
        return sum(
            sum(functions[name]["throttles"].values()) for name in PER_ORDER_FUNCTIONS if name in functions
        )


def run(args: argparse.Namespace) -> int:
    try:
        return Demo(args).run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
