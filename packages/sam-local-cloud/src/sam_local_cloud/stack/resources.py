"""Each resource of the resolved template into the ``LocalStack``, by type; what has no local effect is
noted in ``not_honoured``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sam_local_cloud.event_sources import mappings_from_template
from sam_local_cloud.stack.apis import add_definition_routes, http_routes
from sam_local_cloud.stack.functions import function_spec, layers_of
from sam_local_cloud.stack.messaging import add_messaging_resource, event_source_rules
from sam_local_cloud.stack.model import LocalStack, TableSpec, note_unhonoured
from sam_local_cloud.stack.state_machines import (
    add_state_machine,
    as_serverless_machine,
    state_machine_spec,
)


# add_layer's parameters, kept apart: template.py adds every layer (functions name them) before the rest.
def add_resource(
    stack: LocalStack,
    logical_id: str,
    resource: Mapping[str, Any],
    physical: Mapping[str, Mapping[str, str]],
    base_dir: Path,
) -> None:
    kind = resource.get("Type", "")
    props: dict[str, Any] = resource.get("Properties") or {}
    ref = physical[logical_id]["Ref"]
    if (table := _table_spec(logical_id, kind, ref, props)) is not None:
        stack.tables.append(table)
    elif add_messaging_resource(stack, logical_id, kind, props, physical[logical_id]):
        return
    elif kind == "AWS::StepFunctions::StateMachine":
        stack.state_machines.append(
            state_machine_spec(logical_id, physical[logical_id], as_serverless_machine(props), base_dir)
        )
        return
    elif kind in _NAMED_RESOURCES:
        registry, returned = _NAMED_RESOURCES[kind]
        registry(stack)[logical_id] = physical[logical_id][returned]
    elif kind in ("AWS::Serverless::Function", "AWS::Serverless::StateMachine"):
        _add_serverless_compute(stack, logical_id, kind, props, physical, base_dir)
    elif kind == "AWS::Lambda::Function":
        _add_cloudformation_function(stack, logical_id, props, physical[logical_id]["Ref"], base_dir)
    elif kind == "AWS::Serverless::HttpApi":
        if (props.get("Auth") or {}).get("DefaultAuthorizer") not in (None, "AWS_IAM"):
            stack.not_honoured.append(f"{logical_id}: only AWS_IAM authorization is emulated locally")
        add_definition_routes(stack, logical_id, props, stage=None)
        return
    elif kind == "AWS::Serverless::Api":
        add_definition_routes(stack, logical_id, props, stage=str(props.get("StageName", "Prod")))
    elif kind == "AWS::CloudWatch::Alarm":
        # CloudFormation coerces the template's strings to the API's numbers; boto3 does not.
        stack.alarms[logical_id] = _numbers_where_expected(props)
        return
    else:
        stack.not_honoured.append(f"{logical_id} ({kind}): resource type not created locally")
        return
    note_unhonoured(stack, logical_id, kind, props)


# Types the deployer creates by name alone: where the stack keeps them, and which return value is the name.
_NAMED_RESOURCES: dict[str, tuple[Callable[[LocalStack], dict[str, str]], str]] = {
    "AWS::S3::Bucket": (lambda stack: stack.buckets, "Ref"),
    "AWS::SNS::Topic": (lambda stack: stack.topics, "TopicName"),
    "AWS::Logs::LogGroup": (lambda stack: stack.log_groups, "Ref"),
    "AWS::StepFunctions::Activity": (lambda stack: stack.activities, "Name"),
}


def _add_serverless_compute(
    stack: LocalStack,
    logical_id: str,
    kind: str,
    props: Mapping[str, Any],
    physical: Mapping[str, Mapping[str, str]],
    base_dir: Path,
) -> None:
    """A SAM function or state machine, and what its ``Events`` make: routes, rules, queue pollers."""
    ids = physical[logical_id]
    events = props.get("Events") or {}
    if kind == "AWS::Serverless::Function":
        stack.functions.append(
            function_spec(logical_id, ids["Ref"], props, base_dir, layers_of(stack, logical_id, props))
        )
        stack.routes.extend(http_routes(ids["Ref"], events, physical))
        stack.queue_mappings.extend(mappings_from_template(ids["Ref"], events))
    else:
        add_state_machine(stack, state_machine_spec(logical_id, ids, props, base_dir))
    stack.event_rules.extend(event_source_rules(logical_id, ids["Arn"], props))


def _add_cloudformation_function(
    stack: LocalStack, logical_id: str, props: Mapping[str, Any], name: str, base_dir: Path
) -> None:
    """A plain CloudFormation function: its ``Code`` written in the template (``ZipFile``) or a local folder
    or .zip (as ``aws cloudformation package`` takes it before uploading) is run as SAM's ``InlineCode``
    or ``CodeUri``; its other properties have SAM's names and meanings. Code in Amazon S3, or an image,
    is AWS's to fetch: that function is not created here, and the rest of the stack still is."""
    code = props.get("Code")
    if isinstance(code, Mapping) and isinstance(code.get("ZipFile"), str):
        source: dict[str, Any] = {"InlineCode": code["ZipFile"]}
    elif isinstance(code, str):
        source = {"CodeUri": code}
    else:
        stack.not_honoured.append(
            f"{logical_id}.Code: in Amazon S3 or an image registry, which AWS would fetch; the function is "
            "not created locally (point Code at a local folder, or use AWS::Serverless::Function's CodeUri)"
        )
        return
    as_serverless = {key: value for key, value in props.items() if key != "Code"} | source
    layers = layers_of(stack, logical_id, props)
    stack.functions.append(function_spec(logical_id, name, as_serverless, base_dir, layers))


def _table_spec(logical_id: str, kind: str, name: str, props: Mapping[str, Any]) -> TableSpec | None:
    """A DynamoDB table, or SAM's SimpleTable (one hash key, ``id`` of type String unless ``PrimaryKey``
    says otherwise); None for any other kind."""
    if kind == "AWS::DynamoDB::Table":
        ttl = props.get("TimeToLiveSpecification") or {}
        return TableSpec(
            logical_id=logical_id,
            name=name,
            key_schema=props["KeySchema"],
            attribute_definitions=props["AttributeDefinitions"],
            ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
            global_secondary_indexes=props.get("GlobalSecondaryIndexes") or [],
        )
    if kind == "AWS::Serverless::SimpleTable":
        key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        key_type = _SIMPLE_TABLE_TYPES[key.get("Type", "String")]
        return TableSpec(
            logical_id=logical_id,
            name=name,
            key_schema=[{"AttributeName": key["Name"], "KeyType": "HASH"}],
            attribute_definitions=[{"AttributeName": key["Name"], "AttributeType": key_type}],
        )
    return None


_SIMPLE_TABLE_TYPES = {"String": "S", "Number": "N", "Binary": "B"}


_NUMERIC_ALARM_FIELDS = {
    "Threshold": float,
    "EvaluationPeriods": int,
    "DatapointsToAlarm": int,
    "Period": int,
}


def _numbers_where_expected(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: _NUMERIC_ALARM_FIELDS[key](value)
            if key in _NUMERIC_ALARM_FIELDS
            else _numbers_where_expected(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_numbers_where_expected(item) for item in node]
    return node
