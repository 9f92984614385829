"""The state machine's last step: per-order outcomes in, the batch summary out."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.settings import get_settings, require
from order_processing.summary import summarize_batch

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@lru_cache(maxsize=1)
def _idempotent_summarizer() -> tuple[Callable[..., dict[str, Any]], IdempotencyConfig]:
    """Built on the first invocation: the persistence layer creates its DynamoDB client when constructed."""
    settings = get_settings()
    config = IdempotencyConfig(
        event_key_jmespath="batch_id",
        # The same batch ID summarized from different outcomes is a defect, not a replay.
        payload_validation_jmespath="[results, source, map_result]",
        expires_after_seconds=settings.idempotency_expiry_seconds,
    )
    persistence = DynamoDBPersistenceLayer(
        table_name=require(settings.idempotency_table_name, "IDEMPOTENCY_TABLE_NAME")
    )
    summarizer = idempotent_function(
        summarize_batch, data_keyword_argument="request", persistence_store=persistence, config=config
    )
    return summarizer, config


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    results_bucket = require(get_settings().results_bucket_name, "RESULTS_BUCKET_NAME")
    summarizer, config = _idempotent_summarizer()
    config.register_lambda_context(context)
    logger.append_keys(batch_id=event.get("batch_id"))
    summary = summarizer(request=event, results_bucket=results_bucket)
    logger.info(
        "batch summarized",
        total=summary["total"],
        succeeded=summary["succeeded"],
        failed=summary["failed"],
        rejected=summary["rejected"],
        duplicate=summary["duplicate"],
    )
    for name, count_field in (
        ("OrdersSucceeded", "succeeded"),
        ("OrdersFailed", "failed"),
        ("OrdersRejected", "rejected"),
        ("OrdersDuplicate", "duplicate"),
    ):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=summary[count_field])
    return summary
