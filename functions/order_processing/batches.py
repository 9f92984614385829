"""Batch submission and status: the HTTP API's domain logic.

Only the envelope is validated here. Orders are validated one by one by the state machine, so one
bad order never sinks its batch.

A batch runs as the Step Functions execution named after its batch ID, which makes the execution
name the deduplication key: the same batch submitted twice finds its execution, and the same ID
with different content is a conflict. The execution input is canonical JSON so a resubmission of
the same content compares equal however the client formatted it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, TypedDict

import boto3
from botocore.exceptions import ClientError

from order_processing.contract import MAX_INLINE_ORDERS

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef

BATCH_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,80}")
SOURCE_FORMATS = ("json", "csv")
SUBMISSION_FIELDS = frozenset({"batch_id", "orders", "source", "orchestrator"})
# Who runs a batch: the state machine (the default) or the durable function (durable_batches).
ORCHESTRATORS = ("stepfunctions", "durable")
SOURCE_FIELDS = frozenset({"bucket", "key", "format"})
RUNNING = "RUNNING"


class BatchRequestError(Exception):
    """A request the API refuses; carries the HTTP status it answers with and the field at fault."""

    status_code: ClassVar[int] = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_body(self) -> dict[str, object]:
        body: dict[str, object] = {"message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body


class InvalidBatchRequestError(BatchRequestError):
    status_code = 400


class BatchNotFoundError(BatchRequestError):
    status_code = 404


class BatchConflictError(BatchRequestError):
    status_code = 409


class BatchTooLargeError(BatchRequestError):
    status_code = 413


class UnsupportedContentTypeError(BatchRequestError):
    status_code = 415


@dataclass(frozen=True)
class BatchSubmission:
    """A validated request: the batch ID and the execution input it starts."""

    batch_id: str
    execution_input: str
    source: dict[str, str] | None = None
    orchestrator: str = ORCHESTRATORS[0]


class Redrive(TypedDict):
    """What a redrive answers: the execution redriven, and when."""

    batch_id: str
    execution_arn: str
    redrive_date: str | None


@dataclass(frozen=True)
class SubmissionOutcome:
    batch_id: str
    execution_arn: str
    status: str
    submitted: bool


def canonical_json(value: object) -> str:
    """Sorted keys, no whitespace: equal content gives equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def validate_batch_id(value: object) -> str:
    if value is None:
        raise InvalidBatchRequestError("batch_id is required", field="batch_id")
    if not isinstance(value, str) or not BATCH_ID_PATTERN.fullmatch(value):
        raise InvalidBatchRequestError(
            "batch_id must be 1-80 characters, each a letter, digit, '-' or '_' "
            f"(it names the Step Functions execution); got {json.dumps(value)}",
            field="batch_id",
        )
    return value


def execution_arn_for(state_machine_arn: str, batch_id: str) -> str:
    """arn:P:states:R:A:stateMachine:NAME -> arn:P:states:R:A:execution:NAME:BATCH_ID."""
    parts = state_machine_arn.split(":")
    if len(parts) < 7 or parts[2] != "states" or parts[5] != "stateMachine":
        raise ValueError(f"not a state machine ARN: {state_machine_arn}")
    return ":".join([*parts[:5], "execution", parts[6], batch_id])


