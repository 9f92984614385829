"""Runs one scenario: a fresh local cloud (fresh tables), warm environments, one batch, every figure."""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from order_processing.contract import (
    BATCH_FUNCTIONS,
    COMPENSATION_FUNCTION,
    ORDER_STEP_FUNCTIONS,
    SUMMARIZE_BATCH_FUNCTION,
)
from orderbatch.app_batches import (
    audit_local_batch,
    fixture_skus,
    generate_orders,
    local_cloud_config,
)
from orderbatch.bench import resources
from orderbatch.bench.history import analyse_history, read_history
from orderbatch.capacity.model import (
    MeasuredWork,
    Neighbour,
    UnitPrices,
    cost_per_million_orders,
    lower_bound_seconds,
)
from orderbatch.capacity.scenario import BenchSettings, Scenario, neighbour_for
from sam_local_cloud import ExecutionStillRunningError, wait_for_execution
from sam_local_cloud.aws_limits import THROTTLE_ERROR
from sam_local_cloud.json_types import JsonObject

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from sam_local_cloud import LocalCloud

STEP_FUNCTIONS = ORDER_STEP_FUNCTIONS
SUMMARY_FUNCTION = SUMMARIZE_BATCH_FUNCTION
POLL_SECONDS = 0.5
# What one order costs the local cloud itself at worst on 2 cores (about 0.05 s measured; 5x margin).
MACHINE_SECONDS_PER_ORDER = 0.25

Progress = Callable[[str, int, int, float, int], None]


def scenario_deadline(bound: float, settings: BenchSettings) -> float:
    """Six times the bound, plus the local cloud's own time per order (generous for a 2-core machine)."""
    if settings.timeout_seconds is not None:
        return settings.timeout_seconds
    return 6 * bound + 120 + MACHINE_SECONDS_PER_ORDER * settings.orders


def scenario_shape(
    scenario: Scenario, settings: BenchSettings
) -> tuple[BenchSettings, int, Neighbour | None, float]:
    """What one scenario's batch runs with, whichever orchestrator runs it: the settings with the
    scenario's own work per step, its MapMaxConcurrency, its noisy neighbour and the makespan's bound."""
    if scenario.work_seconds is not None:
        settings = dataclasses.replace(settings, work_seconds=scenario.work_seconds)
    max_concurrency = scenario.max_concurrency(settings.quota)
    neighbour = neighbour_for(scenario, settings)
    bound = lower_bound_seconds(
        settings.orders,
        settings.steps,
        settings.work_seconds,
        settings.quota,
        max_concurrency=max_concurrency,
        neighbour=neighbour,
    )
    return settings, max_concurrency, neighbour, bound


def run_scenario(
    scenario: Scenario, settings: BenchSettings, prices: UnitPrices, progress: Progress | None = None
) -> dict[str, Any]:
    from sam_local_cloud import LocalCloud

    settings, max_concurrency, neighbour, bound = scenario_shape(scenario, settings)
    state_dir = Path(tempfile.mkdtemp(prefix=f"orderbatch-bench-{scenario.name}-"))
    config = local_cloud_config(
        settings.template,
        account_concurrency=settings.quota,
        map_max_concurrency=max_concurrency,
        definition_transform=scenario.definition_transform,
        state_dir=state_dir,
        measure_handler_cpu=True,
    )
    if scenario.keep_every_environment:
        config.environments_per_quota_slot = 0
    batch_id = f"bench-{scenario.name}"
    orders = generate_orders(
        settings.orders, fixture_skus(settings.template), prefix=batch_id, seed=settings.seed
    )
    try:
        with LocalCloud(config) as cloud:
            # Warming C environments per function would start the run past the bound on environments
            # that a bounded scenario measures; it starts cold, as `orderbatch local up` does.
            warm = settings.warm and scenario.keep_every_environment
            warmup = _warm_up(cloud, settings) if warm else {"seconds": 0.0, "environments": 0}
            run = _BatchRun(cloud, scenario, settings, batch_id, orders, neighbour, progress)
            measured = run.execute(scenario_deadline(bound, settings))
            batches = [_batch_line(1, measured)]
            for number in range(2, settings.batches + 1):
                again = f"{batch_id}-{number}"
                orders = generate_orders(settings.orders, fixture_skus(settings.template), prefix=again)
                rerun = _BatchRun(cloud, scenario, settings, again, orders, neighbour, progress)
                batches.append(_batch_line(number, rerun.execute(scenario_deadline(bound, settings))))
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    figures = _figures(scenario, settings, prices, max_concurrency, neighbour, bound, warmup, measured)
    figures["batches"] = batches
    figures["throttle_exhaustion"] = throttle_exhaustion(batches, settings.orders)
    figures["targets"] = evaluate_targets(scenario, figures)  # again, with every batch's failures
    return figures


