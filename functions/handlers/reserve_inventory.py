"""Reserve inventory: one conditional transaction reserves every line of the order, or none."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from handlers.environment import IdempotencyEnvironment, InventoryTablesEnvironment, OrdersTableEnvironment
from handlers.observability import logger, metrics, tracer
from handlers.order_step import run_forward_step
from handlers.stores import inventory
from order_processing.contract import RESERVE_INVENTORY_FUNCTION, STEP_LOG_NAMES
from order_processing.models import OrderState, Outcome, PlacedOrderState
from order_processing.steps import reserve_inventory

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from order_processing.json_types import JsonObject


class Environment(IdempotencyEnvironment, InventoryTablesEnvironment, OrdersTableEnvironment):
    function: ClassVar[str] = RESERVE_INVENTORY_FUNCTION


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()

STEP = STEP_LOG_NAMES[RESERVE_INVENTORY_FUNCTION]
OUTCOME_METRICS = {
    Outcome.RESERVED: "InventoryReserved",
    Outcome.REJECTED: "OrdersUnknownSku",
    Outcome.FAILED: "OrdersOutOfStock",
}


def reserve(state: PlacedOrderState, environment: Environment) -> OrderState:
    return reserve_inventory(state, inventory(environment, orders_table_name=environment.orders_table_name))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: JsonObject, context: LambdaContext) -> JsonObject:
    return run_forward_step(event, context, STEP, reserve, Environment.load(), OUTCOME_METRICS)
