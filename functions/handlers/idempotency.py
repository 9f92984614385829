"""Powertools idempotency for a step's body, keyed on the order ID and validated on the order content.

The persistence layer needs a DynamoDB client, and none may be created at import time, so the
decorated body is built on the first call and kept for the life of the execution environment.
POWERTOOLS_IDEMPOTENCY_DISABLED=1 (Powertools' own switch) still works: the decorated function
checks it on every call.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from handlers.dependencies import dynamodb_client
from handlers.settings import get_settings, require

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

StepBody = Callable[..., dict[str, Any]]

IDEMPOTENCY_KEY_PATH = "order_id"
PAYLOAD_VALIDATION_PATH = "order"
DATA_KEYWORD_ARGUMENT = "order_state"

_steps: weakref.WeakSet[IdempotentStep] = weakref.WeakSet()


class IdempotentStep:
    """Runs `body(order_state=...)` at most once per order ID while the record lives.

    The same order ID with different `order` content raises IdempotencyValidationError, a concurrent
    duplicate raises IdempotencyAlreadyInProgressError, and an exception in the body deletes the
    record so a retry runs again. All three propagate to the state machine.
    """

    def __init__(self, body: StepBody) -> None:
        self._body = body
        self._built: tuple[IdempotencyConfig, StepBody] | None = None
        self._lock = threading.Lock()
        _steps.add(self)

    def __call__(self, context: LambdaContext, order_state: dict[str, Any]) -> dict[str, Any]:
        config, run = self._build()
        # An INPROGRESS record then expires when this invocation's time runs out, not after the full expiry.
        config.register_lambda_context(context)
        result: dict[str, Any] = run(**{DATA_KEYWORD_ARGUMENT: order_state})
        return result

    def _build(self) -> tuple[IdempotencyConfig, StepBody]:
        with self._lock:
            if self._built is None:
                settings = get_settings()
                config = IdempotencyConfig(
                    event_key_jmespath=IDEMPOTENCY_KEY_PATH,
                    payload_validation_jmespath=PAYLOAD_VALIDATION_PATH,
                    raise_on_no_idempotency_key=True,
                    expires_after_seconds=settings.idempotency_expiry_seconds,
                )
                persistence = DynamoDBPersistenceLayer(
                    table_name=require(settings.idempotency_table_name, "IDEMPOTENCY_TABLE_NAME"),
                    boto3_client=dynamodb_client(),
                )
                run = idempotent_function(
                    self._body,
                    data_keyword_argument=DATA_KEYWORD_ARGUMENT,
                    persistence_store=persistence,
                    config=config,
                )
                self._built = (config, run)
            return self._built

    def forget(self) -> None:
        """Drop the built layer so the next call builds it again (tests switch clients between cases)."""
        with self._lock:
            self._built = None


def forget_built_steps() -> None:
    for step in list(_steps):
        step.forget()