def throttle_exhaustion(batches: list[dict[str, Any]], orders_per_batch: int) -> dict[str, Any]:
    """Over every batch of the scenario: orders failed by throttling alone (their 429 retrier used up),
    the rate per order, and the longest run of 429s any order met."""
    failed = sum(int(batch["failed_by_throttling"]) for batch in batches)
    streaks = [b["longest_throttle_streak"] for b in batches if b.get("longest_throttle_streak") is not None]
    orders = orders_per_batch * len(batches)
    return {
        "batches": len(batches),
        "orders": orders,
        "failed_by_throttling": failed,
        "second_pass": sum(int(batch.get("second_pass") or 0) for batch in batches),
        "rate": round(failed / orders, 6) if orders else None,
        # None for the durable orchestrator, whose 429s leave no history to follow.
        "longest_throttle_streak": max((int(streak) for streak in streaks), default=None),
    }


def batch_outcome(number: int, measured: dict[str, Any]) -> dict[str, Any]:
    """The fields a batch's line starts with, the state machine's or the durable function's: its number,
    how it ended, how long it took, the orders that failed and those throttling alone failed (what
    ``throttle_exhaustion`` sums)."""
    return {
        "batch": number,
        "status": measured["status"],
        "wall_seconds": round(measured["wall_seconds"], 1),
        "failed": sum(measured["failure_errors"].values()),
        "failed_by_throttling": measured["failure_errors"].get(THROTTLE_ERROR, 0),
    }


def _batch_line(number: int, measured: dict[str, Any]) -> dict[str, Any]:
    """One batch of a repeated run: how long, whether it audited clean, which orders failed and whether
    throttling alone failed them, the longest run of 429s an order met, memory once it had finished."""
    audit = measured["audit"]
    return {
        **batch_outcome(number, measured),
        # Orders whose retrier ran out in the batch and that the second pass ran again.
        "second_pass": measured["summary"].get("second_pass"),
        "throttles": measured["history"].throttle_failures,
        "longest_throttle_streak": measured["history"].longest_throttle_streak,
        "lost": len(audit.lost),
        "doubled": len(audit.doubled),
        "violations": len(audit.violations),
        "tree_pss_mib_after": measured["resources"]["tree_pss_mib_after"],
        "peak_tree_pss_mib": measured["resources"]["peak_tree_pss_mib"],
    }


def _warm_up(cloud: LocalCloud, settings: BenchSettings) -> dict[str, float]:
    """Drive `quota` warm-up orders through every step at once, so each step's function has `quota` warm
    environments, as an account in steady state would; init time is reported, not mixed into the batch.
    The compensation function is left cold: no step of a batch whose orders succeed needs it, and each
    of its environments would hold about 30 MB for nothing (a cancel during the batch starts one)."""
    from botocore.exceptions import ClientError

    started = time.monotonic()
    width = settings.quota
    # Unretried: a 429 leaves that order's state as it was, which warms the next step just as well.
    lambda_client = cloud.client("lambda", retries={"total_max_attempts": 1}, max_pool_connections=width)
    orders = generate_orders(width, fixture_skus(settings.template), prefix="warmup", seed=1)
    states: list[object] = [
        {"batch_id": "warmup", "item_index": i, "source_format": "inline", "order": order}
        for i, order in enumerate(orders)
    ]

    def call(function: str, event: object) -> object:
        try:
            result = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        except ClientError:
            return event
        answer = json.loads(result["Payload"].read() or b"null")
        return event if "FunctionError" in result or not isinstance(answer, dict) else answer

    with ThreadPoolExecutor(max_workers=width) as pool:
        for function in STEP_FUNCTIONS:
            states = list(pool.map(lambda state, f=function: call(f, state), states))
    call(SUMMARY_FUNCTION, {"batch_id": "warmup", "results": []})
    return {"seconds": round(time.monotonic() - started, 1), "environments": width}


