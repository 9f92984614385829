"""Charge payment: writes the order's `charge` ledger entry, once per order ID."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parser import parse

from handlers.dependencies import payment_ledger
from handlers.idempotency import IdempotentStep
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from handlers.settings import get_settings
from order_processing.models import OrderState, Outcome, PlacedOrderState
from order_processing.steps import charge_payment

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "charge_payment"
OUTCOME_METRICS = {
    Outcome.CHARGED: "PaymentsCharged",
    Outcome.FAILED: "PaymentsDeclined",
}


def charge(order_state: dict[str, Any]) -> dict[str, Any]:
    state = PlacedOrderState.model_validate(order_state)
    log_task_body(STEP, state.order_id)
    return charge_payment(state, payment_ledger(), get_settings().max_charge_amount).to_event()


charge_once = IdempotentStep(charge)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state = parse(event=event, model=PlacedOrderState)
    result = OrderState.model_validate(charge_once(context, order_state=state.to_event()))
    count_outcome(OUTCOME_METRICS, result)
    log_finished(STEP, result)
    return result.to_event()
