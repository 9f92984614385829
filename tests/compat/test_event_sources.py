"""Lambda's SQS event sources on the local cloud: batches, partial failures, dead letters, task tokens.

Given a queue with a dead-letter queue after two receives and a function that reports the message it
cannot take, and a state machine that waits for a task token answered by a queue-triggered function,
messages must be delivered in Lambda's record shape, deleted once handled, redriven when reported failed,
and the waiting execution must end with the answer.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution

TEMPLATE = Path(__file__).resolve().parent / "fixtures" / "sqs_trigger" / "template.yaml"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/sam-app-{}"


@pytest.mark.e2e
def test_queue_messages_reach_their_functions_and_failures_end_in_the_dead_letter_queue() -> None:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as cloud:
        sqs, dynamodb, sfn = (cloud.client(name) for name in ("sqs", "dynamodb", "stepfunctions"))
        # When three messages arrive, one of which the function reports as failed ...
        for body in ("apple", "poison", "pear"):
            sqs.send_message(QueueUrl=QUEUE_URL.format("Incoming"), MessageBody=body)
        execution = sfn.start_execution(
            stateMachineArn=cloud.stack.state_machine("ApprovalFlow").arn, input='{"order": "o-9"}'
        )

        # ... then the two it took are recorded once each, with Lambda's event source name,
        table = cloud.stack.table_name("Bodies")
        deadline = time.monotonic() + 30
        rejected: list[dict[str, str]] = []
        while time.monotonic() < deadline and not rejected:
            rejected = sqs.receive_message(QueueUrl=QUEUE_URL.format("Rejected"), WaitTimeSeconds=1).get(
                "Messages", []
            )
        items = dynamodb.scan(TableName=table)["Items"]
        assert sorted((item["id"]["S"], item["source"]["S"]) for item in items) == [
            ("apple", "aws:sqs"),
            ("pear", "aws:sqs"),
        ]
        # the reported one went to the dead-letter queue after its two receives, and none is left behind;
        assert [message["Body"] for message in rejected] == ["poison"]
        left = sqs.get_queue_attributes(
            QueueUrl=QUEUE_URL.format("Incoming"), AttributeNames=["ApproximateNumberOfMessages"]
        )
        assert left["Attributes"]["ApproximateNumberOfMessages"] == "0"
        # and the execution waiting on its task token ended with the queue-triggered function's answer.
        assert wait_for_execution(sfn, execution["executionArn"], timeout=30) == "SUCCEEDED"
        output = sfn.describe_execution(executionArn=execution["executionArn"])["output"]
        assert json.loads(output) == {"approved": "o-9"}
