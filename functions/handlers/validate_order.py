"""Validate order: checks the Map item's order and claims its order ID for this batch item."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parser import parse

from handlers.dependencies import order_records
from handlers.idempotency import IdempotentStep
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from order_processing.models import MapItem, OrderState, Outcome
from order_processing.steps import as_seen_by, rejection, validate_and_claim
from order_processing.validation import check_order

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "validate_order"
OUTCOME_METRICS = {
    Outcome.VALID: "OrdersValidated",
    Outcome.REJECTED: "OrdersRejected",
    Outcome.DUPLICATE: "OrdersDuplicate",
}


def validate(order_state: dict[str, Any]) -> dict[str, Any]:
    item = MapItem.model_validate(order_state)
    log_task_body(STEP, order_state.get("order_id"))
    return validate_and_claim(item, order_records()).to_event()


validate_once = IdempotentStep(validate)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    item = parse(event=event, model=MapItem)
    check = check_order(item.order, item.source_format, item.item_index)
    if check.order_id is None:
        # Without a usable ID there is no key to claim or to be idempotent on: report and move on.
        state = rejection(item, check)
    else:
        payload = item.model_dump(mode="json") | {
            "order_id": check.order_id,
            "order": check.content(item.order),
        }
        stored = OrderState.model_validate(validate_once(context, order_state=payload))
        state = as_seen_by(stored, item, check, order_records())
    count_outcome(OUTCOME_METRICS, state)
    log_finished(STEP, state)
    return state.to_event()
