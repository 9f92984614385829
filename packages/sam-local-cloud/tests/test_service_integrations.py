"""Service integration Tasks on the local cloud, with IAM on: each reaches its service as the state
machine's role, least privilege allows exactly the resource it names, and what cannot run fails with a
named error and cause instead of a Python error or a hang.

The template (service_integration_fixtures/) gives each state machine one resource of one service and a
neighbour of the same type; every Task takes its target from the execution's input, so one machine tries
both. One cloud serves the module (moto's state is per process); each test starts its own executions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stepfunctions.activities import task_token_resource

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "service_integration_fixtures" / "template.yaml"
ACCOUNT = "123456789012"
REGION = "us-east-1"
REQUEST_ID = r"[0-9A-Za-z-]+"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(template=TEMPLATE, port=0, state_dir=tmp_path_factory.mktemp("state"))
    with LocalCloud(config) as running:
        assert running.iam is not None
        yield running


def run(cloud: LocalCloud, logical_id: str, document: dict[str, Any]) -> dict[str, Any]:
    sfn = cloud.client("stepfunctions")
    arn = cloud.stack.state_machine(logical_id).arn
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(document))["executionArn"]
    wait_for_execution(sfn, execution, timeout=60, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution)
    return described


def run_definition(cloud: LocalCloud, name: str, task: dict[str, Any], role: str) -> dict[str, Any]:
    """One Task state, created by the operator with a template role, run with an empty input."""
    sfn = cloud.client("stepfunctions")
    definition = {"StartAt": "Call", "States": {"Call": {"Type": "Task", "End": True, **task}}}
    arn = sfn.create_state_machine(
        name=name, definition=json.dumps(definition), roleArn=f"arn:aws:iam::{ACCOUNT}:role/orderbatch-{role}"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"]
    wait_for_execution(sfn, execution, timeout=30, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution)
    return described


def denied(cloud: LocalCloud, logical_id: str, action: str, resource: str) -> str:
    """AWS's message for a call the state machine's role does not allow (its session as Step Functions
    names it), the action worded as the service words it."""
    assert cloud.iam is not None
    role_arn = cloud.iam.state_machine_role_arn(cloud.stack.state_machine(logical_id).name)
    assert role_arn is not None
    credentials = cloud.iam.task_credentials(role_arn)
    assert credentials is not None
    identity = cloud.iam.identity(credentials[0])
    assert identity is not None
    return (
        f"User: {identity.arn} is not authorized to perform: {action} on resource: {resource} "
        f"because no identity-based policy allows the {action} action"
    )


def java_details(service: str, status: int, code: str) -> str:
    """The details Step Functions appends to an optimised integration's cause (the AWS SDK for Java's),
    after the local IAM's explanation that ends the denial's message."""
    return (
        r" \(local IAM: role .+ evaluated: .+\)"
        rf" \(Service: {service}; Status Code: {status}; Error Code: {code}; "
        rf"Request ID: {REQUEST_ID}; Proxy: null\)"
    )


def queue_url(name: str) -> str:
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orderbatch-{name}"


# ---------------------------------------------------------------------------------------------- IAM


def test_sqs_send_message_is_allowed_on_the_queue_arn_and_denied_on_its_neighbour(cloud: LocalCloud) -> None:
    sent = run(cloud, "SqsStateMachine", {"queue_url": queue_url("OrdersQueue"), "body": {"order": "o-1"}})
    other = run(cloud, "SqsStateMachine", {"queue_url": queue_url("OtherQueue"), "body": "x"})

    assert sent["status"] == "SUCCEEDED", sent
    received = cloud.client("sqs").receive_message(QueueUrl=queue_url("OrdersQueue"), WaitTimeSeconds=1)
    assert [json.loads(message["Body"]) for message in received["Messages"]] == [{"order": "o-1"}]
    assert other["status"] == "FAILED"
    assert other["error"] == "SQS.AmazonSQSException"
    # SQS lower-cases the action in its denial; its error code is AccessDenied, HTTP 403.
    message = denied(
        cloud, "SqsStateMachine", "sqs:sendmessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:orderbatch-OtherQueue"
    )
    assert re.fullmatch(re.escape(message) + java_details("AmazonSQS", 403, "AccessDenied"), other["cause"])


def test_sns_publish_is_allowed_on_the_topic_and_denied_on_its_neighbour(cloud: LocalCloud) -> None:
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:orderbatch-{{}}"
    published = run(cloud, "SnsStateMachine", {"topic_arn": topic.format("NoticesTopic"), "body": "hello"})
    other = run(cloud, "SnsStateMachine", {"topic_arn": topic.format("OtherTopic"), "body": "hello"})

    assert published["status"] == "SUCCEEDED", published
    assert list(json.loads(published["output"])) == ["MessageId"]
    assert other["status"] == "FAILED"
    assert other["error"] == "SNS.AuthorizationErrorException"
    message = denied(cloud, "SnsStateMachine", "SNS:Publish", topic.format("OtherTopic"))
    assert re.fullmatch(
        re.escape(message) + java_details("AmazonSNS", 403, "AuthorizationError"), other["cause"]
    )


def test_eventbridge_put_events_is_authorised_per_entry_on_its_bus_by_name_or_arn(cloud: LocalCloud) -> None:
    by_name = run(cloud, "EventsStateMachine", {"bus": "orders-bus", "detail": {"order": "o-1"}})
    other_arn = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/other-bus"
    other = run(cloud, "EventsStateMachine", {"bus": other_arn, "detail": {"order": "o-1"}})
    default = run(cloud, "EventsStateMachine", {"bus": "default", "detail": {"order": "o-1"}})

    assert by_name["status"] == "SUCCEEDED", by_name
    assert json.loads(by_name["output"])["FailedEntryCount"] == 0
    assert (other["status"], other["error"]) == ("FAILED", "EventBridge.AccessDeniedException")
    message = denied(cloud, "EventsStateMachine", "events:PutEvents", other_arn)
    assert re.fullmatch(
        re.escape(message) + java_details("AmazonEventBridge", 400, "AccessDeniedException"), other["cause"]
    )
    assert default["error"] == "EventBridge.AccessDeniedException"
    assert f"on resource: arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default " in default["cause"]


def test_dynamodb_optimised_tasks_and_an_index_query_are_allowed_on_the_table_and_denied_on_another(
    cloud: LocalCloud,
) -> None:
    items = run(cloud, "DynamoDbStateMachine", {"table": "orderbatch-ItemsTable", "id": "i-1", "count": 3})
    other = run(cloud, "DynamoDbStateMachine", {"table": "orderbatch-OtherTable", "id": "i-1", "count": 3})

    assert items["status"] == "SUCCEEDED", items
    output = json.loads(items["output"])
    assert output["got"]["Item"] == {"id": {"S": "i-1"}, "status": {"S": "open"}, "count": {"N": "3"}}
    assert output["updated"]["Attributes"]["status"] == {"S": "closed"}
    # The role may Query the index only (table/T/index/ByStatus), not the table.
    assert output["queried"] == {"Count": 1}
    assert "Item" not in cloud.client("dynamodb").get_item(
        TableName="orderbatch-ItemsTable", Key={"id": {"S": "i-1"}}
    )
    assert (other["status"], other["error"]) == ("FAILED", "DynamoDB.AmazonDynamoDBException")
    table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orderbatch-OtherTable"
    message = denied(cloud, "DynamoDbStateMachine", "dynamodb:PutItem", table)
    assert re.fullmatch(
        re.escape(message) + java_details("AmazonDynamoDBv2", 400, "AccessDeniedException"), other["cause"]
    )


def test_s3_sdk_tasks_are_allowed_on_the_bucket_and_its_objects_and_denied_on_another_bucket(
    cloud: LocalCloud,
) -> None:
    archive = run(cloud, "S3StateMachine", {"bucket": "orderbatch-archivebucket", "body": {"order": "o-1"}})
    other = run(cloud, "S3StateMachine", {"bucket": "orderbatch-otherbucket", "body": {"order": "o-1"}})

    assert archive["status"] == "SUCCEEDED", archive
    output = json.loads(archive["output"])
    assert output["listed"] == {"KeyCount": 1}
    assert json.loads(output["got"]["Body"]) == {"order": "o-1"}
    assert (other["status"], other["error"]) == ("FAILED", "S3.AccessDeniedException")
    message = denied(
        cloud, "S3StateMachine", "s3:PutObject", '"arn:aws:s3:::orderbatch-otherbucket/notes/a.json"'
    )
    assert other["cause"].startswith(message + " (local IAM: role ")
    assert ") (Service: S3, Status Code: 403, Request ID: " in other["cause"]


def test_lambda_sdk_tasks_reach_the_whole_lambda_api_and_a_qualified_invoke_needs_the_qualified_arn(
    cloud: LocalCloud,
) -> None:
    echo = run(cloud, "LambdaStateMachine", {"function": "echo", "qualifier": "$LATEST"})
    other = run(cloud, "LambdaStateMachine", {"function": "other", "qualifier": "$LATEST"})

    assert echo["status"] == "SUCCEEDED", echo
    output = json.loads(echo["output"])
    assert sorted(output["listed"]["Names"]) == ["echo", "other"]  # aws-sdk:lambda:listFunctions
    assert output["described"] == {"Name": "echo"}
    assert output["invoked"] == {"Payload": {"hello": "world"}}
    assert (other["status"], other["error"]) == ("FAILED", "Lambda.LambdaException")
    function = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:other"
    message = denied(cloud, "LambdaStateMachine", "lambda:GetFunction", function)
    assert other["cause"].startswith(message + " (local IAM: role ")
    assert ") (Service: Lambda, Status Code: 403, Request ID: " in other["cause"]


def test_step_functions_tasks_start_the_allowed_machine_and_describe_its_execution_only(
    cloud: LocalCloud,
) -> None:
    machine = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{{}}"
    child = run(cloud, "StatesStateMachine", {"machine": machine.format("child")})
    other = run(cloud, "StatesStateMachine", {"machine": machine.format("other-child")})
    waited = run(cloud, "SyncStateMachine", {"machine": machine.format("child")})

    assert child["status"] == "SUCCEEDED", child
    assert json.loads(child["output"])["described"] == {"StateMachineArn": machine.format("child")}
    assert (other["status"], other["error"]) == ("FAILED", "StepFunctions.AWSStepFunctionsException")
    message = denied(cloud, "StatesStateMachine", "states:StartExecution", machine.format("other-child"))
    assert re.fullmatch(
        re.escape(message) + java_details("AWSStepFunctions", 400, "AccessDeniedException"), other["cause"]
    )
    # .sync:2 polls the child with DescribeExecution, which this role was not given.
    assert (waited["status"], waited["error"]) == ("FAILED", "StepFunctions.AWSStepFunctionsException")
    assert "is not authorized to perform: states:DescribeExecution on resource: " in waited["cause"]
    assert ":execution:child:" in waited["cause"]


# ---------------------------------------------------------------------------------------------- failures


def test_dynamodb_parameters_that_cannot_make_the_request_fail_with_states_runtime(cloud: LocalCloud) -> None:
    plain_value = run_definition(
        cloud,
        "plain-attribute-value",
        {
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {"TableName": "orderbatch-ItemsTable", "Item": {"id": "i-2"}},
        },
        role="DynamoDbStateMachineRole",
    )
    encoded_map = run_definition(
        cloud,
        "string-encoded-item",
        {
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {
                "TableName": "orderbatch-ItemsTable",
                "Item.$": "States.JsonToString($$.Execution.Input)",
            },
        },
        role="DynamoDbStateMachineRole",
    )

    assert (plain_value["status"], plain_value["error"]) == ("FAILED", "States.Runtime")
    assert plain_value["cause"] == (
        "An error occurred while executing the state 'Call' (entered at the event id #2). The Parameters "
        '\'{"TableName":"orderbatch-ItemsTable","Item":{"id":"i-2"}}\' could not be used to start the Task: '
        "[The value for the field 'id' must be an OBJECT]"
    )
    assert encoded_map["error"] == "States.Runtime"
    assert encoded_map["cause"].endswith("[The value for the field 'Item' must be an OBJECT]")


@pytest.mark.parametrize(
    "resource",
    [
        "arn:aws:states:::sqs:sendMessage.sync",
        "arn:aws:states:::dynamodb:putItem.waitForTaskToken",
        "arn:aws:states:::codebuild:startBuild.sync",
        "arn:aws:states:::aws-sdk:s3:listBuckets.sync",
    ],
)
def test_an_integration_pattern_the_local_cloud_does_not_run_fails_at_once_naming_it(
    cloud: LocalCloud, resource: str
) -> None:
    name = re.sub(r"[^a-zA-Z0-9-]", "-", resource.rpartition(":::")[2])
    described = run_definition(
        cloud, name, {"Resource": resource, "Parameters": {}}, role="SqsStateMachineRole"
    )

    assert (described["status"], described["error"]) == ("FAILED", "States.Runtime")
    pattern = resource.rpartition(".")[2]
    assert described["cause"] == (
        "An error occurred while executing the state 'Call' (entered at the event id #2). "
        f"The resource '{resource}' cannot run locally: the local cloud does not offer the '{pattern}' "
        "integration pattern for it."
    )


def test_api_gateway_invoke_reaches_the_templates_http_api_signed_and_refuses_other_endpoints(
    cloud: LocalCloud,
) -> None:
    endpoint = cloud.stack.outputs["ApiEndpoint"]
    local = run(cloud, "ApiStateMachine", {"endpoint": endpoint, "path": "/echo"})
    empty = run(cloud, "ApiStateMachine", {"endpoint": endpoint, "path": "/empty"})
    unknown = run(
        cloud, "ApiStateMachine", {"endpoint": "abc123.execute-api.us-east-1.amazonaws.com", "path": "/echo"}
    )
    internet = run(cloud, "ApiStateMachine", {"endpoint": "https://example.com", "path": "/echo"})

    assert local["status"] == "SUCCEEDED", local
    output = json.loads(local["output"])
    assert output["StatusCode"] == 200
    assert json.loads(output["Body"]["body"]) == {"order": "o-1"}  # the request body the function was given
    # An answer with no body is a success with an empty ResponseBody, not a JSON decoding failure.
    assert (empty["status"], json.loads(empty["output"])) == ("SUCCEEDED", {"StatusCode": 200, "Body": ""})
    assert (unknown["status"], unknown["error"], unknown["cause"]) == (
        "FAILED",
        "ApiGateway.404",
        '{"message": "Not Found"}',
    )
    assert (internet["status"], internet["error"]) == ("FAILED", "ApiGateway.EndpointNotLocalError")
    assert internet["cause"].startswith(
        "The API endpoint 'https://example.com' is not an API of the local cloud"
    )


def test_a_wait_for_task_token_task_ends_with_what_its_worker_sends_back_error_and_cause_included(
    cloud: LocalCloud,
) -> None:
    sfn, sqs = cloud.client("stepfunctions"), cloud.client("sqs")
    definition = {
        "StartAt": "Ask",
        "States": {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {
                    "QueueUrl": queue_url("OrdersQueue"),
                    "MessageBody": {"token.$": "$$.Task.Token", "reply.$": "$.reply"},
                },
                "TimeoutSeconds": 30,
                "End": True,
            }
        },
    }
    machine = sfn.create_state_machine(
        name="callback",
        definition=json.dumps(definition),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/orderbatch-SqsStateMachineRole",
    )["stateMachineArn"]
    executions = {
        reply: sfn.start_execution(stateMachineArn=machine, input=json.dumps({"reply": reply}))[
            "executionArn"
        ]
        for reply in ("success", "failure")
    }

    answered = 0
    while answered < len(executions):  # bounded: each receive waits at most 5 s, and fails the test if empty
        messages = sqs.receive_message(QueueUrl=queue_url("OrdersQueue"), WaitTimeSeconds=5)["Messages"]
        for message in messages:
            body = json.loads(message["Body"])
            # IAM authorises the answer on the state machine waiting for it.
            assert task_token_resource(ACCOUNT, REGION, body["token"]) == machine
            if body["reply"] == "success":
                sfn.send_task_success(taskToken=body["token"], output=json.dumps({"approved": True}))
            else:
                sfn.send_task_failure(taskToken=body["token"], error="Rejected", cause="over the limit")
            sqs.delete_message(QueueUrl=queue_url("OrdersQueue"), ReceiptHandle=message["ReceiptHandle"])
            answered += 1
    for arn in executions.values():
        wait_for_execution(sfn, arn, timeout=30, poll_seconds=0.1)
    succeeded = sfn.describe_execution(executionArn=executions["success"])
    failed = sfn.describe_execution(executionArn=executions["failure"])

    assert (succeeded["status"], json.loads(succeeded["output"])) == ("SUCCEEDED", {"approved": True})
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Rejected", "over the limit")


def test_an_object_message_body_is_sent_as_compact_json_and_its_md5_is_that_texts(cloud: LocalCloud) -> None:
    sqs = cloud.client("sqs")
    task = {
        "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": queue_url("OrdersQueue"), "MessageBody": {"hello": "world", "n": [1, 2]}},
    }

    described = run_definition(cloud, "compact-body", task, "SqsStateMachineRole")
    received = sqs.receive_message(QueueUrl=queue_url("OrdersQueue"), WaitTimeSeconds=5)["Messages"]
    sqs.delete_message(QueueUrl=queue_url("OrdersQueue"), ReceiptHandle=received[0]["ReceiptHandle"])

    assert described["status"] == "SUCCEEDED"
    assert received[0]["Body"] == '{"hello":"world","n":[1,2]}'
    # AWS's answer for sfn-sqs's README input {"hello": "world"}: the MD5 of {"hello":"world"}
    expected_md5 = hashlib.md5(b'{"hello":"world","n":[1,2]}').hexdigest()
    assert json.loads(described["output"])["MD5OfMessageBody"] == expected_md5
