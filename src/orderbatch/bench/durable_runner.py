"""Runs one scenario's batch through DurableOrderBatchFunction on a fresh local cloud, as runner.py runs
it through the state machine: the same quota, MapMaxConcurrency, work per step, neighbour and orders.

The batch starts as Lambda starts a durable execution, ``Invoke`` with ``InvocationType=Event`` and
``DurableExecutionName`` = the batch ID, and is polled with ``GetDurableExecution``. Its figures:
makespan (the execution's start to end), 429s per order (the task functions' and the orchestrator's
own), orchestrator invocations (replays), durable operations (the execution's history), DynamoDB
writes, orders lost (no final record in the orders table) and the cost per million orders with durable
functions' own prices. The exactly-once audit reads Step Functions executions and is not run here.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from order_processing.contract import COMPENSATION_FUNCTION, FINAL_ORDER_STATUSES, ORDER_STEP_FUNCTIONS
from orderbatch.app_batches import fixture_skus, generate_orders, local_cloud_config
from orderbatch.bench.runner import (
    Progress,
    _warm_up,
    batch_outcome,
    failure_errors_of,
    scenario_deadline,
    scenario_shape,
    throttle_exhaustion,
)
from orderbatch.capacity.model import UnitPrices
from orderbatch.capacity.retriers import with_docs_retrier, without_second_pass
from orderbatch.capacity.scenario import BenchSettings, Scenario
from orderbatch.plan.durable import DurableModel, durable_cost
from sam_local_cloud.json_types import JsonObject

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_lambda.type_defs import GetDurableExecutionHistoryRequestTypeDef

    from sam_local_cloud import LocalCloud

DURABLE_FUNCTION = "DurableOrderBatchFunction"
TASK_FUNCTIONS = (*ORDER_STEP_FUNCTIONS, COMPENSATION_FUNCTION)
POLL_SECONDS = 0.5
WARMUP_LIMIT_SECONDS = 120.0


def durable_parameter_overrides(scenario: Scenario) -> tuple[dict[str, str], str]:
    """The scenario's retrier rewrite as the durable function's template parameters, and what it means.

    The function reads its 429 retrier from the ThrottleRetry* parameters and always uses full jitter, so
    the docs retrier (TooManyRequests not retried) is ThrottleRetryMaxAttempts = 0 and "no jitter" has
    no counterpart: that scenario runs the app's retrier on the durable side.
    """
    if scenario.definition_transform is None:
        return {}, "the app's retrier"
    if scenario.definition_transform is with_docs_retrier:
        return {
            "ThrottleRetryMaxAttempts": "0"
        }, "429s not retried (ThrottleRetryMaxAttempts = 0), no second pass"
    if scenario.definition_transform is without_second_pass:
        return {}, "the app's retrier, no second pass"
    return {}, "the app's retrier (the durable function has no setting for jitter)"


def durable_function_environment(scenario: Scenario) -> dict[str, str]:
    """The durable function's variables for a scenario: the second pass off where the state machine's
    definition is rewritten without it."""
    if scenario.definition_transform in (with_docs_retrier, without_second_pass):
        return {"SECOND_PASS": "false"}
    return {}


def run_durable_scenario(
    scenario: Scenario, settings: BenchSettings, prices: UnitPrices, progress: Progress | None = None
) -> dict[str, Any]:
    from sam_local_cloud import LocalCloud

    settings, max_concurrency, neighbour, bound = scenario_shape(scenario, settings)
    overrides, retrier = durable_parameter_overrides(scenario)
    state_dir = Path(tempfile.mkdtemp(prefix=f"orderbatch-bench-durable-{scenario.name}-"))
    config = local_cloud_config(
        settings.template,
        account_concurrency=settings.quota,
        map_max_concurrency=max_concurrency,
        parameter_overrides=overrides,
        function_environment=durable_function_environment(scenario),
        state_dir=state_dir,
    )
    batch_id = f"bench-durable-{scenario.name}"
    orders = generate_orders(
        settings.orders, fixture_skus(settings.template), prefix=batch_id, seed=settings.seed
    )
    fault_plan: dict[str, object] = {}
    if settings.work_seconds > 0:
        fault_plan["latency"] = dict.fromkeys(TASK_FUNCTIONS, settings.work_seconds)
    if neighbour is not None:
        fault_plan["noisy_neighbour"] = {
            "slots": neighbour.slots,
            "duration_seconds": neighbour.duration_seconds,
            "start_after_seconds": neighbour.start_seconds,
        }
    try:
        with LocalCloud(config) as cloud:
            # As the state machine's run: C warm environments per task function, and the orchestrator's
            # own, so neither init is in the makespan.
            warmup = {"seconds": 0.0, "environments": 0}
            if settings.warm and scenario.keep_every_environment:
                warmup = _warm_up(cloud, settings)
                warmup["orchestrator_seconds"] = _warm_orchestrator(cloud, settings)
            deadline = scenario_deadline(bound, settings)
            measured = _execute(cloud, batch_id, orders, fault_plan, deadline, progress)
            batches = [_batch_line(1, measured)]
            for number in range(2, settings.batches + 1):
                again = f"{batch_id}-{number}"
                more = generate_orders(settings.orders, fixture_skus(settings.template), prefix=again)
                batches.append(
                    _batch_line(number, _execute(cloud, again, more, fault_plan, deadline, progress))
                )
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    figures = _figures(settings, prices, max_concurrency, bound, retrier, measured)
    figures["warmup"] = warmup
    figures["batches"] = batches
    figures["throttle_exhaustion"] = throttle_exhaustion(batches, settings.orders)
    return figures


def _batch_line(number: int, measured: dict[str, Any]) -> dict[str, Any]:
    """One batch of a repeated durable run: its end, and the orders throttling alone failed."""
    return {
        **batch_outcome(number, measured),
        "second_pass": (measured["result"] or {}).get("second_pass"),
        "longest_throttle_streak": None,
        "final_records": dict(measured["final_records"]),
    }


def _warm_orchestrator(cloud: LocalCloud, settings: BenchSettings) -> float:
    """One durable execution of one order, waited for: the orchestrator's environment is then warm."""
    started = time.monotonic()
    lambda_client = cloud.client("lambda")
    orders = generate_orders(1, fixture_skus(settings.template), prefix="warmup-durable", seed=2)
    arn = lambda_client.invoke(
        FunctionName=DURABLE_FUNCTION,
        InvocationType="Event",
        DurableExecutionName="warmup-durable",
        Payload=json.dumps({"batch_id": "warmup-durable", "orders": orders}).encode(),
    )["DurableExecutionArn"]
    while time.monotonic() - started < WARMUP_LIMIT_SECONDS:
        if lambda_client.get_durable_execution(DurableExecutionArn=arn)["Status"] != "RUNNING":
            break
        time.sleep(POLL_SECONDS)
    return round(time.monotonic() - started, 1)


