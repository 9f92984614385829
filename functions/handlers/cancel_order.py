"""Cancel order (compensation): records the final FAILED/REJECTED status, releases stock, refunds.

Safe to run any number of times: every write is conditional. An item whose order ID is held by
another batch item, or whose order already succeeded, is reported without touching anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parser import parse

from handlers.dependencies import inventory, order_records, payment_ledger
from handlers.idempotency import IdempotentStep
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from order_processing.models import CancelRequest, OrderState, Outcome
from order_processing.steps import compensate, plan_cancellation, settled_elsewhere

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "cancel_order"
OUTCOME_METRICS = {
    Outcome.FAILED: "OrdersFailed",
    Outcome.REJECTED: "OrdersRejected",
    Outcome.DUPLICATE: "OrdersDuplicate",
    Outcome.SUCCEEDED: "CancellationsOfSucceededOrders",
}


def cancel(order_state: dict[str, Any]) -> dict[str, Any]:
    plan = plan_cancellation(CancelRequest.model_validate(order_state))
    log_task_body(STEP, plan.order_id)
    return compensate(plan, order_records(), inventory(), payment_ledger()).to_event()


cancel_once = IdempotentStep(cancel)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    plan = plan_cancellation(parse(event=event, model=CancelRequest))
    # Checked outside the idempotent body: an item that does not hold the order ID must not leave
    # an idempotency record under that ID, or the holder's own compensation would be refused.
    state = settled_elsewhere(plan, order_records())
    if state is None:
        state = OrderState.model_validate(cancel_once(context, order_state=plan.idempotency_payload()))
    count_outcome(OUTCOME_METRICS, state)
    log_finished(STEP, state)
    return state.to_event()
