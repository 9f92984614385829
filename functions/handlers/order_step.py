"""What reserve, charge and confirm do around their bodies, written once: they differ only in the body.

Each handler keeps its own Powertools decorators and a body function that takes the placed order and
returns where it ended up; `run_forward_step` runs that body at most once per order ID.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from aws_lambda_powertools.utilities.parser import parse

from handlers.idempotency import ORDER_STEP, run_once
from handlers.observability import count_outcome, log_finished, log_task_body
from order_processing.models import OrderState, Outcome, PlacedOrderState

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.environment import IdempotencyEnvironment
    from order_processing.json_types import JsonObject

# Each function's body takes that function's own environment.
EnvironmentT = TypeVar("EnvironmentT", bound="IdempotencyEnvironment")


def run_forward_step(
    event: JsonObject,
    context: LambdaContext,
    step: str,
    body: Callable[[PlacedOrderState, EnvironmentT], OrderState],
    environment: EnvironmentT,
    outcome_metrics: dict[Outcome, str],
) -> JsonObject:
    """Parse the placed order, run ``body(state, environment)`` at most once per order ID (logging the
    task-body line the audit counts), then count and log where the order ended up, a replay included."""

    def run_body(order_state: Mapping[str, object], environment: EnvironmentT) -> JsonObject:
        state = PlacedOrderState.model_validate(order_state)
        log_task_body(step, state.order_id)
        return body(state, environment).to_event()

    # Powertools keys each record by the idempotent function's module and name: the body's, as before.
    run_body.__module__, run_body.__qualname__ = body.__module__, body.__qualname__
    state = parse(event=event, model=PlacedOrderState)
    stored = run_once(
        run_body,
        ORDER_STEP,
        state.to_event(),
        idempotency=environment,
        context=context,
        environment=environment,
    )
    result = OrderState.model_validate(stored)
    count_outcome(outcome_metrics, result)
    log_finished(step, result)
    return result.to_event()