def _execute(
    cloud: LocalCloud,
    batch_id: str,
    orders: list[JsonObject],
    fault_plan: dict[str, object],
    deadline_seconds: float,
    progress: Progress | None,
) -> dict[str, Any]:
    from orderbatch.audit import BatchLocations

    service = cloud.lambda_service
    assert service is not None, "the local cloud has started"
    lambda_client = cloud.client("lambda")
    names = (*TASK_FUNCTIONS, DURABLE_FUNCTION)
    before = service.stats(include_timeseries=False)["functions"]
    writes_before = cloud.dynamodb_writes()
    service.set_fault_plan(fault_plan or None)
    started = time.monotonic()
    answer = lambda_client.invoke(
        FunctionName=DURABLE_FUNCTION,
        InvocationType="Event",
        DurableExecutionName=batch_id,
        Payload=json.dumps({"batch_id": batch_id, "orders": orders}).encode(),
    )
    execution_arn = answer["DurableExecutionArn"]
    execution: dict[str, Any] = {}
    timed_out = False
    while True:
        execution = lambda_client.get_durable_execution(DurableExecutionArn=execution_arn)
        elapsed = time.monotonic() - started
        if execution["Status"] != "RUNNING":
            break
        if progress is not None:
            now = service.stats(include_timeseries=False)["functions"]
            ends = (ORDER_STEP_FUNCTIONS[-1], COMPENSATION_FUNCTION)
            done = sum(now[name]["invocations"] - before[name]["invocations"] for name in ends)
            throttles = sum(now[name]["throttles_total"] - before[name]["throttles_total"] for name in names)
            progress(f"{batch_id[len('bench-') :]}", min(done, len(orders)), len(orders), elapsed, throttles)
        if elapsed > deadline_seconds:
            lambda_client.stop_durable_execution(DurableExecutionArn=execution_arn)
            execution = lambda_client.get_durable_execution(DurableExecutionArn=execution_arn)
            timed_out = True
            break
        time.sleep(POLL_SECONDS)
    wall_seconds = time.monotonic() - started
    after = service.stats(include_timeseries=False)["functions"]
    service.set_fault_plan(None)
    writes_after = cloud.dynamodb_writes()
    locations = BatchLocations.from_outputs(cloud.stack.outputs)
    return {
        "status": execution["Status"],
        "timed_out": timed_out,
        "wall_seconds": wall_seconds,
        "execution_seconds": _execution_seconds(execution),
        "result": json.loads(execution["Result"]) if execution.get("Result") else {},
        "operations": _operations(lambda_client, execution_arn),
        "functions": {
            name: {
                "invocations": after[name]["invocations"] - before[name]["invocations"],
                "throttles": after[name]["throttles_total"] - before[name]["throttles_total"],
                "duration_ms": round(
                    after[name]["duration_ms"]["total"] - before[name]["duration_ms"]["total"], 1
                ),
            }
            for name in names
            if name in after
        },
        "memory_mb": {spec.name: spec.memory_mb for spec in cloud.stack.functions},
        "write_units": sum((writes_after[1] - writes_before[1]).values()),
        "final_records": _final_records(cloud.client("dynamodb"), locations.orders_table, batch_id),
        "failure_errors": failure_errors_of(cloud.client("dynamodb"), locations.orders_table, batch_id),
    }


