"""The Orders table: one record per order ID, claimed by the first batch item that sends it."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, TypedDict

from botocore.exceptions import ClientError

from order_processing.contract import OrderStatus
from order_processing.dynamodb import (
    DynamoDBStore,
    is_condition_failure,
    now_iso,
    number_value,
    string_value,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.literals import ReturnValuesOnConditionCheckFailureType
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, UniversalAttributeValueTypeDef

# Failure details are for people; the cap keeps an item far below DynamoDB's 400 KB.
MAX_DETAIL_LENGTH = 4000
BATCH_GET_LIMIT = 100
# BatchGetItem returns what throttling left unread as UnprocessedKeys; AWS asks callers to back off.
MAX_BATCH_GET_ROUNDS = 5
BATCH_GET_BACKOFF_SECONDS = 0.05


class ClaimVerdict(StrEnum):
    CLAIMED = "CLAIMED"
    DUPLICATE = "DUPLICATE"
    CONFLICT = "CONFLICT"


@dataclass(frozen=True)
class Claimant:
    """Who holds an order ID: the batch item that sent it and a hash of what it sent."""

    batch_id: str
    item_index: int
    content_hash: str

    def same_item(self, other: Claimant) -> bool:
        return (self.batch_id, self.item_index) == (other.batch_id, other.item_index)

    def verdict_against(self, holder: Claimant) -> ClaimVerdict:
        if self.same_item(holder) and self.content_hash == holder.content_hash:
            return ClaimVerdict.CLAIMED
        if self.content_hash == holder.content_hash:
            return ClaimVerdict.DUPLICATE
        return ClaimVerdict.CONFLICT


@dataclass(frozen=True)
class OrderRecord:
    order_id: str
    status: OrderStatus
    holder: Claimant
    code: str | None = None

    @classmethod
    def from_item(cls, item: Mapping[str, AttributeValueTypeDef]) -> OrderRecord:
        return cls(
            order_id=string_value(item, "order_id") or "",
            status=OrderStatus(string_value(item, "status") or OrderStatus.RECEIVED),
            holder=Claimant(
                batch_id=string_value(item, "batch_id") or "",
                item_index=number_value(item, "item_index") or 0,
                content_hash=string_value(item, "content_hash") or "",
            ),
            code=string_value(item, "code"),
        )


@dataclass(frozen=True)
class FinalStatus:
    status: OrderStatus
    code: str
    reason: str
    error: str | None = None
    cause: str | None = None


class Condition(TypedDict, total=False):
    """The arguments that make a keyed write conditional, passed to put_item or update_item."""

    ConditionExpression: str
    ReturnValuesOnConditionCheckFailure: ReturnValuesOnConditionCheckFailureType


class WriteCondition(Condition, total=False):
    """A condition with its own names and values (a write that has none of its own)."""

    ExpressionAttributeNames: Mapping[str, str]
    ExpressionAttributeValues: Mapping[str, UniversalAttributeValueTypeDef]


class UnprocessedReadsError(RuntimeError):
    """DynamoDB kept leaving keys unread (throttled); the caller's retry starts the read over."""


class OrderRecordConflictError(RuntimeError):
    """The order record is not in a state this step can move it from; retrying will not help."""


