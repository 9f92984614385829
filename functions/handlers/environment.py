"""Each function's configuration: a typed model of the environment variables that function reads.

Every handler module declares an ``Environment`` model naming only the variables its function needs and
loads it when the module is imported, so a missing or malformed variable fails the cold start with the
variable's and the function's names instead of failing later inside an order. The model is read once
per execution environment and cached.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Annotated, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

# A name or ARN the function cannot work without: never empty.
Required = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class ConfigurationError(RuntimeError):
    """Raised at cold start when the function's environment is unusable."""


class FunctionEnvironment(BaseModel):
    """The base of every function's model; `function` is its logical ID in template.yaml."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    function: ClassVar[str]

    @classmethod
    def load(cls) -> Self:
        return _load(cls)


EnvironmentModel = TypeVar("EnvironmentModel", bound=FunctionEnvironment)


@cache
def _load(model: type[EnvironmentModel]) -> EnvironmentModel:
    try:
        return model.model_validate(dict(os.environ))
    except ValidationError as error:
        problems = "; ".join(_describe(problem) for problem in error.errors())
        raise ConfigurationError(f"{model.function} cannot start: {problems}") from error


def _describe(problem: ErrorDetails) -> str:
    variable = ".".join(map(str, problem["loc"]))
    if problem["type"] == "missing":
        return f"environment variable {variable} is required"
    return f"environment variable {variable} is invalid ({problem['msg']}, got {problem['input']!r})"


def forget_loaded_environments() -> None:
    """Read the environment again on the next load, as a new execution environment would."""
    _load.cache_clear()


class IdempotencyEnvironment(FunctionEnvironment):
    """Powertools idempotency: the table and how long a record lives (the template always sets both)."""

    idempotency_table_name: Required = Field(alias="IDEMPOTENCY_TABLE_NAME")
    idempotency_expiry_seconds: int = Field(ge=60, alias="IDEMPOTENCY_EXPIRY_SECONDS")


class StoresEnvironment(FunctionEnvironment):
    # Control for the fault-matrix tests only: makes effects unkeyed to show what the keys prevent.
    effect_keys_disabled: bool = Field(default=False, alias="EFFECT_KEYS_DISABLED")


class OrdersTableEnvironment(StoresEnvironment):
    orders_table_name: Required = Field(alias="ORDERS_TABLE_NAME")


class InventoryTablesEnvironment(StoresEnvironment):
    inventory_table_name: Required = Field(alias="INVENTORY_TABLE_NAME")
    reservations_table_name: Required = Field(alias="RESERVATIONS_TABLE_NAME")


class PaymentsTableEnvironment(StoresEnvironment):
    payments_table_name: Required = Field(alias="PAYMENTS_TABLE_NAME")


class AllStoresEnvironment(OrdersTableEnvironment, InventoryTablesEnvironment, PaymentsTableEnvironment):
    """The four effect tables: what compensation and reconcile touch."""
