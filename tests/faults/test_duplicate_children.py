"""`duplicate_execution`: EXPRESS Distributed Map children run twice (Express is at-least-once on AWS),
and the app still finishes every order once: nothing lost, no effect doubled."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from order_processing.contract import STEP_LOG_NAMES, VALIDATE_ORDER_FUNCTION
from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.audit import AuditReport, BatchLocations
from orderbatch.audit_logs import step_invocations_from_logs
from orderbatch.faults.crash_cases import AS_SHIPPED
from orderbatch.faults.crash_matrix import ConfigurationRun, start_cloud
from orderbatch.faults.crash_results import ConfigurationResult, MatrixResult, render
from orderbatch.faults.duplicate_children import run_duplicate_children_row
from orderbatch.faults.flags import parse_fault_flag
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, FaultPlan, LocalCloud, wait_for_execution
from sam_local_cloud.faults import DuplicateExecution, FaultInjector, FaultRule

TEMPLATE = PROJECT_ROOT / "template.yaml"
STATE_MACHINE = "OrderBatchStateMachine"
VALIDATE_STEP = STEP_LOG_NAMES[VALIDATE_ORDER_FUNCTION]


@dataclass
class DuplicatedBatch:
    status: str
    summary: dict[str, Any]
    item_counts: dict[str, Any]
    report: AuditReport
    # How many times each order's first step was invoked: once per run of its child workflow (plus retries).
    validations: dict[str, int]
    seconds: float


def run_batch_with_duplicates(orders_count: int, probability: float, batch_id: str) -> DuplicatedBatch:
    rule = {"kind": DuplicateExecution.kind, "probability": probability}
    config = local_cloud_config(
        TEMPLATE,
        account_concurrency=10,
        parameter_overrides={"ChildExecutionType": "EXPRESS"},
        fault_plan=FaultPlan.from_dict({"seed": 7, "functions": {STATE_MACHINE: [rule]}}),
    )
    with LocalCloud(config) as app:
        orders = generate_orders(orders_count, fixture_skus(TEMPLATE), prefix=batch_id)
        locations = BatchLocations.from_outputs(app.stack.outputs)
        bucket, key = app.stack.outputs["BatchBucketName"], f"incoming/{batch_id}.json"
        app.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(orders).encode())
        session = boto3.Session(**DUMMY_CREDENTIALS, region_name="us-east-1")
        api = BatchesApiClient(app.api_url, session=session)
        stepfunctions = app.client("stepfunctions")

        started = time.monotonic()
        submitted = api.submit({"batch_id": batch_id, "source": {"bucket": bucket, "key": key}})
        assert submitted.status == 202, submitted.body
        status = wait_for_execution(stepfunctions, locations.execution_arn(batch_id), timeout=1800)
        seconds = time.monotonic() - started
        execution = stepfunctions.describe_execution(executionArn=locations.execution_arn(batch_id))
        (map_run,) = stepfunctions.list_map_runs(executionArn=locations.execution_arn(batch_id))["mapRuns"]
        item_counts = stepfunctions.describe_map_run(mapRunArn=map_run["mapRunArn"])["itemCounts"]
        report = audit_local_batch(app, batch_id)
        validations = {
            order_id: runs
            for (step, order_id), runs in step_invocations_from_logs(app.log_dir).items()
            if step == VALIDATE_STEP
        }
    return DuplicatedBatch(
        status, json.loads(execution.get("output") or "{}"), item_counts, report, validations, seconds
    )


def test_the_flag_names_the_state_machine_and_the_rule_decides_per_child(tmp_path: Any) -> None:
    machine, document = parse_fault_flag(f"{STATE_MACHINE}:duplicate_execution:probability=0.1")
    rule = FaultRule.from_dict(document)
    plan = FaultPlan.from_dict({"seed": 3, "functions": {machine: [rule.to_dict()]}})
    injector = FaultInjector(plan, marker_dir=tmp_path)
    decisions = [injector.decide(machine, json.dumps({"index": index}).encode()) for index in range(1000)]

    assert rule == DuplicateExecution(probability=0.1, overlap="either")
    duplicated = [decision for decision in decisions if decision is not None and decision.duplicate]
    assert 60 <= len(duplicated) <= 140
    # A state machine's rule has nothing for a function's runtime to do.
    assert all(decision.directive() is None for decision in duplicated)
    overlaps = Counter(d.duplicate.runs_concurrently(d.item_key) for d in duplicated if d.duplicate)
    assert overlaps[True] > 10
    assert overlaps[False] > 10
    with pytest.raises(ValueError, match="overlap must be one of"):
        FaultRule.from_dict({"kind": "duplicate_execution", "overlap": "sometimes"})


# About a minute: the crash-matrix row below proves the same on four children in the default run.
@pytest.mark.slow
def test_every_express_child_run_twice_still_finishes_each_order_once() -> None:
    batch = run_batch_with_duplicates(40, probability=1.0, batch_id="dup-all")

    assert batch.status == "SUCCEEDED"
    # Every child ran twice: each order was validated at least twice, the duplicates concurrent or not.
    assert len(batch.validations) == 40
    assert min(batch.validations.values()) >= 2
    # The Map took one result per child, and DescribeMapRun counted each item once.
    assert (batch.summary["total"], batch.summary["succeeded"]) == (40, 40)
    assert (batch.item_counts["total"], batch.item_counts["succeeded"]) == (40, 40)
    assert batch.report.orders_in_input == 40
    assert batch.report.outcomes == {"SUCCEEDED": 40}
    assert batch.report.lost == []
    assert batch.report.doubled == []
    assert batch.report.violations == []


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_thousand_orders_with_a_tenth_of_the_children_run_twice_audit_clean() -> None:
    batch = run_batch_with_duplicates(1000, probability=0.1, batch_id="dup-tenth")
    repeated = sum(1 for runs in batch.validations.values() if runs >= 2)
    print(f"makespan {batch.seconds:.1f} s, orders validated twice or more: {repeated}")

    assert batch.status == "SUCCEEDED"
    assert len(batch.validations) == 1000
    assert 50 <= repeated <= 200
    assert (batch.summary["total"], batch.summary["succeeded"]) == (1000, 1000)
    assert batch.report.outcomes == {"SUCCEEDED": 1000}
    assert batch.report.lost == []
    assert batch.report.doubled == []
    assert batch.report.violations == []


@pytest.mark.e2e
def test_the_crash_matrix_row_runs_every_child_twice_and_judges_it_clean() -> None:
    cloud = start_cloud(AS_SHIPPED)
    try:
        row = run_duplicate_children_row(ConfigurationRun(cloud, AS_SHIPPED))
    finally:
        cloud.stop()
        shutil.rmtree(cloud.state_dir, ignore_errors=True)

    assert (row.step, row.function, row.point) == ("children", STATE_MACHINE, "duplicate_execution")
    assert row.execution_status == "SUCCEEDED"
    assert row.crashes == 4, row.verdict  # the subject and its three bystanders, each child run twice
    assert (row.lost, row.doubled, row.violations) == ([], [], [])
    assert row.subject_outcome == "SUCCEEDED"
    assert row.ok, row.verdict
    assert "every Express child run twice" in render(
        MatrixResult(ConfigurationResult(AS_SHIPPED.name, [row.step], {}, [row], 1.0), [], 1.0)
    )
