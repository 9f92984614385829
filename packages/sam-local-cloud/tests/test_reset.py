"""LocalCloud.reset(): the cloud as just deployed again, without a new start.

Everything a test may have made or changed is undone: items, tables, queues, objects, executions, the
quota, reserved concurrency, the fault plan and the counters; the seeded items are back; and the cloud
still runs executions afterwards, its Lambda Tasks and DynamoDB included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[3]
TEMPLATE = REPOSITORY / "examples" / "stock-trader" / "template.yaml"
SEEDED = {"Id": {"S": "seeded"}}
QUOTA = 6


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    seed = tmp_path_factory.mktemp("seed") / "transactions.json"
    seed.write_text(json.dumps([{"Id": "seeded", "Type": "buy"}]))
    config = LocalCloudConfig(
        template=TEMPLATE,
        account_concurrency=QUOTA,
        seed_files={"TransactionTable": seed},
        dynamodb_process=True,
    )
    with LocalCloud(config) as running:
        yield running


def machine_arn(cloud: LocalCloud) -> str:
    return cloud.stack.physical_ids["StockTradingStateMachine"]


def trade(cloud: LocalCloud) -> Any:
    started = cloud.client("stepfunctions").start_execution(stateMachineArn=machine_arn(cloud), input="{}")
    return cloud.wait_for_execution(started["executionArn"], timeout=60)


def function_counters(cloud: LocalCloud) -> dict[str, Any]:
    assert cloud.lambda_service is not None
    functions: dict[str, Any] = cloud.lambda_service.stats(include_timeseries=False)["functions"]
    return functions


def test_what_a_test_made_or_changed_is_undone(cloud: LocalCloud) -> None:
    dynamodb, sqs, s3 = cloud.client("dynamodb"), cloud.client("sqs"), cloud.client("s3")
    lambda_ = cloud.client("lambda")
    table = cloud.stack.table_name("TransactionTable")
    checker = cloud.stack.physical_ids["StockCheckerFunction"]
    assert trade(cloud).status == "SUCCEEDED"
    dynamodb.put_item(TableName=table, Item={"Id": {"S": "made-by-the-test"}})
    dynamodb.delete_item(TableName=table, Key=SEEDED)
    dynamodb.create_table(
        TableName="made-by-the-test",
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    sqs.create_queue(QueueName="made-by-the-test")
    s3.create_bucket(Bucket="made-by-the-test")
    cloud.set_quota(lambda_concurrency=2)
    lambda_.put_function_concurrency(FunctionName=checker, ReservedConcurrentExecutions=1)
    assert sum(counters["invocations"] for counters in function_counters(cloud).values()) >= 2

    cloud.reset()

    items = dynamodb.scan(TableName=table)["Items"]
    assert items == [{"Id": {"S": "seeded"}, "Type": {"S": "buy"}}]
    assert dynamodb.list_tables()["TableNames"] == [table]
    assert "QueueUrls" not in sqs.list_queues()
    assert [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]] == []
    listed = cloud.client("stepfunctions").list_executions(stateMachineArn=machine_arn(cloud))
    assert listed["executions"] == []
    settings = lambda_.get_account_settings()["AccountLimit"]
    assert settings["ConcurrentExecutions"] == QUOTA
    assert "Concurrency" not in lambda_.get_function(FunctionName=checker)
    assert all(counters["invocations"] == 0 for counters in function_counters(cloud).values())
    assert cloud.dynamodb_writes() == ({}, {})


def test_the_cloud_runs_executions_after_a_reset(cloud: LocalCloud) -> None:
    cloud.reset()

    run = trade(cloud)

    assert run.status == "SUCCEEDED"
    table = cloud.stack.table_name("TransactionTable")
    recorded = cloud.client("dynamodb").scan(TableName=table)["Items"]
    assert len(recorded) == 2  # the seeded item and this trade's
    invoked = {name: counters["invocations"] for name, counters in function_counters(cloud).items()}
    assert sum(invoked.values()) == 2  # the checker, then the buyer or the seller


def test_a_bucket_name_freed_by_a_reset_can_be_made_again(cloud: LocalCloud) -> None:
    s3 = cloud.client("s3")
    s3.create_bucket(Bucket="made-twice")
    s3.put_object(Bucket="made-twice", Key="k", Body=b"v")
    cloud.reset()

    with pytest.raises(ClientError) as gone:
        s3.head_bucket(Bucket="made-twice")
    assert gone.value.response["Error"]["Code"] == "404"
    s3.create_bucket(Bucket="made-twice")


def test_a_running_execution_is_stopped_by_a_reset(cloud: LocalCloud) -> None:
    stepfunctions = cloud.client("stepfunctions")
    waiting = stepfunctions.create_state_machine(
        name="waits",
        definition=json.dumps(
            {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 60, "End": True}}}
        ),
        roleArn=f"arn:aws:iam::{cloud.account_id}:role/waits",
    )["stateMachineArn"]
    execution = stepfunctions.start_execution(stateMachineArn=waiting)["executionArn"]

    cloud.reset()

    with pytest.raises(ClientError) as gone:
        stepfunctions.describe_execution(executionArn=execution)
    assert gone.value.response["Error"]["Code"] in ("ExecutionDoesNotExist", "StateMachineDoesNotExist")
    machines = [m["name"] for m in stepfunctions.list_state_machines()["stateMachines"]]
    assert "waits" not in machines


def test_a_queue_of_the_template_is_emptied_and_still_delivers_after_a_reset() -> None:
    # moto's queues hold a Condition, which no deep copy copies: each reset gives the queue a fresh one.
    template = REPOSITORY / "tests" / "compat" / "fixtures" / "messaging" / "template.yaml"
    with LocalCloud(LocalCloudConfig(template=template)) as messaging:
        sqs = messaging.client("sqs")
        queue = messaging.stack.outputs["WorkQueueUrl"]
        sqs.send_message(QueueUrl=queue, MessageBody="before the reset")

        messaging.reset()

        assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)
        sqs.send_message(QueueUrl=queue, MessageBody="after the reset")
        received = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"]
        assert [message["Body"] for message in received] == ["after the reset"]