class OrderRecordStore(DynamoDBStore):
    def get(self, order_id: str) -> OrderRecord | None:
        response = self.client.get_item(
            TableName=self.table_name, Key={"order_id": {"S": order_id}}, ConsistentRead=True
        )
        item = response.get("Item")
        return OrderRecord.from_item(item) if item else None

    def get_many(self, order_ids: Iterable[str]) -> dict[str, OrderRecord]:
        """The records of these orders that exist, read in batches of 100 (BatchGetItem's limit)."""
        wanted = list(dict.fromkeys(order_ids))
        found: dict[str, OrderRecord] = {}
        for start in range(0, len(wanted), BATCH_GET_LIMIT):
            keys: list[Mapping[str, UniversalAttributeValueTypeDef]] = [
                {"order_id": {"S": order_id}} for order_id in wanted[start : start + BATCH_GET_LIMIT]
            ]
            for attempt in range(MAX_BATCH_GET_ROUNDS):
                response = self.client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": keys, "ConsistentRead": True}}
                )
                for item in response.get("Responses", {}).get(self.table_name, []):
                    record = OrderRecord.from_item(item)
                    found[record.order_id] = record
                unprocessed = response.get("UnprocessedKeys", {}).get(self.table_name)
                keys = list(unprocessed.get("Keys", [])) if unprocessed else []
                if not keys:
                    break
                time.sleep(BATCH_GET_BACKOFF_SECONDS * 2**attempt)
            else:
                raise UnprocessedReadsError(f"{len(keys)} order records stayed unprocessed after retries")
        return found

    def claim(self, order_id: str, claimant: Claimant) -> tuple[ClaimVerdict, OrderRecord | None]:
        """Write the RECEIVED record unless another batch item holds the ID; say who holds it."""
        item = self._item(order_id, claimant, OrderStatus.RECEIVED)
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **self._only_if_free())
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            holder = OrderRecord.from_item(error.response["Item"])  # type: ignore[typeddict-item]
            return claimant.verdict_against(holder.holder), holder
        return ClaimVerdict.CLAIMED, None

    def mark_succeeded(self, order_id: str, claimant: Claimant) -> None:
        """Move the claimant's record to SUCCEEDED; raise when it is another item's or already failed."""
        values: dict[str, AttributeValueTypeDef] = {
            ":succeeded": {"S": OrderStatus.SUCCEEDED},
            ":now": {"S": now_iso()},
        }
        condition: Condition = {}
        if self.keyed:
            condition = {
                "ConditionExpression": "batch_id = :batch AND item_index = :index "
                "AND #status IN (:received, :succeeded)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
            values |= {
                ":batch": {"S": claimant.batch_id},
                ":index": {"N": str(claimant.item_index)},
                ":received": {"S": OrderStatus.RECEIVED},
            }
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"order_id": {"S": order_id}},
                UpdateExpression="SET #status = :succeeded, updated_at = :now",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                **condition,
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            found = error.response.get("Item")
            record = OrderRecord.from_item(found) if found else None  # type: ignore[arg-type]
            standing = (
                f"{record.status} for batch {record.holder.batch_id} item {record.holder.item_index}"
                if record
                else "missing"
            )
            raise OrderRecordConflictError(
                f"order {order_id} cannot be confirmed: its record is {standing}"
            ) from error

    def record_final(
        self, order_id: str, claimant: Claimant, final: FinalStatus
    ) -> tuple[bool, OrderRecord | None]:
        """Record FAILED or REJECTED unless another item holds the ID or the order already succeeded.

        Returns whether it was recorded and, when not, the record that stood in the way.
        """
        item = self._item(order_id, claimant, final.status)
        item["code"] = {"S": final.code}
        item["reason"] = {"S": final.reason[:MAX_DETAIL_LENGTH]}
        if final.error:
            item["error"] = {"S": final.error[:MAX_DETAIL_LENGTH]}
        if final.cause:
            item["cause"] = {"S": final.cause[:MAX_DETAIL_LENGTH]}
        condition: WriteCondition = {}
        if self.keyed:
            condition = {
                "ConditionExpression": "attribute_not_exists(order_id) OR "
                "(batch_id = :batch AND item_index = :index AND #status <> :succeeded)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":batch": {"S": claimant.batch_id},
                    ":index": {"N": str(claimant.item_index)},
                    ":succeeded": {"S": OrderStatus.SUCCEEDED},
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **condition)
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            found = error.response.get("Item")
            return False, OrderRecord.from_item(found) if found else None  # type: ignore[arg-type]
        return True, None

    def _only_if_free(self) -> Condition:
        if not self.keyed:
            return {}
        return {
            "ConditionExpression": "attribute_not_exists(order_id)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    @staticmethod
    def _item(order_id: str, claimant: Claimant, status: OrderStatus) -> dict[str, AttributeValueTypeDef]:
        return {
            "order_id": {"S": order_id},
            "status": {"S": status},
            "batch_id": {"S": claimant.batch_id},
            "item_index": {"N": str(claimant.item_index)},
            "content_hash": {"S": claimant.content_hash},
            "updated_at": {"S": now_iso()},
        }
