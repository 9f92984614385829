"""The Powertools logger, tracer and metrics every function uses, set up once per process.

Service name and metrics namespace come from POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE, which the template sets for every function.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from order_processing.contract import TASK_BODY_RAN
from order_processing.models import OrderState, Outcome

logger = Logger()
tracer = Tracer()
metrics = Metrics()


def log_task_body(step: str, order_id: str | None) -> None:
    """The one line each idempotent body logs: the audit counts these to tell runs from replays."""
    logger.info(TASK_BODY_RAN, extra={"step": step, "order_id": order_id})


def count(metric_name: str, value: float = 1) -> None:
    metrics.add_metric(name=metric_name, unit=MetricUnit.Count, value=value)


def log_finished(step: str, state: OrderState) -> None:
    """One line per invocation (replays included) with where the order ended up."""
    logger.info(
        "order step finished",
        extra={
            "step": step,
            "order_id": state.order_id,
            "batch_id": state.batch_id,
            "item_index": state.item_index,
            "outcome": state.outcome.value,
            "code": state.code.value if state.code else None,
        },
    )


def count_outcome(metric_names: dict[Outcome, str], state: OrderState) -> None:
    metric_name = metric_names.get(state.outcome)
    if metric_name:
        count(metric_name)
