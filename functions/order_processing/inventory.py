"""Stock and reservations: one transaction reserves every line of an order or none of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, TypedDict

from order_processing.dynamodb import (
    CONDITIONAL_CHECK_FAILED,
    CancellationReason,
    ClosedOrder,
    DynamoDBStore,
    now_iso,
    number_value,
    order_open_check,
    string_value,
)
from order_processing.models import OrderLine

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        PutTypeDef,
        TransactWriteItemTypeDef,
        UniversalAttributeValueTypeDef,
        UpdateTypeDef,
    )

# A transaction holds 100 actions; releasing a line takes two.
LINES_PER_RELEASE = 50
# A release that loses a race re-reads and tries again; more rounds than this means something is wrong.
MAX_RELEASE_ROUNDS = 3


class ReservationStatus(StrEnum):
    RESERVED = "RESERVED"
    RELEASED = "RELEASED"


class ReservationRow(TypedDict):
    """One line's reservation of an order, as read back from the reservations table."""

    reservation_id: str
    sku: str
    quantity: int
    status: str | None
    order_id: str


class ReserveVerdict(StrEnum):
    RESERVED = "RESERVED"
    ALREADY_RESERVED = "ALREADY_RESERVED"
    UNKNOWN_SKU = "UNKNOWN_SKU"
    OUT_OF_STOCK = "OUT_OF_STOCK"
    # Another run of the order compensated it first: nothing may be reserved for it any more.
    ORDER_CLOSED = "ORDER_CLOSED"


@dataclass(frozen=True)
class ShortLine:
    sku: str
    requested: int
    available: int


@dataclass(frozen=True)
class ReserveResult:
    verdict: ReserveVerdict
    unknown_skus: tuple[str, ...] = ()
    short_lines: tuple[ShortLine, ...] = field(default_factory=tuple)
    closed: ClosedOrder | None = None


class ReleaseRaceError(RuntimeError):
    """Reservations kept changing under the release; the caller's retry starts it over."""


