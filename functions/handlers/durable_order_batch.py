"""The batch workflow as a Lambda durable function: a batch in, the state machine's batch summary out.

The event is the state machine's inline execution input, ``{"batch_id", "orders": [...]}``; the
orchestration is in ``handlers.durable_pipeline``. Start it with a durable execution name equal to the
batch ID, so a second start of the same batch is the same execution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from aws_durable_execution_sdk_python import durable_execution
from aws_durable_execution_sdk_python.config import JitterStrategy
from pydantic import BaseModel, ConfigDict, Field, field_validator

from handlers.durable_pipeline import OrderFunctions, Retrier, RetryPolicy, run_batch
from handlers.environment import FunctionEnvironment, Required
from handlers.observability import logger
from order_processing.batches import validate_batch_id
from order_processing.contract import DURABLE_ORDER_BATCH_FUNCTION
from order_processing.summary import BatchSummary, StoredBatchSummary, batch_totals

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python import DurableContext


class Environment(FunctionEnvironment):
    """The functions to invoke, the Map's concurrency and the retriers: the state machine's parameters.

    The numbers default to the template's parameter defaults; the template always sets them.
    """

    function: ClassVar[str] = DURABLE_ORDER_BATCH_FUNCTION

    validate_order_function_name: Required = Field(alias="VALIDATE_ORDER_FUNCTION_NAME")
    reserve_inventory_function_name: Required = Field(alias="RESERVE_INVENTORY_FUNCTION_NAME")
    charge_payment_function_name: Required = Field(alias="CHARGE_PAYMENT_FUNCTION_NAME")
    confirm_order_function_name: Required = Field(alias="CONFIRM_ORDER_FUNCTION_NAME")
    cancel_order_function_name: Required = Field(alias="CANCEL_ORDER_FUNCTION_NAME")
    map_max_concurrency: int = Field(default=8, ge=1, alias="MAP_MAX_CONCURRENCY")
    deferred_orders_max_concurrency: int = Field(default=2, ge=1, alias="DEFERRED_ORDERS_MAX_CONCURRENCY")
    # Off runs the design before the second pass (an order whose 429 retrier ran out is compensated at
    # once): the benchmark's comparison, not a setting the template offers.
    second_pass: bool = Field(default=True, alias="SECOND_PASS")

    throttle_retry_interval_seconds: int = Field(default=1, ge=1, alias="THROTTLE_RETRY_INTERVAL_SECONDS")
    throttle_retry_backoff_rate: float = Field(default=2, ge=1, alias="THROTTLE_RETRY_BACKOFF_RATE")
    throttle_retry_max_delay_seconds: int = Field(default=8, ge=1, alias="THROTTLE_RETRY_MAX_DELAY_SECONDS")
    throttle_retry_max_attempts: int = Field(default=20, ge=0, alias="THROTTLE_RETRY_MAX_ATTEMPTS")
    lambda_service_retry_interval_seconds: int = Field(
        default=2, ge=1, alias="LAMBDA_SERVICE_RETRY_INTERVAL_SECONDS"
    )
    lambda_service_retry_backoff_rate: float = Field(
        default=2, ge=1, alias="LAMBDA_SERVICE_RETRY_BACKOFF_RATE"
    )
    lambda_service_retry_max_attempts: int = Field(default=6, ge=0, alias="LAMBDA_SERVICE_RETRY_MAX_ATTEMPTS")
    in_progress_retry_interval_seconds: int = Field(
        default=3, ge=1, alias="IN_PROGRESS_RETRY_INTERVAL_SECONDS"
    )
    in_progress_retry_backoff_rate: float = Field(default=2, ge=1, alias="IN_PROGRESS_RETRY_BACKOFF_RATE")
    in_progress_retry_max_attempts: int = Field(default=4, ge=0, alias="IN_PROGRESS_RETRY_MAX_ATTEMPTS")
    task_failed_retry_interval_seconds: int = Field(
        default=2, ge=1, alias="TASK_FAILED_RETRY_INTERVAL_SECONDS"
    )
    task_failed_retry_backoff_rate: float = Field(default=2, ge=1, alias="TASK_FAILED_RETRY_BACKOFF_RATE")
    task_failed_retry_max_delay_seconds: int = Field(
        default=10, ge=1, alias="TASK_FAILED_RETRY_MAX_DELAY_SECONDS"
    )
    task_failed_retry_max_attempts: int = Field(default=3, ge=0, alias="TASK_FAILED_RETRY_MAX_ATTEMPTS")

    def order_functions(self) -> OrderFunctions:
        return OrderFunctions(
            validate=self.validate_order_function_name,
            reserve=self.reserve_inventory_function_name,
            charge=self.charge_payment_function_name,
            confirm=self.confirm_order_function_name,
            cancel=self.cancel_order_function_name,
        )

    def retry_policy(self) -> RetryPolicy:
        """The state machine's retriers, jitter where it has JitterStrategy FULL."""
        return RetryPolicy(
            throttle=Retrier(
                "throttle",
                self.throttle_retry_interval_seconds,
                self.throttle_retry_backoff_rate,
                self.throttle_retry_max_attempts,
                self.throttle_retry_max_delay_seconds,
                JitterStrategy.FULL,
            ),
            lambda_service=Retrier(
                "lambda_service",
                self.lambda_service_retry_interval_seconds,
                self.lambda_service_retry_backoff_rate,
                self.lambda_service_retry_max_attempts,
            ),
            in_progress=Retrier(
                "in_progress",
                self.in_progress_retry_interval_seconds,
                self.in_progress_retry_backoff_rate,
                self.in_progress_retry_max_attempts,
            ),
            task_failed=Retrier(
                "task_failed",
                self.task_failed_retry_interval_seconds,
                self.task_failed_retry_backoff_rate,
                self.task_failed_retry_max_attempts,
                self.task_failed_retry_max_delay_seconds,
                JitterStrategy.FULL,
            ),
        )


# Read at import, the cold start: a missing or malformed variable fails the init, naming it.
Environment.load()


class BatchInput(BaseModel):
    """The state machine's inline execution input; S3 sources are not read by this variant."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str
    orders: list[object] = Field(min_length=1)

    @field_validator("batch_id", mode="before")
    @classmethod
    def _batch_id(cls, value: object) -> str:
        return validate_batch_id(value)


@durable_execution
def run(event: Mapping[str, object], context: DurableContext) -> BatchSummary | StoredBatchSummary:
    environment = Environment.load()
    batch = BatchInput.model_validate(event)
    summary = run_batch(
        context,
        batch.batch_id,
        batch.orders,
        environment.order_functions(),
        environment.retry_policy(),
        environment.map_max_concurrency,
        environment.deferred_orders_max_concurrency,
        second_pass=environment.second_pass,
    )
    # Only the invocation that completes the batch gets here: earlier ones suspend inside run_batch.
    logger.info(
        "batch summarized",
        extra={"batch_id": batch.batch_id, **batch_totals(summary)},
    )
    return summary


lambda_handler = logger.inject_lambda_context(clear_state=True)(run)
