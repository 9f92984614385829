"""Cancel order (compensation): records the final FAILED/REJECTED status, releases stock, refunds.

Safe to run any number of times: every write is conditional. An item whose order ID is held by
another batch item, or whose order already succeeded, is reported without touching anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from aws_lambda_powertools.utilities.parser import parse

from handlers.environment import AllStoresEnvironment, IdempotencyEnvironment
from handlers.idempotency import ORDER_STEP, run_once
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from handlers.stores import inventory, order_records, payment_ledger
from order_processing.contract import CANCEL_ORDER_FUNCTION, STEP_LOG_NAMES
from order_processing.models import CancelRequest, OrderState, Outcome
from order_processing.steps import compensate, plan_cancellation, settled_elsewhere

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from order_processing.json_types import JsonObject


class Environment(IdempotencyEnvironment, AllStoresEnvironment):
    function: ClassVar[str] = CANCEL_ORDER_FUNCTION


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

STEP = STEP_LOG_NAMES[CANCEL_ORDER_FUNCTION]
OUTCOME_METRICS = {
    Outcome.FAILED: "OrdersFailed",
    Outcome.REJECTED: "OrdersRejected",
    Outcome.DUPLICATE: "OrdersDuplicate",
    Outcome.SUCCEEDED: "CancellationsOfSucceededOrders",
}


def cancel(order_state: Mapping[str, object], environment: Environment) -> JsonObject:
    plan = plan_cancellation(CancelRequest.model_validate(order_state))
    log_task_body(STEP, plan.order_id)
    stores = order_records(environment), inventory(environment), payment_ledger(environment)
    return compensate(plan, *stores).to_event()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    environment = Environment.load()
    plan = plan_cancellation(parse(event=event, model=CancelRequest))
    # Checked outside the idempotent body: an item that does not hold the order ID must not leave
    # an idempotency record under that ID, or the holder's own compensation would be refused.
    state = settled_elsewhere(plan, order_records(environment))
    if state is None:
        cancelled = run_once(
            cancel,
            ORDER_STEP,
            plan.idempotency_payload(),
            idempotency=environment,
            context=context,
            environment=environment,
        )
        state = OrderState.model_validate(cancelled)
    count_outcome(OUTCOME_METRICS, state)
    log_finished(STEP, state)
    return state.to_event()
