"""HTTP API (payload format 2.0, IAM auth): POST /batches, GET /batches/{batch_id} and, for a batch whose
execution ended unsuccessfully, POST /batches/{batch_id}/redrive and POST /batches/{batch_id}/reconcile."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from pydantic import Field

from handlers import clients
from handlers.environment import AllStoresEnvironment, Required
from handlers.observability import count, logger, metrics, tracer
from handlers.stores import inventory, order_records, payment_ledger
from order_processing.batches import (
    BatchRequestError,
    InvalidBatchRequestError,
    parse_submission,
    submit_batch,
)
from order_processing.contract import MAX_INLINE_BATCH_BYTES, MAX_INLINE_ORDERS
from order_processing.durable_batches import (
    DURABLE,
    as_described_execution,
    durable_execution,
    submit_durable_batch,
)
from order_processing.reconcile import (
    BatchExecutions,
    DurableLookup,
    OrderStores,
    batch_state,
    ended_batch,
    reconcile_batch,
    redrive_unless_reconciled,
    seconds_left,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef

    from order_processing.json_types import JsonObject


class Environment(AllStoresEnvironment):
    function: ClassVar[str] = "BatchesApiFunction"

    state_machine_arn: Required = Field(alias="STATE_MACHINE_ARN")
    # The durable variant's alias ARN: batches submitted with "orchestrator": "durable" run there.
    durable_batch_function_arn: str | None = Field(default=None, alias="DURABLE_BATCH_FUNCTION_ARN")
    max_inline_batch_bytes: int = Field(default=MAX_INLINE_BATCH_BYTES, gt=0, alias="MAX_INLINE_BATCH_BYTES")
    max_inline_orders: int = Field(default=MAX_INLINE_ORDERS, gt=0, alias="MAX_INLINE_ORDERS")
    # How long a task a stopped batch started may still run: reconcile waits this long after the stop.
    # Without the template's value, Lambda's longest timeout is the only safe assumption.
    task_function_timeout_seconds: int = Field(
        default=900, ge=1, le=900, alias="TASK_FUNCTION_TIMEOUT_SECONDS"
    )


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

app = APIGatewayHttpResolver()
# Reconcile stops this long before the function's timeout and answers with where to continue.
RECONCILE_RESERVE_SECONDS = 2.5


def _json(status_code: int, body: Mapping[str, object]) -> Response[Mapping[str, object]]:
    return Response(status_code=status_code, content_type=content_types.APPLICATION_JSON, body=body)


@app.post("/batches")
@tracer.capture_method
def post_batch() -> Response[Mapping[str, object]]:
    environment = Environment.load()
    event = app.current_event
    submission = parse_submission(
        event.decoded_body,
        event.headers.get("content-type"),
        environment.max_inline_batch_bytes,
        environment.max_inline_orders,
    )
    if submission.orchestrator == DURABLE:
        outcome = submit_durable_batch(
            submission, function_arn=_durable_function_arn(environment), lambda_client=clients.lambda_()
        )
    else:
        outcome = submit_batch(
            submission,
            state_machine_arn=environment.state_machine_arn,
            sfn_client=clients.stepfunctions(),
            s3_client=clients.s3(),
        )
    logger.info(
        "batch submitted" if outcome.submitted else "batch resubmitted",
        batch_id=outcome.batch_id,
        execution_arn=outcome.execution_arn,
        orchestrator=submission.orchestrator,
    )
    count("BatchesSubmitted" if outcome.submitted else "BatchesResubmitted")
    body: dict[str, object] = {
        "batch_id": outcome.batch_id,
        "execution_arn": outcome.execution_arn,
        "status": outcome.status,
        "submitted": outcome.submitted,
        "orchestrator": submission.orchestrator,
    }
    if not outcome.submitted:
        body["message"] = f"batch {outcome.batch_id} was already submitted; this is its execution"
    return Response(
        status_code=202 if outcome.submitted else 200, content_type=content_types.APPLICATION_JSON, body=body
    )


@app.get("/batches/<batch_id>")
@tracer.capture_method
def get_batch(batch_id: str) -> Response[Mapping[str, object]]:
    return _json(200, batch_state(batch_id, _batch_executions(Environment.load())))


@app.post("/batches/<batch_id>/redrive")
@tracer.capture_method
def post_redrive(batch_id: str) -> Response[Mapping[str, object]]:
    redriven = redrive_unless_reconciled(batch_id, _batch_executions(Environment.load()))
    logger.info("batch redriven", **redriven)
    count("BatchesRedriven")
    return _json(200, redriven)


@app.post("/batches/<batch_id>/reconcile")
@tracer.capture_method
def post_reconcile(batch_id: str) -> Response[Mapping[str, object]]:
    environment = Environment.load()
    start_index = _start_index(app.current_event.decoded_body)
    batch = ended_batch(
        batch_id,
        state_machine_arn=environment.state_machine_arn,
        sfn=clients.stepfunctions(),
        settle_seconds=environment.task_function_timeout_seconds,
        durable=_durable_lookup(environment),
    )
    remaining = app.lambda_context.get_remaining_time_in_millis() / 1000 - RECONCILE_RESERVE_SECONDS
    report = reconcile_batch(
        batch,
        OrderStores(order_records(environment), inventory(environment), payment_ledger(environment)),
        clients.s3(),
        start_index=start_index,
        time_left=seconds_left(time.monotonic() + remaining),
    )
    logger.info("batch reconciled", batch_id=batch_id, counts=report.counts, next_index=report.next_index)
    for action, orders in report.counts.items():
        if orders and action in ("completed", "compensated"):
            count(f"OrdersReconciled{action.title()}", orders)
    return _json(200, report.to_dict())


def _batch_executions(environment: Environment) -> BatchExecutions:
    return BatchExecutions(
        state_machine_arn=environment.state_machine_arn,
        sfn=clients.stepfunctions(),
        orders=lambda: order_records(environment),
        s3=clients.s3(),
        durable=_durable_lookup(environment),
    )


def _durable_function_arn(environment: Environment) -> str:
    if not environment.durable_batch_function_arn:
        raise InvalidBatchRequestError(
            "this API has no durable function (DURABLE_BATCH_FUNCTION_ARN): submit without orchestrator",
            field="orchestrator",
        )
    return environment.durable_batch_function_arn


def _durable_lookup(environment: Environment) -> DurableLookup | None:
    """Where a batch the state machine never ran may be: the durable function's execution of that name."""
    function_arn = environment.durable_batch_function_arn
    if not function_arn:
        return None

    def lookup(batch_id: str) -> DescribeExecutionOutputTypeDef | None:
        execution = durable_execution(batch_id, function_arn, clients.lambda_())
        return as_described_execution(execution) if execution is not None else None

    return lookup


def _start_index(body: str | None) -> int:
    """An optional {"start_index": N}: where a reconcile cut short by the time limit continues."""
    if not body:
        return 0
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise InvalidBatchRequestError(f"request body is not valid JSON: {error}") from error
    value = document.get("start_index", 0) if isinstance(document, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidBatchRequestError(
            'the body of a reconcile is empty or {"start_index": N}, N a whole number from 0',
            field="start_index",
        )
    return value


@app.exception_handler(BatchRequestError)
def refuse_request(error: BatchRequestError) -> Response[Mapping[str, object]]:
    logger.info("request refused", status_code=error.status_code, reason=error.message, field=error.field)
    count("RequestsRefused")
    retry_after = getattr(error, "retry_after_seconds", None)
    return Response(
        status_code=error.status_code,
        content_type=content_types.APPLICATION_JSON,
        body=error.to_body(),
        headers={"Retry-After": str(retry_after)} if retry_after is not None else None,
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    return app.resolve(event, context)
