"""A stack's resources created through the services' own APIs, as CloudFormation creates them.

Every table, bucket, topic, queue, log group, rule, state machine and alarm of the template is created by
the call a deployment makes on AWS, with the deployer's credentials, so that each service validates it as
it would there: a definition CreateStateMachine refuses stops the start with that resource's logical ID
and the service's own words (CloudFormation's CREATE_FAILED).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from sam_local_cloud.stack import LOCAL_ROLE_ARN as LOCAL_ROLE_ARN
from sam_local_cloud.stack import LocalStack, TemplateError, local_role_arn

ClientFactory = Callable[[str], Any]
DefinitionTransform = Callable[[str, Any], Any]


class StackDeployer:
    """Creates the stack's resources; ``client_for(service)`` makes the deployer's client of a service.

    A service's client is made on first use: a service the stack does not use costs no client (the first
    client of each service in a process loads botocore's model of it, 0.05-0.25 s).
    """

    def __init__(
        self,
        stack: LocalStack,
        client_for: ClientFactory,
        role_of: Callable[[str], str | None] | None = None,
        definition_transform: DefinitionTransform | None = None,
    ) -> None:
        self.stack = stack
        self._client_for = client_for
        self._clients: dict[str, Any] = {}
        self._role_of = role_of
        self._definition_transform = definition_transform

    def client(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            client = self._clients[service] = self._client_for(service)
        return client

    def deploy(self) -> None:
        stack = self.stack
        for table in stack.tables:
            arguments: dict[str, Any] = {
                "TableName": table.name,
                "KeySchema": table.key_schema,
                "AttributeDefinitions": table.attribute_definitions,
                "BillingMode": "PAY_PER_REQUEST",
            }
            if table.global_secondary_indexes:
                arguments["GlobalSecondaryIndexes"] = table.global_secondary_indexes
            self.client("dynamodb").create_table(**arguments)
            if table.ttl_attribute:
                self.client("dynamodb").update_time_to_live(
                    TableName=table.name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )
        for bucket in stack.buckets.values():
            self.client("s3").create_bucket(Bucket=bucket)
        for topic in stack.topics.values():
            self.client("sns").create_topic(Name=topic)
        # A dead-letter queue must exist before the queue whose RedrivePolicy names it, as CloudFormation
        # orders them by that GetAtt.
        for queue in sorted(stack.queues, key=lambda queue: "RedrivePolicy" in queue.attributes):
            self.client("sqs").create_queue(QueueName=queue.name, Attributes=queue.attributes)
        for subscription in stack.subscriptions:
            self.client("sns").subscribe(
                TopicArn=subscription.topic_arn,
                Protocol=subscription.protocol,
                Endpoint=subscription.endpoint,
                Attributes=subscription.attributes,
            )
        for group in stack.log_groups.values():
            self.client("logs").create_log_group(logGroupName=group)
        self._create_event_rules()
        self._create_state_machines()
        self._create_alarms()

    def _create_state_machines(self) -> None:
        for activity in self.stack.activities.values():  # a Task's Resource may be one of them
            self.client("stepfunctions").create_activity(name=activity)
        for machine in self.stack.state_machines:
            definition = machine.definition
            if self._definition_transform is not None:
                transformed = self._definition_transform(machine.logical_id, json.loads(definition))
                definition = json.dumps(transformed)
            # The template's role when IAM is enforced: the interpreter hands it to every Task's client.
            role_of = self._role_of(machine.name) if self._role_of else None
            role_arn = role_of or local_role_arn(self.stack.account_id)
            try:
                self.client("stepfunctions").create_state_machine(
                    name=machine.name,
                    definition=definition,
                    roleArn=role_arn,
                    type=machine.type,
                    **({"loggingConfiguration": machine.logging} if machine.logging else {}),
                )
            except ClientError as error:
                # As CloudFormation's CREATE_FAILED would: which resource, and the service's own words.
                if error.response["Error"]["Code"] != "InvalidDefinition":
                    raise
                raise TemplateError(f"{machine.logical_id}: {error.response['Error']['Message']}") from error

    def _create_event_rules(self) -> None:
        for bus in self.stack.event_buses.values():
            self.client("events").create_event_bus(Name=bus)
        for rule in self.stack.event_rules:
            arguments: dict[str, Any] = {"Name": rule.name, "EventBusName": rule.event_bus}
            if rule.event_pattern:
                arguments["EventPattern"] = rule.event_pattern
            if rule.schedule:
                arguments["ScheduleExpression"] = rule.schedule
            self.client("events").put_rule(**arguments)
            if rule.targets:
                self.client("events").put_targets(
                    Rule=rule.name, EventBusName=rule.event_bus, Targets=rule.targets
                )
            # moto delivers a rule's events to SQS queues, log groups and other buses only.
            for target in rule.targets:
                service = str(target.get("Arn", "")).split(":")[2:3]
                if service and service[0] not in ("sqs", "logs", "events"):
                    self.stack.not_honoured.append(
                        f"{rule.logical_id}: events are not delivered to {service[0]} targets locally"
                    )

    def _create_alarms(self) -> None:
        for logical_id, props in self.stack.alarms.items():
            arguments = {key: value for key, value in props.items() if value is not None}
            arguments.setdefault("AlarmName", f"{self.stack.stack_name}-{logical_id}")
            try:
                self.client("cloudwatch").put_metric_alarm(**arguments)
            except Exception as error:
                self.stack.not_honoured.append(f"{logical_id}: alarm not created locally ({error})")


def parse_ahead(stack: LocalStack, definition_transform: DefinitionTransform | None) -> None:
    """Parse each state machine's definition once ahead (``stepfunctions.parse_trees`` keeps the syntax
    tree), so that CreateStateMachine finds it parsed. A definition that does not parse is refused there,
    in the deployment, as AWS refuses it. Only as many as are kept: with more, the first would be forgotten
    before CreateStateMachine reads them, and every definition parsed twice."""
    from sam_local_cloud.moto_seam.stepfunctions import AmazonStateLanguageParser
    from sam_local_cloud.stepfunctions.parse_trees import PARSE_TREES_KEPT

    if definition_transform is not None:
        return
    for machine in stack.state_machines[:PARSE_TREES_KEPT]:
        with contextlib.suppress(Exception):
            AmazonStateLanguageParser.parse(machine.definition)