class InventoryStore(DynamoDBStore):
    """The Inventory table (stock per SKU) and the Reservations table (one row per order line).

    With ``orders_table_name`` a reservation lands only while the order is open (not closed as FAILED or
    REJECTED): what reserves must pass it; what only releases need not.
    """

    def __init__(
        self,
        inventory_table_name: str,
        reservations_table_name: str,
        client: DynamoDBClient | None = None,
        *,
        keyed: bool = True,
        orders_table_name: str | None = None,
    ) -> None:
        super().__init__(inventory_table_name, client, keyed=keyed)
        self.reservations_table_name = reservations_table_name
        self.orders_table_name = orders_table_name

    def reserve(self, order_id: str, batch_id: str, lines: Sequence[OrderLine]) -> ReserveResult:
        actions: list[TransactWriteItemTypeDef] = []
        created_at = now_iso()
        for number, line in enumerate(lines, start=1):
            actions.append(self._put_reservation(order_id, batch_id, number, line, created_at))
            actions.append(self._take_stock(line))
        if self.orders_table_name is not None:
            actions.append(order_open_check(self.orders_table_name, order_id))
        reasons = self.transact_unless_conditions_fail(actions)
        if reasons is not None:
            return self._explain(order_id, reasons, lines)
        return ReserveResult(ReserveVerdict.RESERVED)

    def release(self, order_id: str) -> int:
        """Put back the stock of every RESERVED line of the order; returns how many lines it released."""
        released = 0
        for _round in range(MAX_RELEASE_ROUNDS):
            reserved = [
                row for row in self.reservations(order_id) if row["status"] == ReservationStatus.RESERVED
            ]
            if not reserved:
                return released
            for start in range(0, len(reserved), LINES_PER_RELEASE):
                chunk = reserved[start : start + LINES_PER_RELEASE]
                actions = [action for row in chunk for action in self._release_actions(row)]
                if self.transact_unless_conditions_fail(actions) is not None:
                    break  # another compensation released some lines first: read again, release the rest
                released += len(chunk)
            else:
                return released
        raise ReleaseRaceError(f"reservations of order {order_id} kept changing during release")

    def reservations(self, order_id: str) -> list[ReservationRow]:
        rows: list[ReservationRow] = []
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.reservations_table_name,
            KeyConditionExpression="order_id = :order",
            ExpressionAttributeValues={":order": {"S": order_id}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                rows.append(
                    {
                        # Both are written with every reservation (the first is its sort key).
                        "reservation_id": string_value(item, "reservation_id") or "",
                        "sku": string_value(item, "sku") or "",
                        "quantity": number_value(item, "quantity") or 0,
                        "status": string_value(item, "status"),
                        "order_id": order_id,
                    }
                )
        return rows

    def stock(self, sku: str) -> int | None:
        item = self.client.get_item(
            TableName=self.table_name, Key={"sku": {"S": sku}}, ConsistentRead=True
        ).get("Item")
        return number_value(item, "stock") if item else None

    def _put_reservation(
        self, order_id: str, batch_id: str, number: int, line: OrderLine, created_at: str
    ) -> TransactWriteItemTypeDef:
        put: PutTypeDef = {
            "TableName": self.reservations_table_name,
            "Item": {
                "order_id": {"S": order_id},
                "reservation_id": {"S": self.unique_suffix(f"line-{number}")},
                "line": {"N": str(number)},
                "sku": {"S": line.sku},
                "quantity": {"N": str(line.quantity)},
                "status": {"S": ReservationStatus.RESERVED},
                "batch_id": {"S": batch_id},
                "created_at": {"S": created_at},
            },
        }
        if self.keyed:
            put["ConditionExpression"] = "attribute_not_exists(order_id)"
        return {"Put": put}

    def _take_stock(self, line: OrderLine) -> TransactWriteItemTypeDef:
        # The stock condition is not a key: it holds with EFFECT_KEYS_DISABLED too,
        # so stock never goes negative.
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": {"sku": {"S": line.sku}},
                "UpdateExpression": "SET #stock = #stock - :quantity",
                "ConditionExpression": "attribute_exists(sku) AND #stock >= :quantity",
                "ExpressionAttributeNames": {"#stock": "stock"},
                "ExpressionAttributeValues": {":quantity": {"N": str(line.quantity)}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _release_actions(self, row: ReservationRow) -> list[TransactWriteItemTypeDef]:
        values: dict[str, UniversalAttributeValueTypeDef] = {
            ":released": {"S": ReservationStatus.RELEASED},
            ":now": {"S": now_iso()},
        }
        mark: UpdateTypeDef = {
            "TableName": self.reservations_table_name,
            "Key": {"order_id": {"S": row["order_id"]}, "reservation_id": {"S": row["reservation_id"]}},
            "UpdateExpression": "SET #status = :released, released_at = :now",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
        }
        if self.keyed:
            mark["ConditionExpression"] = "#status = :reserved"
            values[":reserved"] = {"S": ReservationStatus.RESERVED}
        # ADD, not SET: it cannot fail, so putting stock back never blocks a compensation.
        give_back: UpdateTypeDef = {
            "TableName": self.table_name,
            "Key": {"sku": {"S": row["sku"]}},
            "UpdateExpression": "ADD #stock :quantity",
            "ExpressionAttributeNames": {"#stock": "stock"},
            "ExpressionAttributeValues": {":quantity": {"N": str(row["quantity"])}},
        }
        return [{"Update": mark}, {"Update": give_back}]

    @staticmethod
    def _explain(
        order_id: str, reasons: list[CancellationReason], lines: Sequence[OrderLine]
    ) -> ReserveResult:
        """Read the transaction's cancellation reasons: actions alternate reservation, stock, then the
        order's ConditionCheck, if any. A closed order comes first: nothing may be reserved for it."""
        fence: CancellationReason = reasons[2 * len(lines)] if len(reasons) > 2 * len(lines) else {}
        if fence.get("Code") == CONDITIONAL_CHECK_FAILED:
            return ReserveResult(ReserveVerdict.ORDER_CLOSED, closed=ClosedOrder.from_reason(order_id, fence))
        unknown: list[str] = []
        short: list[ShortLine] = []
        for position, line in enumerate(lines):
            put_reason, stock_reason = reasons[2 * position], reasons[2 * position + 1]
            if put_reason.get("Code") == CONDITIONAL_CHECK_FAILED:
                # The order's reservations exist: an earlier run reserved it, all lines at once.
                return ReserveResult(ReserveVerdict.ALREADY_RESERVED)
            if stock_reason.get("Code") != CONDITIONAL_CHECK_FAILED:
                continue
            old_item = stock_reason.get("Item")
            if old_item is None:
                unknown.append(line.sku)
            else:
                short.append(ShortLine(line.sku, line.quantity, number_value(old_item, "stock") or 0))
        if unknown:
            return ReserveResult(ReserveVerdict.UNKNOWN_SKU, unknown_skus=tuple(unknown))
        return ReserveResult(ReserveVerdict.OUT_OF_STOCK, short_lines=tuple(short))
