"""Queues, event buses and rules, SNS subscriptions and event source mappings, and the rules SAM makes of
a function's or state machine's EventBridgeRule, CloudWatchEvent and Schedule events."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sam_local_cloud.event_sources import mapping_from_resource
from sam_local_cloud.stack.model import EventRuleSpec, LocalStack, QueueSpec, SubscriptionSpec


def add_messaging_resource(
    stack: LocalStack, logical_id: str, kind: str, props: Mapping[str, Any], ids: Mapping[str, str]
) -> bool:
    """Queues, buses, rules, subscriptions, event source mappings and roles; False for any other kind."""
    if kind == "AWS::SQS::Queue":
        stack.queues.append(QueueSpec(logical_id, ids["QueueName"], ids["Ref"], _queue_attributes(props)))
    elif kind == "AWS::Events::EventBus":
        stack.event_buses[logical_id] = ids["Ref"]
    elif kind == "AWS::Events::Rule":
        stack.event_rules.append(_event_rule(logical_id, ids["Ref"], props))
    elif kind == "AWS::SNS::Subscription":
        stack.subscriptions.append(
            SubscriptionSpec(
                logical_id,
                topic_arn=str(props.get("TopicArn")),
                protocol=str(props.get("Protocol")),
                endpoint=str(props.get("Endpoint")),
                attributes={
                    name: value if isinstance(value, str) else json.dumps(value)
                    for name in ("FilterPolicy", "RawMessageDelivery", "FilterPolicyScope", "RedrivePolicy")
                    if (value := props.get(name)) is not None
                },
            )
        )
    elif kind == "AWS::Lambda::EventSourceMapping":
        mapping = mapping_from_resource(props)
        if mapping is None:
            stack.not_honoured.append(f"{logical_id}: only SQS event sources are polled locally")
        else:
            stack.queue_mappings.append(mapping)
    elif kind != "AWS::IAM::Role":  # roles are read by the IAM module (docs/iam.md)
        return False
    return True


# CloudFormation's AWS::SQS::Queue properties that are CreateQueue attributes of the same name.
_QUEUE_ATTRIBUTES = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
)


def _queue_attributes(props: Mapping[str, Any]) -> dict[str, str]:
    attributes = {
        name: ("true" if value is True else "false" if value is False else str(value))
        for name in _QUEUE_ATTRIBUTES
        if (value := props.get(name)) is not None
    }
    for name in ("RedrivePolicy", "RedriveAllowPolicy"):
        if props.get(name) is not None:
            value = props[name]
            attributes[name] = value if isinstance(value, str) else json.dumps(value)
    return attributes


def _event_rule(logical_id: str, name: str, props: Mapping[str, Any]) -> EventRuleSpec:
    bus = props.get("EventBusName") or "default"
    pattern = props.get("EventPattern")
    return EventRuleSpec(
        logical_id=logical_id,
        name=name,
        event_bus=str(bus),
        event_pattern=json.dumps(pattern) if isinstance(pattern, dict) else pattern,
        schedule=props.get("ScheduleExpression"),
        targets=[dict(target) for target in props.get("Targets") or []],
    )


RULE_EVENT_TYPES = ("EventBridgeRule", "CloudWatchEvent", "Schedule")


def event_source_rules(logical_id: str, target_arn: str, props: Mapping[str, Any]) -> list[EventRuleSpec]:
    """The rules SAM makes of a function's or state machine's EventBridgeRule, CloudWatchEvent and
    Schedule events: named ``<LogicalId><EventId>`` unless ``RuleName`` / ``Name`` says otherwise."""
    rules = []
    for event_id, event in (props.get("Events") or {}).items():
        if event.get("Type") not in RULE_EVENT_TYPES:
            continue
        source = event.get("Properties") or {}
        target: dict[str, Any] = {"Id": (source.get("Target") or {}).get("Id") or f"{logical_id}{event_id}"}
        target["Arn"] = target_arn
        for key in ("Input", "InputPath", "InputTransformer"):
            if source.get(key) is not None:
                target[key] = source[key]
        pattern = source.get("Pattern")
        rules.append(
            EventRuleSpec(
                logical_id=f"{logical_id}{event_id}",
                name=str(source.get("RuleName") or source.get("Name") or f"{logical_id}{event_id}"),
                event_bus=str(source.get("EventBusName") or "default"),
                event_pattern=json.dumps(pattern) if isinstance(pattern, dict) else pattern,
                schedule=source.get("Schedule"),
                targets=[target],
            )
        )
    return rules
