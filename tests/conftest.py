"""Shared test helpers: the effect tables and the idempotency table in moto, seeded with inventory.

The tables are created from the key schemas in docs/architecture.md (the local cloud creates
them from template.yaml instead).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from sam_local_cloud.moto_seam.testing import mock_aws

REPOSITORY = Path(__file__).resolve().parents[1]
INVENTORY_FIXTURE = REPOSITORY / "fixtures" / "inventory.json"
EVENTS = REPOSITORY / "events"
REGION = "us-east-1"

# Powertools reads these when a handler module is imported, which happens before any fixture runs.
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "OrderBatchTests")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "orderbatch-tests")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first: the modules whose tests declare the longest bound (``@pytest.mark.timeout``) run
    first, so that the workers of ``pytest -n`` start on the long runs and finish together, instead of one
    worker starting a 10-minute matrix when the others are done. Each module's tests stay together, so a
    module-scoped fixture is set up once per worker; xdist's own reordering is off for that
    (``--no-loadscope-reorder`` in the Makefile)."""
    default_bound = float(config.getini("timeout") or 0)

    def declared_bound(item: pytest.Item) -> float:
        marker = item.get_closest_marker("timeout")
        return float(marker.args[0]) if marker is not None and marker.args else default_bound

    def module_of(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    module_bounds: dict[str, float] = {}
    module_positions: dict[str, int] = {}
    for item in items:
        module = module_of(item)
        module_bounds[module] = max(module_bounds.get(module, 0.0), declared_bound(item))
        module_positions.setdefault(module, len(module_positions))
    # Within a module the order is kept: a module may run its tests as steps of one scenario.
    items.sort(key=lambda item: (-module_bounds[module_of(item)], module_positions[module_of(item)]))


@dataclass(frozen=True)
class TableNames:
    inventory: str = "orderbatch-inventory"
    orders: str = "orderbatch-orders"
    reservations: str = "orderbatch-reservations"
    payments: str = "orderbatch-payments"
    idempotency: str = "orderbatch-idempotency"

    def as_environment(self) -> dict[str, str]:
        return {
            "INVENTORY_TABLE_NAME": self.inventory,
            "ORDERS_TABLE_NAME": self.orders,
            "RESERVATIONS_TABLE_NAME": self.reservations,
            "PAYMENTS_TABLE_NAME": self.payments,
            "IDEMPOTENCY_TABLE_NAME": self.idempotency,
        }


# The handler modules validate their environment when imported (their cold start), which happens at
# collection, before any fixture runs: these stand in until a fixture sets a test's own values.
COLD_START_ENVIRONMENT = {
    **TableNames().as_environment(),
    "IDEMPOTENCY_EXPIRY_SECONDS": "3600",
    "MAX_CHARGE_AMOUNT": "1000.00",
    "RESULTS_BUCKET_NAME": "orderbatch-results",
    "STATE_MACHINE_ARN": f"arn:aws:states:{REGION}:123456789012:stateMachine:OrderBatch",
    # The durable workflow invokes the per-order functions by these names; tests register the handlers so.
    "VALIDATE_ORDER_FUNCTION_NAME": "orderbatch-validate-order",
    "RESERVE_INVENTORY_FUNCTION_NAME": "orderbatch-reserve-inventory",
    "CHARGE_PAYMENT_FUNCTION_NAME": "orderbatch-charge-payment",
    "CONFIRM_ORDER_FUNCTION_NAME": "orderbatch-confirm-order",
    "CANCEL_ORDER_FUNCTION_NAME": "orderbatch-cancel-order",
}
for _name, _value in COLD_START_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)


def key_schemas(names: TableNames) -> dict[str, list[tuple[str, str]]]:
    """Table name -> [(attribute, type)], hash key first, as docs/architecture.md lists them."""
    return {
        names.inventory: [("sku", "S")],
        names.orders: [("order_id", "S")],
        names.reservations: [("order_id", "S"), ("reservation_id", "S")],
        names.payments: [("order_id", "S"), ("entry_id", "S")],
        names.idempotency: [("id", "S")],
    }


