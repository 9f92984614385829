"""The payment ledger: at most one `charge` and one `refund` entry per order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING

from order_processing.dynamodb import (
    CONDITIONAL_CHECK_FAILED,
    ClosedOrder,
    DynamoDBStore,
    now_iso,
    order_open_check,
    string_value,
)
from order_processing.models import decimal_text

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        PutTypeDef,
        TransactWriteItemTypeDef,
        UniversalAttributeValueTypeDef,
        UpdateTypeDef,
    )

CHARGE_ENTRY = "charge"
REFUND_ENTRY = "refund"


class EntryKind(StrEnum):
    CHARGE = "CHARGE"
    REFUND = "REFUND"


class EntryStatus(StrEnum):
    CHARGED = "CHARGED"
    REFUNDED = "REFUNDED"


@dataclass(frozen=True)
class LedgerEntry:
    order_id: str
    entry_id: str
    kind: EntryKind
    amount: Decimal
    currency: str
    status: str | None

    @classmethod
    def from_item(cls, item: Mapping[str, AttributeValueTypeDef]) -> LedgerEntry:
        return cls(
            order_id=string_value(item, "order_id") or "",
            entry_id=string_value(item, "entry_id") or "",
            kind=EntryKind(string_value(item, "kind") or EntryKind.CHARGE),
            amount=Decimal(string_value(item, "amount") or "0"),
            currency=string_value(item, "currency") or "",
            status=string_value(item, "status"),
        )


class ChargeVerdict(StrEnum):
    CHARGED = "CHARGED"
    ALREADY_CHARGED = "ALREADY_CHARGED"
    # Another run of the order compensated it first: it may not be charged any more.
    ORDER_CLOSED = "ORDER_CLOSED"


@dataclass(frozen=True)
class ChargeResult:
    verdict: ChargeVerdict
    closed: ClosedOrder | None = None


class PaymentLedger(DynamoDBStore):
    """The Payments table: charge and refund entries per order.

    With ``orders_table_name`` a charge lands only while the order is open (not closed as FAILED or
    REJECTED), in one transaction with that check; refunds need no such table.
    """

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient | None = None,
        *,
        keyed: bool = True,
        orders_table_name: str | None = None,
    ) -> None:
        super().__init__(table_name, client, keyed=keyed)
        self.orders_table_name = orders_table_name

    def charge(self, order_id: str, batch_id: str, amount: Decimal, currency: str) -> ChargeResult:
        """Write the order's charge, unless it was already charged or the order is closed."""
        item = self._entry(
            order_id, self.unique_suffix(CHARGE_ENTRY), EntryKind.CHARGE, amount, currency, batch_id
        )
        item["status"] = {"S": EntryStatus.CHARGED}
        put: PutTypeDef = {"TableName": self.table_name, "Item": item}
        if self.keyed:
            put["ConditionExpression"] = "attribute_not_exists(order_id)"
        if self.orders_table_name is None:
            raise ValueError("a charge needs the Orders table: it lands only while its order is open")
        actions: list[TransactWriteItemTypeDef] = [
            {"Put": put},
            order_open_check(self.orders_table_name, order_id),
        ]
        reasons = self.transact_unless_conditions_fail(actions)
        if reasons is None:
            return ChargeResult(ChargeVerdict.CHARGED)
        if reasons[1].get("Code") == CONDITIONAL_CHECK_FAILED:
            return ChargeResult(ChargeVerdict.ORDER_CLOSED, ClosedOrder.from_reason(order_id, reasons[1]))
        return ChargeResult(ChargeVerdict.ALREADY_CHARGED)

    def refund(self, order_id: str, batch_id: str) -> list[LedgerEntry]:
        """Refund every CHARGED charge of the order that has no refund yet; returns the refunds written."""
        entries = self.entries(order_id)
        if self.keyed and any(entry.kind is EntryKind.REFUND for entry in entries):
            return []
        refunds = []
        for charge in entries:
            if charge.kind is not EntryKind.CHARGE or charge.status != EntryStatus.CHARGED:
                continue
            refund_id = self.unique_suffix(REFUND_ENTRY)
            actions = self._refund_actions(charge, refund_id, batch_id)
            if self.transact_unless_conditions_fail(actions) is not None:
                continue  # a concurrent compensation refunded it first
            refunds.append(
                LedgerEntry(order_id, refund_id, EntryKind.REFUND, charge.amount, charge.currency, None)
            )
        return refunds

    def entries(self, order_id: str) -> list[LedgerEntry]:
        response = self.client.query(
            TableName=self.table_name,
            KeyConditionExpression="order_id = :order",
            ExpressionAttributeValues={":order": {"S": order_id}},
            ConsistentRead=True,
        )
        return [LedgerEntry.from_item(item) for item in response.get("Items", [])]

    def _refund_actions(
        self, charge: LedgerEntry, refund_id: str, batch_id: str
    ) -> list[TransactWriteItemTypeDef]:
        values: dict[str, UniversalAttributeValueTypeDef] = {
            ":refunded": {"S": EntryStatus.REFUNDED},
            ":now": {"S": now_iso()},
        }
        mark: UpdateTypeDef = {
            "TableName": self.table_name,
            "Key": {"order_id": {"S": charge.order_id}, "entry_id": {"S": charge.entry_id}},
            "UpdateExpression": "SET #status = :refunded, refunded_at = :now",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
        }
        put: PutTypeDef = {
            "TableName": self.table_name,
            "Item": self._entry(
                charge.order_id, refund_id, EntryKind.REFUND, charge.amount, charge.currency, batch_id
            ),
        }
        if self.keyed:
            mark["ConditionExpression"] = "#status = :charged"
            values[":charged"] = {"S": EntryStatus.CHARGED}
            put["ConditionExpression"] = "attribute_not_exists(order_id)"
        return [{"Update": mark}, {"Put": put}]

    @staticmethod
    def _entry(
        order_id: str, entry_id: str, kind: EntryKind, amount: Decimal, currency: str, batch_id: str
    ) -> dict[str, AttributeValueTypeDef]:
        return {
            "order_id": {"S": order_id},
            "entry_id": {"S": entry_id},
            "kind": {"S": kind},
            "amount": {"S": decimal_text(amount)},
            "currency": {"S": currency},
            "batch_id": {"S": batch_id},
            "created_at": {"S": now_iso()},
        }