class _BatchRun:
    def __init__(
        self,
        cloud: LocalCloud,
        scenario: Scenario,
        settings: BenchSettings,
        batch_id: str,
        orders: list[JsonObject],
        neighbour: Neighbour | None,
        progress: Progress | None,
    ) -> None:
        self.cloud = cloud
        self.scenario = scenario
        self.settings = settings
        self.batch_id = batch_id
        self.orders = orders
        self.neighbour = neighbour
        self.progress = progress

    def _fault_plan(self) -> dict[str, object]:
        plan: dict[str, object] = {}
        if self.settings.work_seconds > 0:
            functions = (*STEP_FUNCTIONS, COMPENSATION_FUNCTION)
            plan["latency"] = {name: self.settings.work_seconds for name in functions}
        if self.neighbour is not None:
            plan["noisy_neighbour"] = {
                "slots": self.neighbour.slots,
                "duration_seconds": self.neighbour.duration_seconds,
                "start_after_seconds": self.neighbour.start_seconds,
            }
        return plan

    def _input(self) -> dict[str, object]:
        """The execution's input: the orders inline, or where in S3 they were put (Distributed Map)."""
        if self.scenario.source_for(len(self.orders)) == "inline":
            return {"batch_id": self.batch_id, "orders": self.orders}
        bucket = self.cloud.stack.outputs["BatchBucketName"]
        key = f"incoming/{self.batch_id}.json"
        self.cloud.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(self.orders).encode())
        return {"batch_id": self.batch_id, "source": {"bucket": bucket, "key": key}}

    def execute(self, deadline_seconds: float) -> dict[str, Any]:
        from orderbatch.audit import BatchLocations

        cloud = self.cloud
        service = cloud.lambda_service
        assert service is not None, "the local cloud has started"
        sfn = cloud.client("stepfunctions")
        dynamodb = cloud.client("dynamodb")
        locations = BatchLocations.from_outputs(cloud.stack.outputs)
        before = service.stats(include_timeseries=False)["functions"]
        writes_before = cloud.dynamodb_writes()
        execution_input = json.dumps(self._input())
        memory_before = resources.memory()
        cpu_before = resources.cpu_seconds(data_plane=cloud.data_plane_pids())
        handler_before = resources.handler_cpu(cloud.handler_cpu_dir)
        requests_before = cloud.data_plane.request_cpu() if cloud.data_plane is not None else {}
        peak = resources.PeakMemory().start(seed=memory_before)
        # The plan's clock (a neighbour's window, its start) runs from here: set just before the batch starts,
        # not before the readings above, which take seconds on a loaded machine and ate a 1.5 s window whole.
        service.set_fault_plan(self._fault_plan())
        # Samples carry seconds since the service started; the last sample can be seconds stale on a busy
        # machine, so the origin is taken from the service's own clock (no public accessor exists yet).
        series_origin = time.monotonic() - service.started_monotonic
        execution_arn = sfn.start_execution(
            stateMachineArn=locations.state_machine_arn, name=self.batch_id, input=execution_input
        )["executionArn"]
        started = time.monotonic()
        progress = self.progress

        def report_progress(_status: str, elapsed: float) -> None:
            if progress is not None:
                now = service.stats(include_timeseries=False)["functions"]
                progress(
                    self.scenario.name,
                    min(len(self.orders), _finished_orders(before, now)),
                    len(self.orders),
                    elapsed,
                    _sum_throttles(now) - _sum_throttles(before),
                )

        timed_out = False
        try:
            wait_for_execution(
                sfn,
                execution_arn,
                timeout=deadline_seconds,
                poll_seconds=POLL_SECONDS,
                on_poll=report_progress,
            )
        except ExecutionStillRunningError:
            sfn.stop_execution(executionArn=execution_arn, cause="benchmark deadline")
            timed_out = True
        wall_seconds = time.monotonic() - started
        # Before the sampler stops: once reaped, its CPU would be in this process's children's time.
        cpu = resources.cpu_seconds(data_plane=cloud.data_plane_pids(), exclude=peak.pids()) - cpu_before
        peak.stop()
        handler_after = resources.handler_cpu(cloud.handler_cpu_dir)
        requests_after = cloud.data_plane.request_cpu() if cloud.data_plane is not None else {}
        stats = service.stats(include_timeseries=True)
        service.set_fault_plan(None)
        writes_after = cloud.dynamodb_writes()
        execution = sfn.describe_execution(executionArn=execution_arn)
        definition = json.loads(cloud.stack.state_machine().definition)
        history = analyse_history(read_history(sfn, execution_arn), definition["States"])
        audit_started = time.monotonic()
        report = audit_local_batch(cloud, self.batch_id)
        audit_seconds = time.monotonic() - audit_started
        failure_errors = failure_errors_of(dynamodb, locations.orders_table, self.batch_id)
        summary = json.loads(execution["output"]) if execution.get("output") else {}
        failure_codes = Counter(
            str(order.get("code"))
            for order in summary.get("orders", [])
            if order.get("outcome") != "SUCCEEDED"
        )
        memory = {spec.name: spec.memory_mb for spec in cloud.stack.functions}
        return {
            "status": execution["status"],
            "timed_out": timed_out,
            "wall_seconds": wall_seconds,
            "history": history,
            "audit": report,
            "audit_seconds": audit_seconds,
            "summary": {k: v for k, v in summary.items() if k != "orders"},
            "failure_codes": dict(failure_codes),
            "failure_errors": failure_errors,
            "functions": _function_deltas(before, stats["functions"]),
            "memory_mb": memory,
            "resources": {
                "cpu_seconds": {
                    "local_cloud": round(cpu.local_cloud, 2),
                    "data_plane": round(cpu.data_plane, 2),
                    "environments": round(cpu.environments, 2),
                },
                "tree_pss_mib_before": round(memory_before.tree_pss_mib, 1),
                "peak_tree_pss_mib": round(peak.peak_tree_pss_mib, 1),
                "peak_process_rss_mib": round(peak.peak_process_rss_mib, 1),
                "peak_processes": peak.peak_processes,
                "tree_pss_mib_after": round(resources.memory().tree_pss_mib, 1),
                "handler_cpu_seconds": round(handler_after[0] - handler_before[0], 4),
                "handler_invocations": handler_after[1] - handler_before[1],
                "data_plane_requests": {
                    kind: [
                        round(seconds - requests_before.get(kind, (0.0, 0))[0], 4),
                        count - requests_before.get(kind, (0.0, 0))[1],
                    ]
                    for kind, (seconds, count) in requests_after.items()
                    if count > requests_before.get(kind, (0.0, 0))[1]
                },
            },
            "writes": {
                "requests": dict(writes_after[0] - writes_before[0]),
                "units": dict(writes_after[1] - writes_before[1]),
            },
            "samples": [
                {**sample, "t": round(sample["t"] - series_origin, 3)}
                for sample in stats["timeseries"]["samples"]
                if sample["t"] >= series_origin
            ],
        }


