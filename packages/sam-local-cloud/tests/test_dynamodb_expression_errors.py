"""A malformed condition or filter expression gets DynamoDB's ValidationException, and nothing is written.

moto raised KeyError, TypeError or ValueError on these; through the local cloud that was an
UnsupportedOperationException, in a transaction a TransactionCanceledException with reason "KeyError".
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from sam_local_cloud.moto_seam.installers import install_dynamodb
from sam_local_cloud.moto_seam.testing import mock_aws

pytestmark = pytest.mark.usefixtures("dynamodb_hooks")

TABLE = "orders"
VALUE_NOT_DEFINED = "An expression attribute value used in expression is not defined; attribute value: "
NAME_NOT_DEFINED = "An expression attribute name used in the document path is not defined; attribute name: "


@pytest.fixture
def dynamodb_hooks() -> None:
    install_dynamodb()


@pytest.fixture
def dynamodb() -> Any:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName=TABLE, Item={"id": {"S": "o-1"}, "amount": {"N": "5"}})
        yield client


def _refusal(call: Any, **request: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**request)
    error = raised.value.response["Error"]
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return error["Code"], error["Message"]


def _items(dynamodb: Any) -> list[dict[str, Any]]:
    return sorted(dynamodb.scan(TableName=TABLE)["Items"], key=lambda item: item["id"]["S"])


@pytest.mark.parametrize(
    ("condition", "names", "values", "message"),
    [
        ("amount = :limit", None, None, VALUE_NOT_DEFINED + ":limit"),
        ("amount = :limit", None, {":other": {"N": "1"}}, VALUE_NOT_DEFINED + ":limit"),
        ("#amount = :limit", None, {":limit": {"N": "1"}}, NAME_NOT_DEFINED + "#amount"),
        ("#amount = :limit", {"#other": "amount"}, {":limit": {"N": "1"}}, NAME_NOT_DEFINED + "#amount"),
        (
            "amount BETWEEN :low AND :high",
            None,
            {":low": {"NULL": True}, ":high": {"N": "9"}},
            "Incorrect operand type for operator or function; operator or function: BETWEEN, "
            "operand type: NULL",
        ),
    ],
)
def test_each_write_refuses_an_undefined_name_or_value_or_a_null_bound(
    dynamodb: Any, condition: str, names: Any, values: Any, message: str
) -> None:
    expression: dict[str, Any] = {"ConditionExpression": condition}
    if names is not None:
        expression["ExpressionAttributeNames"] = names
    if values is not None:
        expression["ExpressionAttributeValues"] = values
    before = _items(dynamodb)
    key = {"id": {"S": "o-1"}}
    writes = [
        (dynamodb.put_item, {"Item": {**key, "amount": {"N": "7"}}}),
        (dynamodb.update_item, {"Key": key, "UpdateExpression": "SET paid = :paid"}),
        (dynamodb.delete_item, {"Key": key}),
    ]
    for call, request in writes:
        if call is dynamodb.update_item:
            # The update's own value is defined; only the condition's are in question.
            merged = {**(values or {}), ":paid": {"BOOL": True}}
            refused = _refusal(
                call, TableName=TABLE, **request, **expression, ExpressionAttributeValues=merged
            )
        else:
            refused = _refusal(call, TableName=TABLE, **request, **expression)
        assert refused == ("ValidationException", "Invalid ConditionExpression: " + message), call
    assert _items(dynamodb) == before


def test_an_unreadable_condition_is_a_syntax_error(dynamodb: Any) -> None:
    code, message = _refusal(
        dynamodb.put_item,
        TableName=TABLE,
        Item={"id": {"S": "o-2"}},
        ConditionExpression="amount = = :limit",
        ExpressionAttributeValues={":limit": {"N": "1"}},
    )
    assert code == "ValidationException"
    assert message.startswith("Invalid ConditionExpression: Syntax error; ")
    assert [item["id"]["S"] for item in _items(dynamodb)] == ["o-1"]


def test_a_transaction_with_an_undefined_value_is_refused_whole_not_cancelled(dynamodb: Any) -> None:
    code, message = _refusal(
        dynamodb.transact_write_items,
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "o-3"}}}},
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": {"id": {"S": "o-1"}},
                    "ConditionExpression": "amount > :limit",
                }
            },
        ],
    )
    assert (code, message) == (
        "ValidationException",
        "Invalid ConditionExpression: " + VALUE_NOT_DEFINED + ":limit",
    )
    assert [item["id"]["S"] for item in _items(dynamodb)] == ["o-1"]


def test_query_and_scan_name_their_filter_expression(dynamodb: Any) -> None:
    query = {"KeyConditionExpression": "id = :id", "ExpressionAttributeValues": {":id": {"S": "o-1"}}}
    assert _refusal(dynamodb.query, TableName=TABLE, FilterExpression="amount > :limit", **query) == (
        "ValidationException",
        "Invalid FilterExpression: " + VALUE_NOT_DEFINED + ":limit",
    )
    limit = {":limit": {"N": "1"}}
    assert _refusal(
        dynamodb.scan, TableName=TABLE, FilterExpression="#amount > :limit", ExpressionAttributeValues=limit
    ) == (
        "ValidationException",
        "Invalid FilterExpression: " + NAME_NOT_DEFINED + "#amount",
    )
    # moto's own refusal of a reserved word names the filter too.
    assert _refusal(
        dynamodb.scan,
        TableName=TABLE,
        FilterExpression="status = :paid",
        ExpressionAttributeValues={":paid": {"S": "PAID"}},
    ) == (
        "ValidationException",
        "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status",
    )


def test_well_formed_conditions_still_decide(dynamodb: Any) -> None:
    condition = {"ConditionExpression": "#amount < :limit", "ExpressionAttributeNames": {"#amount": "amount"}}
    dynamodb.put_item(
        TableName=TABLE,
        Item={"id": {"S": "o-1"}, "amount": {"N": "6"}},
        ExpressionAttributeValues={":limit": {"N": "9"}},
        **condition,
    )
    assert (
        _refusal(
            dynamodb.put_item,
            TableName=TABLE,
            Item={"id": {"S": "o-1"}, "amount": {"N": "1"}},
            ExpressionAttributeValues={":limit": {"N": "2"}},
            **condition,
        )[0]
        == "ConditionalCheckFailedException"
    )
    assert _items(dynamodb) == [{"id": {"S": "o-1"}, "amount": {"N": "6"}}]


def test_a_value_the_condition_does_not_use_is_refused_by_every_write(dynamodb: Any) -> None:
    key = {"id": {"S": "o-1"}}
    expression = {
        "ConditionExpression": "attribute_exists(id) AND amount < :limit",
        "ExpressionAttributeValues": {":limit": {"N": "9"}, ":spare": {"N": "1"}},
    }
    unused = (
        "1 validation error detected: Value provided in ExpressionAttributeValues unused in expressions: "
    )
    for call, request in (
        (dynamodb.put_item, {"Item": {**key, "amount": {"N": "7"}}}),
        (dynamodb.delete_item, {"Key": key}),
        (dynamodb.update_item, {"Key": key, "UpdateExpression": "SET paid = :limit"}),
    ):
        assert _refusal(call, TableName=TABLE, **request, **expression) == (
            "ValidationException",
            unused + "keys: {:spare}",
        ), call
    assert _items(dynamodb) == [{"id": {"S": "o-1"}, "amount": {"N": "5"}}]
    # Every value used (one of them twice): the write goes ahead.
    dynamodb.delete_item(
        TableName=TABLE,
        Key=key,
        ConditionExpression="amount BETWEEN :low AND :high OR amount = :low",
        ExpressionAttributeValues={":low": {"N": "1"}, ":high": {"N": "9"}},
    )
    assert _items(dynamodb) == []
