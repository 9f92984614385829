"""The crash matrix's ``duplicate_execution`` row: one S3 batch whose EXPRESS children all run twice.

The row is judged as a crash point is: the execution succeeded, the fault fired (every order's child ran
twice: its first step was invoked at least twice), and the exactly-once audit is clean (nothing lost,
nothing doubled, no violation).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from orderbatch.audit import BatchLocations, audit_batch
from orderbatch.audit_logs import body_runs_from_logs, step_invocations_from_logs
from orderbatch.faults.crash_cases import ALONE, CHILDREN, DuplicateChildrenCase
from orderbatch.faults.crash_results import CaseResult
from sam_local_cloud import ExecutionStillRunningError, wait_for_execution

BATCH_TIMEOUT_SECONDS = 300.0


class MatrixRun(Protocol):
    """What the row needs of the crash matrix's run of one configuration (``ConfigurationRun``), named
    here so that this module does not import the matrix that imports it."""

    cloud: Any
    configuration: Any
    lambda_service: Any
    locations: BatchLocations
    log_dir: Path
    progress: Callable[[str], None]


def run_duplicate_children_row(run: MatrixRun) -> CaseResult:
    case = DuplicateChildrenCase(f"cm-{run.configuration.slug}-children")
    cloud = run.cloud
    bucket = cloud.stack.outputs["BatchBucketName"]
    key = f"incoming/{case.batch_id}.json"
    cloud.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(case.orders()).encode())
    stepfunctions = cloud.client("stepfunctions")
    run.lambda_service.set_fault_plan({"functions": {CHILDREN.function: [case.rule()]}})
    started = time.monotonic()
    try:
        stepfunctions.start_execution(
            stateMachineArn=run.locations.state_machine_arn,
            name=case.batch_id,
            input=json.dumps({"batch_id": case.batch_id, "source": {"bucket": bucket, "key": key}}),
        )
        try:
            status = wait_for_execution(
                stepfunctions, run.locations.execution_arn(case.batch_id), timeout=BATCH_TIMEOUT_SECONDS
            )
        except ExecutionStillRunningError:
            status = "STILL RUNNING"
    finally:
        run.lambda_service.set_fault_plan(None)
    seconds = time.monotonic() - started
    run.progress(f"{run.configuration.name}: {CHILDREN.name} {case.label}: {status}")
    return judge_duplicate_children(run, case, status, seconds)


def judge_duplicate_children(
    run: MatrixRun, case: DuplicateChildrenCase, status: str, seconds: float
) -> CaseResult:
    body_runs = body_runs_from_logs(run.log_dir)
    report = audit_batch(
        case.batch_id,
        run.locations,
        stepfunctions=run.cloud.client("stepfunctions"),
        dynamodb=run.cloud.client("dynamodb"),
        s3=run.cloud.client("s3"),
        body_runs=body_runs,
    )
    invocations = step_invocations_from_logs(run.log_dir)
    order_ids = [str(order["order_id"]) for order in case.orders()]
    step = CHILDREN.body_log_name or ""
    run_twice = sum(1 for order_id in order_ids if invocations.get((step, order_id), 0) >= 2)
    problems = [violation.detail for violation in report.violations]
    subject_outcome = next((o.outcome for o in report.orders if o.order_id == case.subject), None)
    if status != "SUCCEEDED":
        verdict = f"execution {status}"
    elif run_twice < len(order_ids):
        verdict = f"{run_twice} of {len(order_ids)} children run twice"
    elif report.lost:
        verdict = "LOST " + ", ".join(report.lost)
    elif report.doubled:
        verdict = "DOUBLED " + ", ".join(report.doubled)
    elif problems:
        verdict = "VIOLATION " + problems[0]
    elif subject_outcome != "SUCCEEDED":
        verdict = f"ended {subject_outcome}, expected SUCCEEDED"
    else:
        verdict = "ok"
    return CaseResult(
        configuration=run.configuration.name,
        function=CHILDREN.function,
        step=CHILDREN.name,
        point="duplicate_execution",
        label=case.label,
        key="duplicate_execution",
        variant=ALONE,
        batch_id=case.batch_id,
        verdict=verdict,
        ok=verdict == "ok",
        execution_status=status,
        crashes=run_twice,
        subject_outcome=subject_outcome,
        body_runs=body_runs.get((step, case.subject)),
        lost=report.lost,
        doubled=report.doubled,
        violations=problems,
        seconds=round(seconds, 1),
    )
