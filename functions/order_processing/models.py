"""The per-order contract: the order, its lines, and the order state every step returns.

Field rules live here as validators so that the Map item, the normalised order and the state
passed between steps all go through one definition. Error messages are written for people: the
validation module joins them into the order's `reason`.
"""

from __future__ import annotations

import hashlib
import json
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from order_processing.contract import ORDER_ID_PATTERN, Code, Outcome
from order_processing.json_types import JsonObject

SKU_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CURRENCY_PATTERN = re.compile(r"[A-Za-z]{3}")
DIGITS_PATTERN = re.compile(r"[0-9]+")
MAX_CUSTOMER_ID_LENGTH = 128
# One DynamoDB transaction holds 100 actions and a reservation takes two per line.
MAX_ORDER_LINES = 50
CENT = Decimal("0.01")
# Bounds keep amounts exact within DynamoDB's 38 digits and reasons short.
MAX_UNIT_PRICE = Decimal("1000000000000")
MAX_PRICE_DECIMALS = 6

SourceFormat = Literal["inline", "json", "csv"]


def shown(value: object, limit: int = 40) -> str:
    """A short repr of a rejected value, so a reason stays readable whatever was sent."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _order_id(value: object) -> str:
    if isinstance(value, str) and ORDER_ID_PATTERN.fullmatch(value):
        return value
    raise PydanticCustomError(
        "order_id", "must be 1-64 letters, digits, '_' or '-', got {value}", {"value": shown(value)}
    )


def _customer_id(value: object) -> str:
    if isinstance(value, str) and value.strip() and len(value) <= MAX_CUSTOMER_ID_LENGTH:
        return value
    raise PydanticCustomError(
        "customer_id",
        "must be a non-blank string of at most {limit} characters, got {value}",
        {"limit": MAX_CUSTOMER_ID_LENGTH, "value": shown(value)},
    )


def _currency(value: object) -> str:
    if isinstance(value, str) and CURRENCY_PATTERN.fullmatch(value):
        return value.upper()
    raise PydanticCustomError(
        "currency", "must be a 3-letter ISO 4217 code such as USD, got {value}", {"value": shown(value)}
    )


def _sku(value: object) -> str:
    if isinstance(value, str) and SKU_PATTERN.fullmatch(value):
        return value
    raise PydanticCustomError(
        "sku", "must be 1-64 letters, digits, '.', '_' or '-', got {value}", {"value": shown(value)}
    )


def _quantity(value: object) -> int:
    # bool is an int in Python but never a quantity; CSV sends digits as text.
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and DIGITS_PATTERN.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if number is None or number < 1:
        raise PydanticCustomError(
            "quantity", "must be a whole number of at least 1, got {value}", {"value": shown(value)}
        )
    return number


def _unit_price(value: object) -> Decimal:
    price: Decimal | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        # str() keeps the decimal a person typed (9.99), where Decimal(9.99) would not.
        price = Decimal(str(value))
    elif isinstance(value, str):
        try:
            price = Decimal(value.strip())
        except InvalidOperation:
            price = None
    elif isinstance(value, Decimal):
        price = value
    if price is None or not price.is_finite() or not 0 <= price < MAX_UNIT_PRICE:
        raise PydanticCustomError(
            "unit_price",
            "must be a decimal number from 0 up to (not including) {limit}, got {value}",
            {"limit": decimal_text(MAX_UNIT_PRICE), "value": shown(value)},
        )
    normalised = price.normalize() if price else Decimal(0)
    exponent = normalised.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > MAX_PRICE_DECIMALS:
        raise PydanticCustomError(
            "unit_price",
            "must have at most {places} decimal places, got {value}",
            {"places": MAX_PRICE_DECIMALS, "value": shown(value)},
        )
    return normalised


def decimal_text(value: Decimal) -> str:
    """Plain notation (10, not 1E+1) so equal amounts always serialise alike."""
    return format(value, "f")


OrderId = Annotated[str, BeforeValidator(_order_id)]
CustomerId = Annotated[str, BeforeValidator(_customer_id)]
Currency = Annotated[str, BeforeValidator(_currency)]
Sku = Annotated[str, BeforeValidator(_sku)]
Quantity = Annotated[int, BeforeValidator(_quantity)]
UnitPrice = Annotated[Decimal, BeforeValidator(_unit_price), PlainSerializer(decimal_text, return_type=str)]


class MalformedCsvEntry(str):
    """A CSV `items` entry that is not SKU:QUANTITY:UNIT_PRICE, kept as sent so the reason can quote it."""

    __slots__ = ()


class OrderLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    sku: Sku
    quantity: Quantity
    unit_price: UnitPrice

    @model_validator(mode="before")
    @classmethod
    def _must_be_an_object(cls, value: object) -> object:
        if isinstance(value, MalformedCsvEntry):
            raise PydanticCustomError(
                "line_format", "{value} is not SKU:QUANTITY:UNIT_PRICE", {"value": shown(value)}
            )
        if not isinstance(value, dict):
            raise PydanticCustomError("line_type", "must be an object, got {value}", {"value": shown(value)})
        return value

    @property
    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


class Order(BaseModel):
    """A normalised order: validating it twice gives the same order."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    order_id: OrderId
    customer_id: CustomerId
    currency: Currency
    items: list[OrderLine]

    @field_validator("items")
    @classmethod
    def _lines_fit_one_transaction(cls, items: list[OrderLine]) -> list[OrderLine]:
        if not 1 <= len(items) <= MAX_ORDER_LINES:
            raise PydanticCustomError(
                "line_count",
                "must hold 1 to {limit} lines, got {count}",
                {"limit": MAX_ORDER_LINES, "count": len(items)},
            )
        seen: dict[str, int] = {}
        for index, line in enumerate(items):
            if line.sku in seen:
                # A transaction may touch an item once, and one line per SKU keeps reservations simple.
                raise PydanticCustomError(
                    "repeated_sku",
                    "SKU {sku} appears on lines items[{first}] and items[{again}]; list it once",
                    {"sku": line.sku, "first": seen[line.sku], "again": index},
                )
            seen[line.sku] = index
        return items

    @property
    def total(self) -> Decimal:
        return sum((line.amount for line in self.items), Decimal(0)).quantize(CENT, rounding=ROUND_HALF_UP)

    @property
    def total_text(self) -> str:
        return decimal_text(self.total)

    def as_json(self) -> JsonObject:
        return self.model_dump(mode="json")

    @property
    def content_hash(self) -> str:
        return content_hash(self.as_json())


