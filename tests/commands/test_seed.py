"""`orderbatch seed` against a stack deployed in moto: the fixture's SKUs land in the stack's table."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from orderbatch.cli import main
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud.moto_seam.testing import mock_aws

STACK_TEMPLATE = {
    "Resources": {
        "InventoryTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "sku", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "sku", "KeyType": "HASH"}],
            },
        }
    },
    "Outputs": {"InventoryTableName": {"Value": {"Ref": "InventoryTable"}}},
}


@pytest.fixture
def deployed_stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="shop", TemplateBody=json.dumps(STACK_TEMPLATE))
        yield "shop"


def test_seed_puts_every_fixture_item_into_the_stacks_inventory_table(deployed_stack: str) -> None:
    fixture = json.loads((PROJECT_ROOT / "fixtures" / "inventory.json").read_text())

    assert main(["seed", "--stack", deployed_stack]) == 0

    outputs = boto3.client("cloudformation").describe_stacks(StackName=deployed_stack)["Stacks"][0]["Outputs"]
    table = boto3.resource("dynamodb").Table(outputs[0]["OutputValue"])
    items = {item["sku"]: int(item["stock"]) for item in table.scan()["Items"]}
    assert items == {item["sku"]: int(item["stock"]) for item in fixture}
    assert items["SKU-LOW"] == 5
