"""Batches run by the durable function (DurableOrderBatchFunction) instead of the state machine.

The durable function takes the state machine's inline execution input and returns its batch summary, so
a batch is the same document either way. It is started with Invoke (``InvocationType=Event``) on the
function's alias ARN with the batch ID as the durable execution name: Lambda starts one execution per
name, and answers a second start with the same payload with that execution. Read back with
GetDurableExecution, an execution is put in the shape of Step Functions' DescribeExecution
(``as_described_execution``), which is what the status route, the survey of open orders and reconcile read.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, cast

from botocore.exceptions import ClientError

from order_processing.batches import (
    ORCHESTRATORS,
    BatchConflictError,
    BatchSubmission,
    InvalidBatchRequestError,
    SubmissionOutcome,
)

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_lambda.type_defs import GetDurableExecutionResponseTypeDef
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef

STEP_FUNCTIONS, DURABLE = ORCHESTRATORS
DURABLE_RUNNING = "RUNNING"
# Lambda's answer to a start under a used name with a different payload.
ALREADY_STARTED = "DurableExecutionAlreadyStartedException"


def durable_execution(
    batch_id: str, function_arn: str, lambda_client: LambdaClient
) -> GetDurableExecutionResponseTypeDef | None:
    """GetDurableExecution of the function's execution named after the batch, or None when it has none."""
    listed = lambda_client.list_durable_executions_by_function(
        FunctionName=function_arn, DurableExecutionName=batch_id
    ).get("DurableExecutions", [])
    named = [e for e in listed if e.get("DurableExecutionName") == batch_id]
    if not named:
        return None
    return lambda_client.get_durable_execution(DurableExecutionArn=named[0]["DurableExecutionArn"])


def submit_durable_batch(
    submission: BatchSubmission, *, function_arn: str, lambda_client: LambdaClient
) -> SubmissionOutcome:
    """Start the batch's durable execution once; a resubmission finds it, different content conflicts."""
    if submission.source is not None:
        raise InvalidBatchRequestError(
            f"batch {submission.batch_id}: the durable orchestrator takes inline orders only; submit an S3 "
            "source to the state machine",
            field="orchestrator",
        )
    existing = durable_execution(submission.batch_id, function_arn, lambda_client)
    if existing is None:
        try:
            started = lambda_client.invoke(
                FunctionName=function_arn,
                InvocationType="Event",
                DurableExecutionName=submission.batch_id,
                Payload=submission.execution_input.encode(),
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != ALREADY_STARTED:
                raise
            raise _conflict(submission.batch_id) from error
        return SubmissionOutcome(
            submission.batch_id, started["DurableExecutionArn"], DURABLE_RUNNING, submitted=True
        )
    if json.loads(existing.get("InputPayload") or "null") != json.loads(submission.execution_input):
        raise _conflict(submission.batch_id)
    return SubmissionOutcome(
        submission.batch_id, existing["DurableExecutionArn"], str(existing["Status"]), submitted=False
    )


def _conflict(batch_id: str) -> BatchConflictError:
    return BatchConflictError(
        f"batch {batch_id} was already submitted with different content; use a new batch_id", field="batch_id"
    )


def as_described_execution(execution: GetDurableExecutionResponseTypeDef) -> DescribeExecutionOutputTypeDef:
    """A durable execution in DescribeExecution's shape: its status as Lambda reports it (a stopped one is
    STOPPED), its input, its result as the output, its error as error and cause."""
    error = execution.get("Error") or {}
    described: dict[str, object] = {
        "executionArn": execution["DurableExecutionArn"],
        "name": execution.get("DurableExecutionName"),
        "status": execution["Status"],
        "input": execution.get("InputPayload") or "{}",
        "startDate": execution.get("StartTimestamp"),
    }
    optional = {
        "output": execution.get("Result"),
        "stopDate": _moment(execution.get("EndTimestamp")),
        "error": error.get("ErrorType"),
        "cause": error.get("ErrorMessage"),
    }
    described.update({key: value for key, value in optional.items() if value is not None})
    return cast("DescribeExecutionOutputTypeDef", described)


def _moment(value: object) -> datetime | None:
    return value if isinstance(value, datetime) else None
