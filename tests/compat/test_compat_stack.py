"""Resources beside functions and tables, as public SAM apps declare them, created by the local cloud.

Given a template with a SimpleTable, two queues (one FIFO, one with a redrive policy), an SNS subscription,
an event bus with a rule and a plain AWS::StepFunctions::StateMachine, the local cloud must name each as
CloudFormation's Ref and GetAtt would, create it, and deliver through it as the services do.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stack import load_stack

TEMPLATE = Path(__file__).resolve().parent / "fixtures" / "messaging" / "template.yaml"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/sam-app-WorkQueue"


def test_refs_and_attributes_are_what_cloudformation_returns() -> None:
    stack = load_stack(TEMPLATE)

    assert stack.outputs["WorkQueueUrl"] == QUEUE_URL
    queues = {queue.logical_id: queue for queue in stack.queues}
    assert queues["OrderedWork"].name == "sam-app-OrderedWork.fifo"
    assert queues["OrderedWork"].attributes == {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    assert queues["DeadLetters"].attributes == {"MessageRetentionPeriod": "1209600"}
    redrive = json.loads(queues["WorkQueue"].attributes["RedrivePolicy"])
    assert redrive == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:sam-app-DeadLetters",
        "maxReceiveCount": 3,
    }
    table = next(t for t in stack.tables if t.logical_id == "Orders")
    assert table.key_schema == [{"AttributeName": "order_id", "KeyType": "HASH"}]
    assert stack.event_buses == {"OrderBus": "order-bus"}
    rule, _, from_sam_event = stack.event_rules
    assert rule.event_bus == "order-bus"
    assert (from_sam_event.name, from_sam_event.event_bus) == ("RecordCancellationCancelled", "order-bus")
    assert from_sam_event.targets == [
        {
            "Id": "RecordCancellationCancelled",
            "Arn": "arn:aws:states:us-east-1:123456789012:stateMachine:sam-app-RecordCancellation",
            "InputPath": "$.detail",
        }
    ]
    assert rule.targets == [{"Id": "queue", "Arn": "arn:aws:sqs:us-east-1:123456789012:sam-app-WorkQueue"}]
    machine = stack.state_machine("Announce")
    assert json.loads(machine.definition)["States"]["Send"]["Parameters"]["QueueUrl"] == QUEUE_URL


@pytest.mark.e2e
def test_messages_flow_through_the_created_resources() -> None:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as cloud:
        sqs, sns, events, sfn = (cloud.client(name) for name in ("sqs", "sns", "events", "stepfunctions"))
        # Given the deployed stack, when a message goes out through each path ...
        topic_arn = sns.list_topics()["Topics"][0]["TopicArn"]
        sns.publish(TopicArn=topic_arn, Message="via sns")
        answer = events.put_events(
            Entries=[
                {
                    "Source": "shop.orders",
                    "DetailType": "Shipped",
                    "Detail": '{"id": 7}',
                    "EventBusName": "order-bus",
                },
                {
                    "Source": "shop.orders",
                    "DetailType": "Returned",
                    "Detail": '{"order": "o-1"}',
                    "EventBusName": "order-bus",
                },
            ]
        )
        assert answer["FailedEntryCount"] == 0
        machine_arn = cloud.stack.state_machine("Announce").arn
        execution = sfn.start_execution(stateMachineArn=machine_arn, input='{"via": "step functions"}')
        assert wait_for_execution(sfn, execution["executionArn"], timeout=30) == "SUCCEEDED"
        # The Returned event started the machine through its rule, with the event's detail as input.
        started_by_rule = [
            sfn.describe_execution(executionArn=e["executionArn"])["input"]
            for e in sfn.list_executions(stateMachineArn=machine_arn)["executions"]
            if e["executionArn"] != execution["executionArn"]
        ]
        assert [json.loads(text) for text in started_by_rule] == [{"order": "o-1"}]
        # A SAM EventBridgeRule event on a state machine starts it the same way.
        events.put_events(
            Entries=[
                {
                    "Source": "shop.orders",
                    "DetailType": "Cancelled",
                    "Detail": '{"order": "o-2"}',
                    "EventBusName": "order-bus",
                }
            ]
        )
        recorder_arn = cloud.stack.state_machine("RecordCancellation").arn
        for _ in range(20):
            recorded = sfn.list_executions(stateMachineArn=recorder_arn)["executions"]
            if recorded:
                break
            time.sleep(0.25)
        (cancellation,) = recorded
        assert json.loads(sfn.describe_execution(executionArn=cancellation["executionArn"])["input"]) == {
            "order": "o-2"
        }

        # ... then the queue holds the SNS message raw, the matching event only, and the Task's message.
        bodies = []
        for _ in range(10):
            received = sqs.receive_message(QueueUrl=QUEUE_URL, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            bodies += [message["Body"] for message in received.get("Messages", [])]
            if len(bodies) >= 4:
                break
        assert "via sns" in bodies
        assert json.loads('{"via": "step functions"}') in [json.loads(b) for b in bodies if b.startswith("{")]
        shipped = [json.loads(b) for b in bodies if b.startswith("{") and "detail-type" in b]
        assert [event["detail-type"] for event in shipped] == ["Shipped"]
        assert len(bodies) == 4  # the rule's execution sent its input too