def failure_errors_of(dynamodb: DynamoDBClient, table: str, batch_id: str) -> dict[str, int]:
    """The error the compensation recorded on each order of the batch that did not succeed, counted."""
    errors: Counter[str] = Counter()
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="begins_with(order_id, :p) AND #s <> :ok",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":p": {"S": batch_id}, ":ok": {"S": "SUCCEEDED"}},
    ):
        for item in page["Items"]:
            errors[item.get("error", {}).get("S") or item.get("status", {}).get("S", "?")] += 1
    return dict(errors)


def _finished_orders(before: dict[str, Any], now: dict[str, Any]) -> int:
    """For the progress bar only: an order ends in Confirm or Cancel. A DynamoDB scan would say it exactly
    but would take the local cloud's DynamoDB lock from the handlers twice a second."""
    ends = (STEP_FUNCTIONS[-1], COMPENSATION_FUNCTION)
    return sum(now[name]["invocations"] - before[name]["invocations"] for name in ends if name in now)


def _sum_throttles(functions: dict[str, Any]) -> int:
    return sum(functions[name]["throttles_total"] for name in BATCH_FUNCTIONS if name in functions)


def _function_deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, float]]:
    deltas = {}
    for name in BATCH_FUNCTIONS:
        if name not in after:
            continue
        old, new = before[name], after[name]
        deltas[name] = {
            "invocations": new["invocations"] - old["invocations"],
            "throttles": new["throttles_total"] - old["throttles_total"],
            "errors": new["errors"] - old["errors"],
            "cold_starts": new["cold_starts"] - old["cold_starts"],
            "duration_ms": round(new["duration_ms"]["total"] - old["duration_ms"]["total"], 1),
        }
    return deltas


