"""The state machine's last step: per-order outcomes in, the batch summary out.

An S3 batch calls it once before, with ``"action": "set_aside_deferred_orders"``: the orders its first pass
deferred are written to S3 for the second pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from handlers import clients
from handlers.environment import IdempotencyEnvironment, Required
from handlers.idempotency import BATCH_SUMMARY, DEFERRED_ORDERS, run_once
from handlers.observability import count, logger, metrics, tracer
from order_processing.contract import SUMMARIZE_BATCH_FUNCTION
from order_processing.summary import (
    BatchSummary,
    SetAsideOrders,
    StoredBatchSummary,
    batch_totals,
    set_aside_deferred_orders,
    summarize_batch,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


class Environment(IdempotencyEnvironment):
    function: ClassVar[str] = SUMMARIZE_BATCH_FUNCTION

    results_bucket_name: Required = Field(alias="RESULTS_BUCKET_NAME")


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

SET_ASIDE_DEFERRED_ORDERS = "set_aside_deferred_orders"

# The batch totals, under names of their own: the per-order counts belong to the task functions.
BATCH_TOTAL_METRICS = {
    "succeeded": "BatchOrdersSucceeded",
    "failed": "BatchOrdersFailed",
    "rejected": "BatchOrdersRejected",
    "duplicate": "BatchOrdersDuplicate",
}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(
    event: Mapping[str, object], context: LambdaContext
) -> SetAsideOrders | BatchSummary | StoredBatchSummary:
    environment = Environment.load()
    logger.append_keys(batch_id=event.get("batch_id"))
    action = event.get("action")
    if action == SET_ASIDE_DEFERRED_ORDERS:
        request = {key: value for key, value in event.items() if key != "action"}
        deferred = run_once(
            set_aside_deferred_orders,
            DEFERRED_ORDERS,
            request,
            idempotency=environment,
            context=context,
            results_bucket=environment.results_bucket_name,
            s3_client=clients.s3(),
        )
        logger.info("deferred orders set aside", count=deferred["count"], key=deferred["Key"])
        return deferred
    if action is not None:
        raise ValueError(f"unknown action {action!r}; the only action is {SET_ASIDE_DEFERRED_ORDERS!r}")
    summary = run_once(
        summarize_batch,
        BATCH_SUMMARY,
        event,
        idempotency=environment,
        context=context,
        results_bucket=environment.results_bucket_name,
        s3_client=clients.s3(),
        sfn_client=clients.stepfunctions(),
    )
    logger.info(
        "batch summarized",
        total=summary["total"],
        succeeded=summary["succeeded"],
        failed=summary["failed"],
        rejected=summary["rejected"],
        duplicate=summary["duplicate"],
        second_pass=summary["second_pass"],
    )
    totals = batch_totals(summary)
    for count_field, metric_name in BATCH_TOTAL_METRICS.items():
        count(metric_name, totals[count_field])
    return summary
