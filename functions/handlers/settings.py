"""Every function's configuration, read from the environment and validated once per cold start.

A missing or malformed variable fails the cold start with the variable's name, instead of failing
later inside an order.
"""

from __future__ import annotations

import os
from decimal import Decimal
from functools import lru_cache

from pydantic import BaseModel, Field, ValidationError


class Settings(BaseModel):
    inventory_table_name: str = Field(default="", alias="INVENTORY_TABLE_NAME")
    orders_table_name: str = Field(default="", alias="ORDERS_TABLE_NAME")
    reservations_table_name: str = Field(default="", alias="RESERVATIONS_TABLE_NAME")
    payments_table_name: str = Field(default="", alias="PAYMENTS_TABLE_NAME")
    idempotency_table_name: str = Field(default="", alias="IDEMPOTENCY_TABLE_NAME")
    idempotency_expiry_seconds: int = Field(default=3600, ge=60, alias="IDEMPOTENCY_EXPIRY_SECONDS")
    max_charge_amount: Decimal = Field(default=Decimal("10000.00"), ge=0, alias="MAX_CHARGE_AMOUNT")
    state_machine_arn: str = Field(default="", alias="STATE_MACHINE_ARN")
    results_bucket_name: str = Field(default="", alias="RESULTS_BUCKET_NAME")
    max_inline_batch_bytes: int = Field(default=262_144, gt=0, alias="MAX_INLINE_BATCH_BYTES")
    max_inline_orders: int = Field(default=500, gt=0, alias="MAX_INLINE_ORDERS")
    # How long a task a stopped batch started may still run: reconcile waits this long after the stop.
    # Without the template's value, Lambda's longest timeout is the only safe assumption.
    task_function_timeout_seconds: int = Field(
        default=900, ge=1, le=900, alias="TASK_FUNCTION_TIMEOUT_SECONDS"
    )
    # Control for the fault-matrix tests only: makes effects unkeyed to show what the keys prevent.
    effect_keys_disabled: bool = Field(default=False, alias="EFFECT_KEYS_DISABLED")


class ConfigurationError(RuntimeError):
    """Raised at cold start when the function's environment is unusable."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings.model_validate(dict(os.environ))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigurationError(f"invalid function configuration: {problems}") from error


def require(value: str, variable: str) -> str:
    """Return a setting this function cannot work without, or fail naming the variable."""
    if not value:
        raise ConfigurationError(f"environment variable {variable} is required by this function")
    return value