def create_tables(client: Any, names: TableNames) -> None:
    for table_name, keys in key_schemas(names).items():
        client.create_table(
            TableName=table_name,
            KeySchema=[
                {"AttributeName": name, "KeyType": "HASH" if position == 0 else "RANGE"}
                for position, (name, _type) in enumerate(keys)
            ],
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": kind} for name, kind in keys],
            BillingMode="PAY_PER_REQUEST",
        )
    client.update_time_to_live(
        TableName=names.idempotency,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"},
    )


def load_inventory(path: Path = INVENTORY_FIXTURE) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(path.read_text())
    return entries


def seed_inventory(client: Any, table_name: str, path: Path = INVENTORY_FIXTURE) -> list[dict[str, Any]]:
    entries = load_inventory(path)
    for entry in entries:
        client.put_item(
            TableName=table_name,
            Item={
                "sku": {"S": entry["sku"]},
                "name": {"S": entry["name"]},
                "stock": {"N": str(entry["stock"])},
            },
        )
    return entries


_deserializer = TypeDeserializer()


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as Python values (numbers as int when whole)."""
    values = {name: _deserializer.deserialize(value) for name, value in item.items()}
    return {
        name: int(value) if isinstance(value, Decimal) and value == value.to_integral_value() else value
        for name, value in values.items()
    }


@dataclass
class OrderTables:
    """The moto tables of one test, with readers for what the tests assert on."""

    client: Any
    names: TableNames

    def stock(self, sku: str) -> int:
        item = self.client.get_item(TableName=self.names.inventory, Key={"sku": {"S": sku}})["Item"]
        return int(item["stock"]["N"])

    def order_record(self, order_id: str) -> dict[str, Any] | None:
        item = self.client.get_item(TableName=self.names.orders, Key={"order_id": {"S": order_id}}).get(
            "Item"
        )
        return plain(item) if item else None

    def _query(self, table_name: str, order_id: str) -> list[dict[str, Any]]:
        response = self.client.query(
            TableName=table_name,
            KeyConditionExpression="order_id = :order",
            ExpressionAttributeValues={":order": {"S": order_id}},
        )
        return [plain(item) for item in response["Items"]]

    def reservations(self, order_id: str) -> list[dict[str, Any]]:
        return self._query(self.names.reservations, order_id)

    def ledger(self, order_id: str) -> list[dict[str, Any]]:
        return self._query(self.names.payments, order_id)

    def idempotency_records(self) -> list[dict[str, Any]]:
        return [plain(item) for item in self.client.scan(TableName=self.names.idempotency)["Items"]]


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials and region, so nothing can reach a real account."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def order_tables(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[OrderTables]:
    """The five tables in moto, inventory seeded from fixtures/inventory.json, names in the environment."""
    names = TableNames()
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_tables(client, names)
        seed_inventory(client, names.inventory)
        for variable, value in names.as_environment().items():
            monkeypatch.setenv(variable, value)
        yield OrderTables(client, names)


class _ConfigSeenError(Exception):
    """Stops a command once it has built its local cloud's configuration, before anything is served."""


@pytest.fixture
def config_a_command_builds(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], object]], Any]:
    """``config_a_command_builds(run)``: the LocalCloudConfig that ``run`` (a command's entry point
    called with its flags) builds, the cloud it would start replaced by one that only records it."""
    configs: list[Any] = []

    class CloudThatOnlyRecords:
        def __init__(self, config: Any) -> None:
            configs.append(config)

        def start(self) -> None:
            raise _ConfigSeenError

    monkeypatch.setattr("sam_local_cloud.cloud.LocalCloud", CloudThatOnlyRecords)

    def built(run: Callable[[], object]) -> Any:
        with pytest.raises(_ConfigSeenError):
            run()
        return configs[-1]

    return built
