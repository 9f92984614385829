"""Confirm order: moves the order record to SUCCEEDED, only for the batch item that claimed it."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from handlers.environment import IdempotencyEnvironment, OrdersTableEnvironment
from handlers.observability import logger, metrics, tracer
from handlers.order_step import run_forward_step
from handlers.stores import order_records
from order_processing.contract import CONFIRM_ORDER_FUNCTION, STEP_LOG_NAMES
from order_processing.models import OrderState, Outcome, PlacedOrderState
from order_processing.steps import confirm_order

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from order_processing.json_types import JsonObject


class Environment(IdempotencyEnvironment, OrdersTableEnvironment):
    function: ClassVar[str] = CONFIRM_ORDER_FUNCTION


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

STEP = STEP_LOG_NAMES[CONFIRM_ORDER_FUNCTION]
OUTCOME_METRICS = {Outcome.SUCCEEDED: "OrdersSucceeded"}


def confirm(state: PlacedOrderState, environment: Environment) -> OrderState:
    return confirm_order(state, order_records(environment))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    return run_forward_step(event, context, STEP, confirm, Environment.load(), OUTCOME_METRICS)
