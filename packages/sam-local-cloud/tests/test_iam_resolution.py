"""Policies on resources named by Ref and Fn::GetAtt are matched to what the request touches.

The policies of iam_fixture/resolution_template.yaml name a bus by ``!GetAtt Bus.Arn`` and through SAM's
``EventBridgePutEventsPolicy`` (a bus's Ref is its name), a topic by ``!GetAtt Topic.TopicArn`` and ``!Ref``,
and a queue through a Connector (standalone, and embedded in a function), each named with an intrinsic. Each
request is the one the service receives; the same call on a neighbour the policies do not name is denied,
so no check passes by accident. Decided by the enforcer alone: no process is started.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud.iam import IamEnforcer, Identity, build_roles, requested_access
from sam_local_cloud.stack import LocalStack, TemplateError, load_stack
from sam_local_cloud.stack.return_values import RESOURCE_TYPES, SAM_TYPES

TEMPLATE = Path(__file__).resolve().parent / "iam_fixture" / "resolution_template.yaml"
ACCOUNT = "123456789012"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def stack() -> LocalStack:
    return load_stack(TEMPLATE)


@pytest.fixture(scope="module")
def enforcer(stack: LocalStack) -> IamEnforcer:
    return IamEnforcer(build_roles(stack), region=REGION, account_id=ACCOUNT)


def machine(enforcer: IamEnforcer) -> Identity:
    role_arn = enforcer.state_machine_role_arn("publisher")
    assert role_arn is not None
    credentials = enforcer.task_credentials(role_arn)
    assert credentials is not None
    identity = enforcer.identity(credentials[0])
    assert identity is not None
    return identity


def function(enforcer: IamEnforcer) -> Identity:
    identity = enforcer.identity(enforcer.function_environment("PublisherFunction")["AWS_ACCESS_KEY_ID"])
    assert identity is not None
    return identity


def decision(enforcer: IamEnforcer, identity: Identity, service: str, environ: dict[str, Any]) -> str:
    accesses = requested_access(service, environ, REGION, ACCOUNT)
    assert accesses, "the request's resource is derived"
    return "allowed" if enforcer.first_denied(identity, accesses) is None else "denied"


def json_request(target: str, body: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    return {"wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw)), "HTTP_X_AMZ_TARGET": target}


def query_request(body: str) -> dict[str, Any]:
    return {"wsgi.input": io.BytesIO(body.encode()), "CONTENT_LENGTH": str(len(body))}


def put_events(bus: str) -> dict[str, Any]:
    entry = {"EventBusName": bus, "Source": "orders", "DetailType": "placed", "Detail": "{}"}
    return json_request("AWSEvents.PutEvents", {"Entries": [entry]})


def test_put_events_names_the_bus_by_name_and_the_policy_on_its_arn_allows_it(
    stack: LocalStack, enforcer: IamEnforcer
) -> None:
    # The Task's EventBusName is !Ref Bus: the bus's name, as CloudFormation resolves it.
    definition = json.loads(stack.state_machine("PublisherMachine").definition)
    assert definition["States"]["Announce"]["Parameters"]["Entries"][0]["EventBusName"] == "orderbatch-orders"

    for identity in (machine(enforcer), function(enforcer)):
        assert decision(enforcer, identity, "events", put_events("orderbatch-orders")) == "allowed"
        assert decision(enforcer, identity, "events", put_events("other")) == "denied"


def test_publish_is_allowed_by_a_policy_on_the_topic_s_topic_arn_or_ref(enforcer: IamEnforcer) -> None:
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:{{}}"
    for identity in (machine(enforcer), function(enforcer)):
        publish = f"Action=Publish&Message=hi&TopicArn={topic.format('orderbatch-notices')}"
        assert decision(enforcer, identity, "sns", query_request(publish)) == "allowed"
        other = f"Action=Publish&Message=hi&TopicArn={topic.format('orderbatch-OtherTopic')}"
        assert decision(enforcer, identity, "sns", query_request(other)) == "denied"


def test_a_connector_s_policy_takes_part_in_its_source_role_s_decisions(enforcer: IamEnforcer) -> None:
    queue_url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{{}}"
    for identity in (machine(enforcer), function(enforcer)):
        send = {"QueueUrl": queue_url.format("orderbatch-work"), "MessageBody": "x"}
        assert decision(enforcer, identity, "sqs", json_request("AmazonSQS.SendMessage", send)) == "allowed"
        other = {"QueueUrl": queue_url.format("orderbatch-OtherQueue"), "MessageBody": "x"}
        assert decision(enforcer, identity, "sqs", json_request("AmazonSQS.SendMessage", other)) == "denied"


def test_an_attribute_the_type_does_not_document_fails_with_cloudformation_s_message(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Resources:\n"
        "  Topic: {Type: AWS::SNS::Topic}\n"
        "  Queue: {Type: AWS::SQS::Queue, Properties: {VisibilityTimeout: 30}}\n"
        "Outputs:\n"
        "  Wrong: {Value: !GetAtt Topic.Arn}\n"
        "  Right: {Value: !Sub '${Queue.VisibilityTimeout}'}\n"
    )
    with pytest.raises(TemplateError) as raised:
        load_stack(template)
    assert (
        str(raised.value)
        == "Template error: resource Topic does not support attribute type Arn in Fn::GetAtt"
    )

    template.write_text(template.read_text().replace("Topic.Arn", "Topic.TopicName"))
    assert load_stack(template).outputs == {"Wrong": "sam-app-Topic", "Right": "30"}


def test_each_type_documents_the_attributes_cloudformation_s_schema_lists() -> None:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    for kind, resource_type in RESOURCE_TYPES.items():
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(REGION, SAM_TYPES.get(kind, kind))
        assert resource_type.attributes == frozenset(schema.get_atts), kind


def test_a_denial_names_the_statements_evaluated_and_why_none_allowed_it(enforcer: IamEnforcer) -> None:
    other_queue = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orderbatch-OtherQueue"
    environ = json_request("AmazonSQS.SendMessage", {"QueueUrl": other_queue, "MessageBody": "x"})
    environ["HTTP_AUTHORIZATION"] = (
        f"AWS4-HMAC-SHA256 Credential={machine(enforcer).access_key_id}/20260101/{REGION}/sqs/aws4_request"
    )
    answers: list[tuple[str, Any]] = []
    body = enforcer.refuse(environ, lambda status, headers: answers.append((status, headers)))

    assert body is not None
    assert answers[0][0] == "403 Forbidden"
    message = json.loads(body[0])["Message"]
    queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{{}}"
    # AWS's message first, as boto3 shows it; then the statements, the one naming the action first.
    assert message.startswith(
        f"User: {machine(enforcer).arn} is not authorized to perform: sqs:sendmessage on resource: "
        f"{queue_arn.format('orderbatch-OtherQueue')} because no identity-based policy allows the "
        "sqs:sendmessage action (local IAM: role orderbatch-PublisherMachineRole evaluated: "
        "MachineToQueuePolicy statement 1 (Allow): resource not matched (the request is on "
        f"{queue_arn.format('orderbatch-OtherQueue')}, the statement on "
        f"{queue_arn.format('orderbatch-work')}); "
        "PublisherMachineRolePolicy0 statement 1 (Allow): action not matched (the statement's Action "
        "events:PutEvents);"
    )


def test_an_explicit_deny_is_named_as_the_reason(tmp_path: Path) -> None:
    from sam_local_cloud.iam import Access, Role, StackRoles

    table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders"
    document = {
        "Statement": [
            {"Sid": "Everything", "Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
            {"Sid": "NoDeletes", "Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": table},
        ]
    }
    role = Role("FnRole", "fn-role", f"arn:aws:iam::{ACCOUNT}:role/fn-role", (document,), ("Guard",))
    roles = StackRoles(functions={"fn": role})
    report = tmp_path / "report.jsonl"
    for report_to in (None, report):
        checker = IamEnforcer(roles, region=REGION, account_id=ACCOUNT, report_to=report_to)
        identity = checker.identity(checker.function_environment("fn")["AWS_ACCESS_KEY_ID"])
        assert identity is not None
        denial = checker.refused(identity, [Access("dynamodb:DeleteItem", table)])
        if report_to is None:
            assert denial is not None
            assert denial.message().endswith(
                "with an explicit deny in an identity-based policy (local IAM: role fn-role evaluated: "
                "Guard NoDeletes (Deny): explicit Deny; Guard Everything (Allow): allows it, an explicit "
                "Deny overrides it)"
            )
        else:  # report mode: allowed, and reported
            assert denial is None
            assert checker.would_be_denials() == [
                {
                    "principal": identity.arn,
                    "action": "dynamodb:DeleteItem",
                    "resource": table,
                    "why": "role fn-role evaluated: Guard NoDeletes (Deny): explicit Deny; "
                    "Guard Everything (Allow): allows it, an explicit Deny overrides it",
                    "explicit_deny": True,
                }
            ]