def _figures(
    scenario: Scenario,
    settings: BenchSettings,
    prices: UnitPrices,
    max_concurrency: int,
    neighbour: Neighbour | None,
    bound: float,
    warmup: dict[str, Any],
    measured: dict[str, Any],
) -> dict[str, Any]:
    n = settings.orders
    history = measured["history"]
    audit = measured["audit"]
    functions = measured["functions"]
    makespan = history.makespan_seconds or measured["wall_seconds"]
    invocations = sum(int(f["invocations"]) for f in functions.values())
    throttles = sum(int(f["throttles"]) for f in functions.values())
    busy_ms = sum(f["duration_ms"] for f in functions.values())
    step_calls = sum(int(functions[name]["invocations"]) for name in STEP_FUNCTIONS if name in functions)
    step_ms = sum(functions[name]["duration_ms"] for name in STEP_FUNCTIONS if name in functions)
    summary = measured["summary"]
    outcomes = audit.outcomes
    succeeded = int(summary.get("succeeded", outcomes.get("SUCCEEDED", 0)))
    lost = len(audit.lost)
    write_units = sum(measured["writes"]["units"].values())
    write_requests = sum(measured["writes"]["requests"].values())
    gb_seconds = sum(
        f["duration_ms"] / 1000 * measured["memory_mb"][name] / 1024 for name, f in functions.items()
    )
    cost = cost_per_million_orders(
        MeasuredWork(
            orders=n,
            transitions=history.transitions,
            top_level_transitions=history.top_level_transitions,
            lambda_requests=invocations,
            lambda_gb_seconds=gb_seconds,
            dynamodb_write_units=write_units,
            per_order_seconds=history.iteration_seconds(),
        ),
        prices,
    )
    capacity = min(settings.quota, max_concurrency)
    figures: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        # An S3 batch's children are not in the parent's history, so its transitions (and the cost built on
        # them) cover the parent alone; the report prints them as not measured.
        "source": scenario.source_for(n),
        "changed": list(scenario.changed),
        "max_concurrency": max_concurrency,
        "quota": settings.quota,
        "neighbour": None
        if neighbour is None
        else {
            "slots": neighbour.slots,
            "start_seconds": neighbour.start_seconds,
            "duration_seconds": neighbour.duration_seconds,
        },
        "status": measured["status"],
        "timed_out": measured["timed_out"],
        "makespan_seconds": round(makespan, 2),
        "lower_bound_seconds": round(bound, 2),
        "bound_ratio": round(makespan / bound, 3) if bound else None,
        "orders": {
            "total": n,
            "succeeded": succeeded,
            "failed": n - succeeded - lost,
            "lost": lost,
            "outcomes": outcomes,
            "failure_codes": measured["failure_codes"],
            # The error the compensation recorded on each failed order (e.g. States.Timeout).
            "failure_errors": measured["failure_errors"],
        },
        "doubled": len(audit.doubled),
        "audit_violations": len(audit.violations),
        "audit_violations_by_check": dict(Counter(v.check for v in audit.violations)),
        "body_runs_beyond_one": audit.body_runs_beyond_one,
        "lambda": {
            "attempts": invocations + throttles,
            "invocations": invocations,
            "throttles": throttles,
            "attempts_per_order": round((invocations + throttles) / n, 3),
            "throttles_per_order": round(throttles / n, 3),
            "tasks_per_second": round(invocations / makespan, 1) if makespan else 0.0,
            "throttled_task_events": history.throttle_failures,
            "gb_seconds": round(gb_seconds, 3),
            "by_function": functions,
        },
        "transitions": {
            "total": history.transitions,
            "per_order": round(history.transitions / n, 2),
            "retries": history.retries,
            "top_level": history.top_level_transitions,
        },
        "dynamodb": {
            "write_requests": write_requests,
            "write_units": write_units,
            "write_requests_per_order": round(write_requests / n, 2),
            "write_units_per_order": round(write_units / n, 2),
            "by_operation": measured["writes"]["requests"],
        },
        "cost_per_million_orders": cost,
        # Where the time goes: busy slot-seconds against the capacity, and time in a step beyond d.
        "time_accounting": {
            "slot_utilisation": round(busy_ms / 1000 / (capacity * makespan), 3) if makespan else None,
            "mean_step_call_ms": round(step_ms / step_calls, 1) if step_calls else None,
            "step_overhead_ms_beyond_work": round(step_ms / step_calls - settings.work_seconds * 1000, 1)
            if step_calls
            else None,
            "median_order_seconds": round(statistics.median(history.iteration_seconds()), 2)
            if history.iteration_seconds()
            else None,
            # `orderbatch audit` of the whole batch, as a user runs it after the batch.
            "audit_seconds": round(measured["audit_seconds"], 2),
        },
        "resources": _resource_figures(measured["resources"], invocations, n),
        "warmup": warmup,
        "series": {
            "concurrency": [
                # Per-function peaks within one sample need not coincide: their sum can exceed the account's.
                [
                    s["t"],
                    s["account"],
                    min(s["account"], sum(s["functions"].get(f, 0) for f in BATCH_FUNCTIONS)),
                ]
                for s in measured["samples"]
            ],
            "throttle_times": [round(t, 3) for t in history.throttle_times],
            "completion_times": sorted(round(t, 3) for t in history.iteration_ends.values()),
        },
    }
    figures["targets"] = evaluate_targets(scenario, figures)
    return figures


