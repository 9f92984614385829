"""The stores each handler hands to the domain, built per call from its environment and the shared client."""

from __future__ import annotations

from handlers import clients
from handlers.environment import InventoryTablesEnvironment, OrdersTableEnvironment, PaymentsTableEnvironment
from order_processing.inventory import InventoryStore
from order_processing.orders import OrderRecordStore
from order_processing.payments import PaymentLedger


def order_records(environment: OrdersTableEnvironment) -> OrderRecordStore:
    return OrderRecordStore(
        environment.orders_table_name, clients.dynamodb(), keyed=not environment.effect_keys_disabled
    )


def inventory(
    environment: InventoryTablesEnvironment, *, orders_table_name: str | None = None
) -> InventoryStore:
    """The stock and reservations; with ``orders_table_name`` (what reserves must give) a reservation lands
    only while its order is open."""
    return InventoryStore(
        environment.inventory_table_name,
        environment.reservations_table_name,
        clients.dynamodb(),
        keyed=not environment.effect_keys_disabled,
        orders_table_name=orders_table_name,
    )


def payment_ledger(
    environment: PaymentsTableEnvironment, *, orders_table_name: str | None = None
) -> PaymentLedger:
    """The ledger; with ``orders_table_name`` (what charges must give) a charge lands only while its
    order is open."""
    return PaymentLedger(
        environment.payments_table_name,
        clients.dynamodb(),
        keyed=not environment.effect_keys_disabled,
        orders_table_name=orders_table_name,
    )