def parse_submission(
    body: str | None,
    content_type: str | None,
    max_inline_bytes: int,
    max_inline_orders: int = MAX_INLINE_ORDERS,
) -> BatchSubmission:
    """Validate a POST /batches request and build its canonical execution input."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedContentTypeError(
            f"Content-Type must be application/json, got {content_type or 'none'}", field="Content-Type"
        )
    try:
        document = json.loads(body or "")
    except json.JSONDecodeError as error:
        raise InvalidBatchRequestError(f"request body is not valid JSON: {error}") from error
    if not isinstance(document, dict):
        raise InvalidBatchRequestError(
            "request body must be a JSON object with batch_id and orders or source"
        )

    batch_id = validate_batch_id(document.get("batch_id"))
    unknown = sorted(set(document) - SUBMISSION_FIELDS)
    if unknown:
        raise InvalidBatchRequestError(
            f"unknown field {unknown[0]}; a batch has batch_id and either orders or source", field=unknown[0]
        )
    has_orders, has_source = "orders" in document, "source" in document
    if has_orders and has_source:
        raise InvalidBatchRequestError(
            f"batch {batch_id} has both orders and source; send the orders inline or in S3, not both",
            field="source",
        )
    if not has_orders and not has_source:
        raise InvalidBatchRequestError(
            f"batch {batch_id} needs orders (an inline array) or source (an S3 object)", field="orders"
        )
    orchestrator = document.get("orchestrator", ORCHESTRATORS[0])
    if orchestrator not in ORCHESTRATORS:
        raise InvalidBatchRequestError(
            f"orchestrator must be one of {', '.join(ORCHESTRATORS)}; got {json.dumps(orchestrator)}",
            field="orchestrator",
        )
    source = _parse_source(document["source"]) if has_source else None
    execution_input: dict[str, object] = {"batch_id": batch_id}
    if source is None:
        orders = execution_input["orders"] = _parse_orders(batch_id, document)
        if len(orders) > max_inline_orders:
            # The outcomes come back through the execution's state, which has the same 256 KiB limit as
            # its input; a few hundred bytes per outcome caps an inline batch well before its input does.
            raise BatchTooLargeError(
                f"batch {batch_id} has {len(orders)} orders; inline batches hold at most "
                f"{max_inline_orders} so their outcomes fit Step Functions' 256 KiB state limit; upload the "
                'orders to S3 as a JSON array or CSV and submit {"batch_id": ..., "source": {"bucket": ..., '
                '"key": ...}} instead',
                field="orders",
            )
    else:
        execution_input["source"] = source

    text = canonical_json(execution_input)
    size = len(text.encode("utf-8"))
    if size > max_inline_bytes:
        raise BatchTooLargeError(
            f"batch {batch_id} is {size} bytes, over the {max_inline_bytes}-byte limit of a Step Functions "
            "execution input; upload the orders to S3 as a JSON array or CSV and submit "
            '{"batch_id": ..., "source": {"bucket": ..., "key": ...}} instead',
            field="orders",
        )
    return BatchSubmission(batch_id=batch_id, execution_input=text, source=source, orchestrator=orchestrator)


def _parse_orders(batch_id: str, document: Mapping[str, object]) -> list[object]:
    orders = document["orders"]
    if not isinstance(orders, list):
        raise InvalidBatchRequestError(f"orders of batch {batch_id} must be a JSON array", field="orders")
    if not orders:
        raise InvalidBatchRequestError(f"batch {batch_id} has no orders", field="orders")
    return orders


def _parse_source(source: object) -> dict[str, str]:
    if not isinstance(source, dict):
        raise InvalidBatchRequestError("source must be an object with bucket and key", field="source")
    unknown = sorted(set(source) - SOURCE_FIELDS)
    if unknown:
        raise InvalidBatchRequestError(
            f"unknown field source.{unknown[0]}; source has bucket, key and optionally format",
            field=f"source.{unknown[0]}",
        )
    for name in ("bucket", "key"):
        value = source.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidBatchRequestError(
                f"source.{name} is required (a non-empty string)", field=f"source.{name}"
            )
    bucket, key = source["bucket"], source["key"]
    source_format = source.get("format")
    if source_format is None:
        extension = key.rsplit(".", 1)[-1].lower() if "." in key.rsplit("/", 1)[-1] else ""
        if extension not in SOURCE_FORMATS:
            raise InvalidBatchRequestError(
                f"cannot tell the format of s3://{bucket}/{key} from its extension; "
                'name it .json or .csv or set source.format to "json" or "csv"',
                field="source.format",
            )
        source_format = extension
    elif source_format not in SOURCE_FORMATS:
        raise InvalidBatchRequestError(
            f'source.format must be "json" or "csv", got {json.dumps(source_format)}', field="source.format"
        )
    return {"bucket": bucket, "key": key, "format": source_format}


def submit_batch(
    submission: BatchSubmission,
    *,
    state_machine_arn: str,
    sfn_client: SFNClient | None = None,
    s3_client: S3Client | None = None,
) -> SubmissionOutcome:
    """Start the batch's execution once; a resubmission finds it, different content conflicts."""
    sfn = sfn_client or boto3.client("stepfunctions")
    if submission.source is not None:
        _require_source_object(submission.source, s3_client or boto3.client("s3"))

    execution_arn = execution_arn_for(state_machine_arn, submission.batch_id)
    # Asking first is what tells a resubmission apart: StartExecution answers a running execution
    # with the same name and input as if it had just started it.
    existing = describe_execution_or_none(sfn, execution_arn)
    if existing is None:
        try:
            started = sfn.start_execution(
                stateMachineArn=state_machine_arn,
                name=submission.batch_id,
                input=submission.execution_input,
            )
        except sfn.exceptions.ExecutionAlreadyExists:
            # Another submission of this batch won the race between our describe and start.
            existing = describe_execution_or_none(sfn, execution_arn)
            if existing is None:
                raise
        else:
            return SubmissionOutcome(submission.batch_id, started["executionArn"], RUNNING, submitted=True)

    if json.loads(existing.get("input") or "null") != json.loads(submission.execution_input):
        raise BatchConflictError(
            f"batch {submission.batch_id} was already submitted with different content; use a new batch_id",
            field="batch_id",
        )
    return SubmissionOutcome(
        submission.batch_id, existing["executionArn"], existing["status"], submitted=False
    )


