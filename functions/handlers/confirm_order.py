"""Confirm order: moves the order record to SUCCEEDED, only for the batch item that claimed it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parser import parse

from handlers.dependencies import order_records
from handlers.idempotency import IdempotentStep
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from order_processing.models import OrderState, Outcome, PlacedOrderState
from order_processing.steps import confirm_order

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "confirm_order"
OUTCOME_METRICS = {Outcome.SUCCEEDED: "OrdersSucceeded"}


def confirm(order_state: dict[str, Any]) -> dict[str, Any]:
    state = PlacedOrderState.model_validate(order_state)
    log_task_body(STEP, state.order_id)
    return confirm_order(state, order_records()).to_event()


confirm_once = IdempotentStep(confirm)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state = parse(event=event, model=PlacedOrderState)
    result = OrderState.model_validate(confirm_once(context, order_state=state.to_event()))
    count_outcome(OUTCOME_METRICS, result)
    log_finished(STEP, result)
    return result.to_event()
