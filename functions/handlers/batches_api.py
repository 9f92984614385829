"""HTTP API (payload format 2.0, IAM auth): POST /batches and GET /batches/{batch_id}."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.settings import get_settings, require
from order_processing.batches import (
    BatchRequestError,
    describe_batch,
    parse_submission,
    submit_batch,
)

logger = Logger()
tracer = Tracer()
metrics = Metrics()
app = APIGatewayHttpResolver()


def _state_machine_arn() -> str:
    return require(get_settings().state_machine_arn, "STATE_MACHINE_ARN")


@app.post("/batches")
@tracer.capture_method
def post_batch() -> Response[dict[str, Any]]:
    event = app.current_event
    submission = parse_submission(
        event.decoded_body,
        event.headers.get("content-type"),
        get_settings().max_inline_batch_bytes,
        get_settings().max_inline_orders,
    )
    outcome = submit_batch(submission, state_machine_arn=_state_machine_arn())
    logger.info(
        "batch submitted" if outcome.submitted else "batch resubmitted",
        batch_id=outcome.batch_id,
        execution_arn=outcome.execution_arn,
    )
    metrics.add_metric(
        name="BatchesSubmitted" if outcome.submitted else "BatchesResubmitted", unit=MetricUnit.Count, value=1
    )
    body: dict[str, Any] = {
        "batch_id": outcome.batch_id,
        "execution_arn": outcome.execution_arn,
        "status": outcome.status,
        "submitted": outcome.submitted,
    }
    if not outcome.submitted:
        body["message"] = f"batch {outcome.batch_id} was already submitted; this is its execution"
    return Response(
        status_code=202 if outcome.submitted else 200, content_type=content_types.APPLICATION_JSON, body=body
    )


@app.get("/batches/<batch_id>")
@tracer.capture_method
def get_batch(batch_id: str) -> Response[dict[str, Any]]:
    status = describe_batch(batch_id, state_machine_arn=_state_machine_arn())
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=status)


@app.exception_handler(BatchRequestError)
def refuse_request(error: BatchRequestError) -> Response[dict[str, str]]:
    logger.info("request refused", status_code=error.status_code, reason=error.message, field=error.field)
    metrics.add_metric(name="RequestsRefused", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=error.status_code, content_type=content_types.APPLICATION_JSON, body=error.to_body()
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
