"""What the stores share: a lazily created DynamoDB client, transactions and their conditional failures."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypedDict

import boto3
from botocore.exceptions import ClientError

from order_processing.contract import OrderStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
CONDITIONAL_CHECK_FAILED_EXCEPTION = "ConditionalCheckFailedException"
TRANSACTION_CANCELED_EXCEPTION = "TransactionCanceledException"
NO_REASON = "None"


class CancellationReason(TypedDict, total=False):
    """One action's entry of a TransactionCanceledException's CancellationReasons (no stub types it)."""

    Code: str
    Message: str
    Item: dict[str, AttributeValueTypeDef]


class DynamoDBStore:
    """Base of the stores: the client is a parameter, created on first use when not given.

    `keyed=False` is the EFFECT_KEYS_DISABLED control: writes drop the conditions that make
    them land once and take random key suffixes, so tests can show what the keys prevent.
    """

    def __init__(self, table_name: str, client: DynamoDBClient | None = None, *, keyed: bool = True) -> None:
        self.table_name = table_name
        self.keyed = keyed
        self._client = client

    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            self._client = boto3.client("dynamodb")
        return self._client

    def unique_suffix(self, key: str) -> str:
        return key if self.keyed else f"{key}-{uuid.uuid4().hex[:12]}"

    def transact_unless_conditions_fail(
        self, actions: Sequence[TransactWriteItemTypeDef]
    ) -> list[CancellationReason] | None:
        """Write ``actions`` in one transaction: None when it landed, its cancellation reasons (one per
        action) when the actions' own conditions stopped it; any other failure (a conflict, a throttle)
        is raised."""
        try:
            self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            reasons = cancellation_reasons(error)
            if not only_condition_failures(reasons):
                raise
            return reasons
        return None


def order_open_check(orders_table_name: str, order_id: str) -> TransactWriteItemTypeDef:
    """A transaction's ConditionCheck that the order has not been closed as FAILED or REJECTED.

    A forward effect (a reservation, a charge) lands only with it: compensation records the order's final
    status before it undoes anything, so an effect that a late run of the order (an Express child run
    twice, a retry that outlived the Catch) would add after that undo can no longer land. The old record
    comes back on failure, to say how the order was closed.
    """
    return {
        "ConditionCheck": {
            "TableName": orders_table_name,
            "Key": {"order_id": {"S": order_id}},
            "ConditionExpression": "attribute_not_exists(order_id) OR NOT #status IN (:failed, :rejected)",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":failed": {"S": OrderStatus.FAILED},
                ":rejected": {"S": OrderStatus.REJECTED},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


@dataclass(frozen=True)
class ClosedOrder:
    """An order found closed by a forward effect's ConditionCheck: its status and who closed it."""

    order_id: str
    status: str
    batch_id: str | None
    item_index: int | None

    @classmethod
    def from_reason(cls, order_id: str, reason: CancellationReason) -> ClosedOrder:
        item = reason.get("Item") or {}
        return cls(
            order_id,
            string_value(item, "status") or "closed",
            string_value(item, "batch_id"),
            number_value(item, "item_index"),
        )

    def explain(self, effect: str) -> str:
        by = f" by batch {self.batch_id} item {self.item_index}" if self.batch_id is not None else ""
        return (
            f"order {self.order_id} was already closed as {self.status}{by} (another run of the order "
            f"compensated it); {effect}"
        )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_condition_failure(error: ClientError) -> bool:
    return error_code(error) == CONDITIONAL_CHECK_FAILED_EXCEPTION


def cancellation_reasons(error: ClientError) -> list[CancellationReason]:
    """One entry per transaction action, in order; `Code` is "None" for actions that passed."""
    if error_code(error) != TRANSACTION_CANCELED_EXCEPTION:
        return []
    # botocore's stub types an error response without the CancellationReasons a transaction adds.
    reasons: list[CancellationReason] = error.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return reasons


def only_condition_failures(reasons: list[CancellationReason]) -> bool:
    """True when the transaction failed on our conditions alone (not a conflict or a throttle)."""
    codes = {reason.get("Code", NO_REASON) for reason in reasons}
    return CONDITIONAL_CHECK_FAILED in codes and codes <= {CONDITIONAL_CHECK_FAILED, NO_REASON}


def string_value(item: Mapping[str, AttributeValueTypeDef], name: str) -> str | None:
    value = item.get(name)
    return value.get("S") if isinstance(value, dict) else None


def number_value(item: Mapping[str, AttributeValueTypeDef], name: str) -> int | None:
    value = item.get(name)
    if isinstance(value, dict) and "N" in value:
        return int(value["N"])
    return None
