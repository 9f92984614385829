"""Validate order: checks the Map item's order and claims its order ID for this batch item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from aws_lambda_powertools.utilities.parser import parse

from handlers.environment import IdempotencyEnvironment, OrdersTableEnvironment
from handlers.idempotency import ORDER_STEP, run_once
from handlers.observability import count_outcome, log_finished, log_task_body, logger, metrics, tracer
from handlers.stores import order_records
from order_processing.contract import STEP_LOG_NAMES, VALIDATE_ORDER_FUNCTION
from order_processing.models import MapItem, OrderState, Outcome
from order_processing.steps import as_seen_by, rejection, validate_and_claim
from order_processing.validation import check_order

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from order_processing.json_types import JsonObject


class Environment(IdempotencyEnvironment, OrdersTableEnvironment):
    function: ClassVar[str] = VALIDATE_ORDER_FUNCTION


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

STEP = STEP_LOG_NAMES[VALIDATE_ORDER_FUNCTION]
OUTCOME_METRICS = {
    Outcome.VALID: "OrdersValidated",
    Outcome.REJECTED: "OrdersRejected",
    Outcome.DUPLICATE: "OrdersDuplicate",
}


def validate(order_state: Mapping[str, object], environment: Environment) -> JsonObject:
    item = MapItem.model_validate(order_state)
    order_id = order_state.get("order_id")
    log_task_body(STEP, order_id if isinstance(order_id, str) else None)
    return validate_and_claim(item, order_records(environment)).to_event()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    environment = Environment.load()
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
        stored = run_once(
            validate, ORDER_STEP, payload, idempotency=environment, context=context, environment=environment
        )
        state = as_seen_by(OrderState.model_validate(stored), item, check, order_records(environment))
    count_outcome(OUTCOME_METRICS, state)
    log_finished(STEP, state)
    return state.to_event()
