"""What reserve, charge and confirm do around their bodies, written once: they differ only in the body.

Each handler keeps its own Powertools decorators and its idempotent body function (whose name is part of
the idempotency key), and hands both to `run_forward_step`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parser import parse

from handlers.idempotency import ORDER_STEP, Body, run_once
from handlers.observability import count_outcome, log_finished
from order_processing.models import OrderState, Outcome, PlacedOrderState

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.environment import IdempotencyEnvironment


def run_forward_step(
    event: dict[str, Any],
    context: LambdaContext,
    *,
    step: str,
    body: Body,
    environment: IdempotencyEnvironment,
    outcome_metrics: dict[Outcome, str],
) -> dict[str, Any]:
    """Parse the placed order, run ``body(order_state=..., environment=...)`` at most once per order ID,
    then count and log where the order ended up (a replay included) and return it to the state machine."""
    state = parse(event=event, model=PlacedOrderState)
    result = OrderState.model_validate(
        run_once(
            body,
            ORDER_STEP,
            state.to_event(),
            idempotency=environment,
            context=context,
            environment=environment,
        )
    )
    count_outcome(outcome_metrics, result)
    log_finished(step, result)
    return result.to_event()