def content_hash(content: object) -> str:
    """SHA-256 of canonical JSON: the same content hashes alike whatever its key order."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class MapItem(BaseModel):
    """What the state machine's Map hands to Validate order; `order` is whatever the batch held."""

    model_config = ConfigDict(extra="ignore")

    batch_id: str = Field(min_length=1)
    item_index: int = Field(ge=0)
    source_format: SourceFormat = "inline"
    order: object = None


class OrderState(BaseModel):
    """What every step returns and the next step receives whole.

    `order` is the normalised order once validation passed, and the order as sent otherwise.
    Every key is always present (null when unknown): the state machine reads them by path.
    """

    model_config = ConfigDict(extra="ignore")

    batch_id: str
    item_index: int
    order_id: str | None = None
    order: object = None
    total: str | None = None
    outcome: Outcome
    code: Code | None = None
    reason: str | None = None

    def to_event(self) -> JsonObject:
        return self.model_dump(mode="json")

    def finished(self, outcome: Outcome, code: Code | None = None, reason: str | None = None) -> OrderState:
        return self.model_copy(update={"outcome": outcome, "code": code, "reason": reason})


class PlacedOrderState(OrderState):
    """An order state past validation: the ID, the normalised order and the total are known."""

    order_id: str
    order: Order
    total: str

    @classmethod
    def for_valid_order(cls, batch_id: str, item_index: int, order: Order) -> PlacedOrderState:
        return cls(
            batch_id=batch_id,
            item_index=item_index,
            order_id=order.order_id,
            order=order,
            total=order.total_text,
            outcome=Outcome.VALID,
        )


class WorkflowError(BaseModel):
    """What a Step Functions Catch puts at `$.error`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")


class CancelRequest(BaseModel):
    """What Cancel order receives: an order state, or a Map item when validation itself failed.

    `error` is present when a step raised and the state machine caught it.
    """

    model_config = ConfigDict(extra="ignore")

    batch_id: str = Field(min_length=1)
    item_index: int = Field(ge=0)
    source_format: SourceFormat = "inline"
    order_id: str | None = None
    order: object = None
    total: str | None = None
    outcome: Outcome | None = None
    code: str | None = None
    reason: str | None = None
    error: WorkflowError | None = None

    def to_event(self) -> JsonObject:
        return self.model_dump(mode="json", by_alias=True)