def _resource_figures(measured: dict[str, Any], invocations: int, orders: int) -> dict[str, Any]:
    """CPU per Lambda task (the local cloud's process, and the runtimes and stubs below it) and memory."""
    cpu = measured["cpu_seconds"]
    growth = measured["peak_tree_pss_mib"] - measured["tree_pss_mib_before"]
    return {
        **measured,
        "cpu_ms_per_task": {
            part: round(seconds * 1000 / invocations, 2) if invocations else None
            for part, seconds in cpu.items()
        },
        **overhead_figures(measured, invocations),
        "pss_growth_mib_per_1000_orders": round(growth * 1000 / orders, 1),
    }


def overhead_figures(measured: dict[str, Any], invocations: int) -> dict[str, Any]:
    """The emulation's cost against the handlers' own work, per Lambda task: O = (total CPU - handler's
    CPU) / handler's CPU. The handler's CPU is what the same code costs on AWS; the rest is the local
    cloud's (its process, the data plane, the execution environments outside the handler)."""
    handler_seconds = measured.get("handler_cpu_seconds", 0.0)
    handled = measured.get("handler_invocations", 0)
    total_ms = 1000 * sum(measured["cpu_seconds"].values()) / invocations if invocations else None
    handler_ms = 1000 * handler_seconds / handled if handled else None
    overhead = (total_ms - handler_ms) / handler_ms if total_ms is not None and handler_ms else None
    return {
        "total_cpu_ms": round(total_ms, 2) if total_ms is not None else None,
        "handler_cpu_ms": round(handler_ms, 3) if handler_ms is not None else None,
        "overhead_factor": round(overhead, 2) if overhead is not None else None,
        "data_plane_cpu_ms": {
            kind: round(1000 * seconds / count, 3)
            for kind, (seconds, count) in sorted(measured.get("data_plane_requests", {}).items())
            if count
        },
    }


def evaluate_targets(scenario: Scenario, figures: dict[str, Any]) -> dict[str, object]:
    targets = scenario.targets
    checks: list[dict[str, object]] = []

    def check(figure: str, actual: float | None, limit: float | None) -> None:
        if limit is None:
            return
        met = actual is not None and actual <= limit
        checks.append({"figure": figure, "actual": actual, "target": f"<= {limit}", "met": met})

    check("makespan / lower bound", figures["bound_ratio"], targets.max_bound_ratio)
    check("lost orders", figures["orders"]["lost"], targets.max_lost)
    check("doubled orders", figures["doubled"], targets.max_doubled)
    check("429s per order", figures["lambda"]["throttles_per_order"], targets.max_throttles_per_order)
    exhaustion = figures.get("throttle_exhaustion")
    if exhaustion is not None:
        check(
            "orders failed by throttling alone",
            exhaustion["failed_by_throttling"],
            targets.max_failed_by_throttling,
        )
    return {
        "checks": checks,
        "met": all(c["met"] for c in checks),
        "compare_with": targets.compare_with,
    }


def progress_printer(stream: TextIO, *, interactive: bool) -> Progress:
    """A one-line progress bar per scenario (a line every 10 s when not on a terminal)."""
    last = {"printed": 0.0}
    lock = threading.Lock()

    def show(name: str, done: int, total: int, elapsed: float, throttles: int) -> None:
        with lock:
            width = 30
            filled = int(width * done / total) if total else width
            line = (
                f"  {name:<16} [{'#' * filled}{'.' * (width - filled)}] {done:4d}/{total} orders "
                f"{elapsed:6.1f} s  429s {throttles}"
            )
            if interactive:
                stream.write("\r" + line)
                stream.flush()
            elif elapsed - last["printed"] >= 10 or elapsed < last["printed"]:
                last["printed"] = elapsed
                stream.write(line + "\n")
                stream.flush()

    return show
