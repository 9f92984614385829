"""Query and Scan read from where they start, not from a sort of the whole table, and still answer what
DynamoDB answers: a Query its partition's items in sort-key order, a paginated Scan every item once, in key
order, whatever is written between its pages."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from sam_local_cloud.moto_seam.installers import install_dynamodb
from sam_local_cloud.moto_seam.testing import mock_aws

pytestmark = pytest.mark.usefixtures("dynamodb_hooks")


@pytest.fixture
def dynamodb_hooks() -> None:
    install_dynamodb()


def _table(dynamodb: Any, name: str, *, range_key: bool = True) -> None:
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    if range_key:
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attributes.append({"AttributeName": "sk", "AttributeType": "N"})
    dynamodb.create_table(
        TableName=name, KeySchema=schema, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
    )


def _key(item: dict[str, Any]) -> tuple[str, int]:
    return item["pk"]["S"], int(item.get("sk", {"N": "0"})["N"])


def _put(dynamodb: Any, table: str, pk: str, sk: int | None = None) -> None:
    item = {"pk": {"S": pk}, **({"sk": {"N": str(sk)}} if sk is not None else {})}
    dynamodb.put_item(TableName=table, Item=item)


@mock_aws
def test_a_query_answers_its_partition_in_sort_key_order_both_ways_and_page_by_page() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    _table(dynamodb, "orders")
    for partition in range(40):
        for sk in (30, 10, 20, 5):  # written out of order
            _put(dynamodb, "orders", f"order#{partition:03d}", sk + partition)

    def query(pk: str, **options: Any) -> list[tuple[str, int]]:
        pages = dynamodb.get_paginator("query").paginate(
            TableName="orders",
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
            **options,
        )
        return [_key(item) for page in pages for item in page["Items"]]

    expected = [("order#007", sk + 7) for sk in (5, 10, 20, 30)]
    assert query("order#007") == expected
    assert query("order#007", ScanIndexForward=False) == expected[::-1]
    assert query("order#007", PaginationConfig={"PageSize": 3}) == expected
    assert query("order#999") == []
    ranged = dynamodb.query(
        TableName="orders",
        KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
        ExpressionAttributeValues={":pk": {"S": "order#007"}, ":low": {"N": "15"}, ":high": {"N": "27"}},
    )
    assert [_key(item) for item in ranged["Items"]] == [("order#007", 17), ("order#007", 27)]


@mock_aws
def test_a_paginated_scan_sees_every_item_once_in_key_order_while_the_table_changes() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    _table(dynamodb, "orders")
    for partition in range(30):
        for sk in range(3):
            _put(dynamodb, "orders", f"order#{partition:03d}", sk)

    seen: list[tuple[str, int]] = []
    start: dict[str, Any] | None = None
    pages = 0
    while True:
        page = dynamodb.scan(TableName="orders", Limit=7, **({"ExclusiveStartKey": start} if start else {}))
        seen += [_key(item) for item in page["Items"]]
        pages += 1
        if pages == 2:
            # Between pages: one item already read and one not yet read go; one before and one after the
            # page's place come; the page's own start key goes too.
            dynamodb.delete_item(TableName="orders", Key={"pk": {"S": "order#000"}, "sk": {"N": "0"}})
            dynamodb.delete_item(TableName="orders", Key={"pk": {"S": "order#020"}, "sk": {"N": "1"}})
            dynamodb.delete_item(TableName="orders", Key=page["LastEvaluatedKey"])
            _put(dynamodb, "orders", "order#001", 9)
            _put(dynamodb, "orders", "order#025", 9)
        start = page.get("LastEvaluatedKey")
        if start is None:
            break

    assert seen == sorted(seen)
    assert len(seen) == len(set(seen))
    assert ("order#020", 1) not in seen
    assert ("order#025", 9) in seen
    assert ("order#001", 9) not in seen  # written behind the scan's place
    assert len(seen) == 90 + 1 - 1
    assert pages == 13


@mock_aws
def test_a_scan_of_a_table_without_a_sort_key_resumes_after_its_start_key() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    _table(dynamodb, "records", range_key=False)
    for n in (5, 3, 9, 1, 7):
        _put(dynamodb, "records", f"order#{n}")

    first = dynamodb.scan(TableName="records", Limit=2)
    rest = dynamodb.scan(TableName="records", ExclusiveStartKey=first["LastEvaluatedKey"])

    assert [item["pk"]["S"] for item in first["Items"] + rest["Items"]] == [
        f"order#{n}" for n in (1, 3, 5, 7, 9)
    ]


@mock_aws
def test_a_cancelled_transaction_leaves_the_scan_order_as_the_items_are() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    _table(dynamodb, "orders")
    _put(dynamodb, "orders", "order#1", 1)
    assert len(dynamodb.scan(TableName="orders")["Items"]) == 1  # the order is taken here

    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "orders", "Item": {"pk": {"S": "order#0"}, "sk": {"N": "1"}}}},
                {"Delete": {"TableName": "orders", "Key": {"pk": {"S": "order#1"}, "sk": {"N": "1"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "orders",
                        "Key": {"pk": {"S": "order#2"}, "sk": {"N": "1"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )

    assert [_key(item) for item in dynamodb.scan(TableName="orders")["Items"]] == [("order#1", 1)]
