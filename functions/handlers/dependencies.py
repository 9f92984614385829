"""The stores each handler hands to the domain, built from settings on first use.

One DynamoDB client per execution environment, created lazily (never at import) and shared by
the stores and the idempotency layer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from handlers.settings import get_settings, require
from order_processing.inventory import InventoryStore
from order_processing.orders import OrderRecordStore
from order_processing.payments import PaymentLedger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

# Standard mode retries throttles and 5xx with backoff; the state machine retries what is left.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})


@lru_cache(maxsize=1)
def dynamodb_client() -> DynamoDBClient:
    return boto3.client("dynamodb", config=_CLIENT_CONFIG)


def order_records() -> OrderRecordStore:
    settings = get_settings()
    return OrderRecordStore(
        require(settings.orders_table_name, "ORDERS_TABLE_NAME"),
        dynamodb_client(),
        keyed=not settings.effect_keys_disabled,
    )


def inventory() -> InventoryStore:
    settings = get_settings()
    return InventoryStore(
        require(settings.inventory_table_name, "INVENTORY_TABLE_NAME"),
        require(settings.reservations_table_name, "RESERVATIONS_TABLE_NAME"),
        dynamodb_client(),
        keyed=not settings.effect_keys_disabled,
    )


def payment_ledger() -> PaymentLedger:
    settings = get_settings()
    return PaymentLedger(
        require(settings.payments_table_name, "PAYMENTS_TABLE_NAME"),
        dynamodb_client(),
        keyed=not settings.effect_keys_disabled,
    )
