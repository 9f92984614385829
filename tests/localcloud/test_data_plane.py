"""DynamoDB in a process of its own: one owner of every table, one endpoint, IAM on both ways in."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from orderbatch.app_batches import local_cloud_config
from orderbatch.project import default_template
from sam_local_cloud import LocalCloud
from sam_local_cloud.data_plane import DataPlane
from sam_local_cloud.iam import build_roles
from sam_local_cloud.stack import load_stack


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(local_cloud_config(default_template(), account_concurrency=4)) as running:
        yield running


def _as_function(cloud: LocalCloud, function_name: str) -> Any:
    """A DynamoDB client as the function's environments make it: its credentials, its endpoint variable."""
    assert cloud.lambda_service is not None
    variables = cloud.lambda_service.registry.get(function_name).environment
    return boto3.client(
        "dynamodb",
        endpoint_url=variables["AWS_ENDPOINT_URL_DYNAMODB"],
        region_name=cloud.stack.region,
        aws_access_key_id=variables["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=variables["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )


def test_functions_reach_dynamodb_in_its_own_process_and_see_what_the_endpoint_wrote(
    cloud: LocalCloud,
) -> None:
    assert cloud.data_plane is not None
    orders = cloud.stack.table_name("OrdersTable")
    as_function = _as_function(cloud, "ConfirmOrderFunction")
    through_endpoint = cloud.client("dynamodb")

    # When one item is written through the local cloud's endpoint and another by a function directly
    through_endpoint.put_item(TableName=orders, Item={"order_id": {"S": "dp-1"}, "status": {"S": "NEW"}})
    as_function.put_item(TableName=orders, Item={"order_id": {"S": "dp-2"}, "status": {"S": "NEW"}})

    # Then each sees both: one table, owned by the data plane's process, not by the local cloud's
    assert as_function.get_item(TableName=orders, Key={"order_id": {"S": "dp-1"}})["Item"]["status"] == {
        "S": "NEW"
    }
    assert through_endpoint.get_item(TableName=orders, Key={"order_id": {"S": "dp-2"}})["Item"]["status"] == {
        "S": "NEW"
    }
    assert cloud.data_plane.endpoint != cloud.endpoint
    assert cloud.data_plane_pids() == [cloud.data_plane.pid]
    assert cloud.data_plane.pid != os.getpid()


def test_a_function_is_denied_by_the_data_plane_as_by_the_endpoint(cloud: LocalCloud) -> None:
    # ChargePaymentFunction's role names the payments and idempotency tables only
    inventory = cloud.stack.table_name("InventoryTable")
    assert cloud.lambda_service is not None
    spec = cloud.lambda_service.registry.get("ChargePaymentFunction")
    denials = []
    for endpoint in (spec.environment["AWS_ENDPOINT_URL_DYNAMODB"], cloud.endpoint):
        client = boto3.client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name=cloud.stack.region,
            aws_access_key_id=spec.environment["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=spec.environment["AWS_SECRET_ACCESS_KEY"],
            config=Config(retries={"mode": "standard", "max_attempts": 1}),
        )
        with pytest.raises(ClientError) as denied:
            client.delete_item(TableName=inventory, Key={"sku": {"S": "SKU-1"}})
        denials.append(denied.value.response)

    direct, forwarded = denials
    assert direct["Error"]["Code"] == forwarded["Error"]["Code"] == "AccessDeniedException"
    assert direct["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "dynamodb:DeleteItem" in direct["Error"]["Message"]
    assert direct["Error"]["Message"] == forwarded["Error"]["Message"]


def test_a_conditional_write_wins_once_whichever_way_its_racers_come_in(cloud: LocalCloud) -> None:
    orders = cloud.stack.table_name("OrdersTable")
    as_function = _as_function(cloud, "ConfirmOrderFunction")
    through_endpoint = cloud.client("dynamodb", retries={"mode": "standard", "max_attempts": 1})
    writes_before = cloud.dynamodb_writes()

    def charge(attempt: int) -> str:
        client = as_function if attempt % 2 else through_endpoint
        try:
            client.put_item(
                TableName=orders,
                Item={"order_id": {"S": "dp-race"}, "attempt": {"N": str(attempt)}},
                ConditionExpression="attribute_not_exists(order_id)",
            )
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "written"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(charge, range(40)))
    requests, units = cloud.dynamodb_writes()

    assert outcomes.count("written") == 1
    assert outcomes.count("ConditionalCheckFailedException") == 39
    # Every write is counted, refused or not, whichever way it came in
    assert requests["PutItem"] - writes_before[0]["PutItem"] == 40
    assert units["PutItem"] - writes_before[1]["PutItem"] == 40


def test_the_data_plane_process_ends_with_the_local_cloud() -> None:
    with LocalCloud(local_cloud_config(default_template(), account_concurrency=2)) as running:
        assert running.data_plane is not None
        pid = running.data_plane.pid
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")


def test_without_a_data_plane_process_dynamodb_is_served_in_process_with_the_same_counts() -> None:
    config = local_cloud_config(default_template(), account_concurrency=2, dynamodb_process=False)
    with LocalCloud(config) as running:
        orders = running.stack.table_name("OrdersTable")
        dynamodb = running.client("dynamodb")
        dynamodb.put_item(TableName=orders, Item={"order_id": {"S": "in-1"}})
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": orders, "Item": {"order_id": {"S": "in-2"}}}},
                {"Put": {"TableName": orders, "Item": {"order_id": {"S": "in-3"}}}},
            ]
        )
        requests, units = running.dynamodb_writes()
        assert running.lambda_service is not None
        environment = running.lambda_service.registry.get("ConfirmOrderFunction").environment

    assert running.data_plane is None
    assert running.data_plane_pids() == []
    assert "AWS_ENDPOINT_URL_DYNAMODB" not in environment
    assert requests["PutItem"] >= 1
    assert requests["TransactWriteItems"] == 1
    assert units["TransactWriteItems"] == 4


def test_a_data_plane_whose_local_cloud_died_while_it_started_exits_without_a_word(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given a data plane still loading when its local cloud's process ends (a start that failed, such as
    # a retired runtime, in a command that exits at once): its standard input and output close
    stack = load_stack(default_template(), parameter_overrides={})
    plane = DataPlane(
        roles=build_roles(stack), region=stack.region, account_id=stack.account_id, work_dir=tmp_path
    )
    worker = plane._process  # what the dead process held: the worker's pipes
    assert worker.stdout is not None
    assert worker.stdin is not None
    worker.stdout.close()
    worker.stdin.close()

    # Then it ends cleanly, and says nothing that would bury the failure the user must read
    assert worker.wait(timeout=120) == 0
    assert capfd.readouterr().err == ""