def _execution_seconds(execution: dict[str, Any]) -> float | None:
    start, end = execution.get("StartTimestamp"), execution.get("EndTimestamp")
    if start is None or end is None:
        return None
    return float((end - start).total_seconds())


def _operations(lambda_client: LambdaClient, execution_arn: str) -> int:
    """Operations the execution checkpointed (what durable functions bill): distinct IDs in its history."""
    identifiers: set[str] = set()
    marker: str | None = None
    while True:
        request: GetDurableExecutionHistoryRequestTypeDef = {"DurableExecutionArn": execution_arn}
        if marker:
            request["Marker"] = marker
        page = lambda_client.get_durable_execution_history(**request)
        identifiers.update(event["Id"] for event in page.get("Events", []) if event.get("Id"))
        marker = page.get("NextMarker")
        if not marker:
            return len(identifiers)


def _final_records(dynamodb: DynamoDBClient, table: str, batch_id: str) -> Counter[str]:
    statuses: Counter[str] = Counter()
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="begins_with(order_id, :p)",
        ExpressionAttributeValues={":p": {"S": batch_id}},
    ):
        for item in page["Items"]:
            status = item.get("status", {}).get("S", "?")
            statuses[status if status in FINAL_ORDER_STATUSES else "not final"] += 1
    return statuses


def _figures(
    settings: BenchSettings,
    prices: UnitPrices,
    max_concurrency: int,
    bound: float,
    retrier: str,
    measured: dict[str, Any],
) -> dict[str, Any]:
    n = settings.orders
    functions = measured["functions"]
    makespan = measured["execution_seconds"] or measured["wall_seconds"]
    orchestrator = functions.get(DURABLE_FUNCTION, {"invocations": 0, "throttles": 0, "duration_ms": 0.0})
    task_calls = sum(int(functions[name]["invocations"]) for name in TASK_FUNCTIONS if name in functions)
    task_throttles = sum(int(functions[name]["throttles"]) for name in TASK_FUNCTIONS if name in functions)
    invocations = task_calls + int(orchestrator["invocations"])
    throttles = task_throttles + int(orchestrator["throttles"])
    gb_seconds = sum(
        f["duration_ms"] / 1000 * measured["memory_mb"][name] / 1024 for name, f in functions.items()
    )
    result = measured["result"]
    finals = measured["final_records"]
    final = sum(count for status, count in finals.items() if status != "not final")
    succeeded = int(result.get("succeeded", finals.get("SUCCEEDED", 0)))
    operations = int(measured["operations"])
    model = DurableModel()
    cost = durable_cost(
        orders=n,
        requests=invocations,
        gb_seconds=gb_seconds,
        write_units=int(measured["write_units"]),
        operations=operations,
        model=model,
        prices=prices,
    )
    return {
        "orchestrator": "durable",
        "retrier": retrier,
        "status": measured["status"],
        "timed_out": measured["timed_out"],
        "makespan_seconds": round(makespan, 2),
        "lower_bound_seconds": round(bound, 2),
        "bound_ratio": round(makespan / bound, 3) if bound else None,
        "max_concurrency": max_concurrency,
        "orders": {
            "total": n,
            "succeeded": succeeded,
            "failed": final - finals.get("SUCCEEDED", 0),
            "lost": n - final,
            "final_records": dict(finals),
        },
        "lambda": {
            "invocations": invocations,
            "throttles": throttles,
            "attempts_per_order": round((invocations + throttles) / n, 3),
            "throttles_per_order": round(throttles / n, 3),
            "task_throttles": task_throttles,
            "orchestrator_invocations": int(orchestrator["invocations"]),
            "orchestrator_throttles": int(orchestrator["throttles"]),
            "replays_per_order": round(int(orchestrator["invocations"]) / n, 3),
            "mean_replay_ms": round(orchestrator["duration_ms"] / orchestrator["invocations"], 1)
            if orchestrator["invocations"]
            else None,
            "gb_seconds": round(gb_seconds, 3),
            "by_function": functions,
        },
        "durable": {
            "operations": operations,
            "operations_per_order": round(operations / n, 2),
            "checkpoint_kb_per_operation_assumed": model.checkpoint_kb_per_operation,
        },
        "dynamodb": {
            "write_units": measured["write_units"],
            "write_units_per_order": round(measured["write_units"] / n, 2),
        },
        "cost_per_million_orders": cost,
    }