def _require_source_object(source: dict[str, str], s3: S3Client) -> None:
    try:
        s3.head_object(Bucket=source["bucket"], Key=source["key"])
    except ClientError as error:
        if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (403, 404):
            raise InvalidBatchRequestError(
                f"S3 source s3://{source['bucket']}/{source['key']} does not exist", field="source"
            ) from error
        raise


def describe_execution_or_none(sfn: SFNClient, execution_arn: str) -> DescribeExecutionOutputTypeDef | None:
    try:
        return sfn.describe_execution(executionArn=execution_arn)
    except sfn.exceptions.ExecutionDoesNotExist:
        return None


def describe_batch(
    batch_id: str, *, state_machine_arn: str, sfn_client: SFNClient | None = None
) -> dict[str, object]:
    """The batch's execution status, and its summary once the execution has produced one."""
    validate_batch_id(batch_id)
    sfn = sfn_client or boto3.client("stepfunctions")
    execution = describe_execution_or_none(sfn, execution_arn_for(state_machine_arn, batch_id))
    if execution is None:
        raise BatchNotFoundError(f"batch {batch_id} not found", field="batch_id")
    return batch_status(batch_id, execution)


def batch_status(batch_id: str, execution: DescribeExecutionOutputTypeDef) -> dict[str, object]:
    """The execution as Step Functions reports it, redrive fields included."""
    return {
        "batch_id": batch_id,
        "execution_arn": execution["executionArn"],
        "status": execution["status"],
        "started_at": _iso(execution.get("startDate")),
        "stopped_at": _iso(execution.get("stopDate")),
        "summary": _summary_of(execution.get("output")),
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "redrive_count": execution.get("redriveCount", 0),
        "redrive_date": _iso(execution.get("redriveDate")),
        "redrive_status": execution.get("redriveStatus"),
        "redrive_status_reason": execution.get("redriveStatusReason"),
    }


def redrive_batch(batch_id: str, *, state_machine_arn: str, sfn_client: SFNClient | None = None) -> Redrive:
    """RedriveExecution on the batch's execution: it reruns only what did not succeed."""
    validate_batch_id(batch_id)
    sfn = sfn_client or boto3.client("stepfunctions")
    execution_arn = execution_arn_for(state_machine_arn, batch_id)
    try:
        redriven = sfn.redrive_execution(executionArn=execution_arn)
    except sfn.exceptions.ExecutionDoesNotExist as error:
        raise BatchNotFoundError(f"batch {batch_id} not found", field="batch_id") from error
    except sfn.exceptions.ExecutionNotRedrivable as error:
        message = error.response.get("Error", {}).get("Message") or str(error)
        raise BatchConflictError(
            f"batch {batch_id} cannot be redriven: {message}", field="batch_id"
        ) from error
    return {
        "batch_id": batch_id,
        "execution_arn": execution_arn,
        "redrive_date": _iso(redriven["redriveDate"]),
    }


def _summary_of(output: str | None) -> object:
    """The state machine's output is {"summary": ...}; a bare summary is accepted too."""
    if not output:
        return None
    document = json.loads(output)
    if isinstance(document, dict) and "summary" in document:
        return document["summary"]
    return document


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
