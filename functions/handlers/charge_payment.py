"""Charge payment: writes the order's `charge` ledger entry, once per order ID."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from handlers.environment import IdempotencyEnvironment, OrdersTableEnvironment, PaymentsTableEnvironment
from handlers.observability import logger, metrics, tracer
from handlers.order_step import run_forward_step
from handlers.stores import payment_ledger
from order_processing.contract import CHARGE_PAYMENT_FUNCTION, STEP_LOG_NAMES
from order_processing.models import OrderState, Outcome, PlacedOrderState
from order_processing.steps import charge_payment

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from order_processing.json_types import JsonObject


class Environment(IdempotencyEnvironment, PaymentsTableEnvironment, OrdersTableEnvironment):
    function: ClassVar[str] = CHARGE_PAYMENT_FUNCTION

    max_charge_amount: Decimal = Field(ge=0, alias="MAX_CHARGE_AMOUNT")


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

STEP = STEP_LOG_NAMES[CHARGE_PAYMENT_FUNCTION]
OUTCOME_METRICS = {
    Outcome.CHARGED: "PaymentsCharged",
    Outcome.FAILED: "PaymentsDeclined",
}


def charge(state: PlacedOrderState, environment: Environment) -> OrderState:
    ledger = payment_ledger(environment, orders_table_name=environment.orders_table_name)
    return charge_payment(state, ledger, environment.max_charge_amount)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    return run_forward_step(event, context, STEP, charge, Environment.load(), OUTCOME_METRICS)
