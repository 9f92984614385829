"""Reads a SAM template into the resources the local cloud creates.

The heavy lifting is SAM CLI's own: `SamTranslatorWrapper` applies `Globals` and the SAM plugins,
`IntrinsicResolver` resolves `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If` and the rest. What is ours is
the symbol table: every resource gets a local physical name and ARN before resolution, so `!Ref
BatchBucket` becomes a real bucket name and `!GetAtt Fn.Arn` the ARN our Lambda service answers to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from orderbatch.localcloud.api_integrations import (
    ServiceRoute,
    routes_from_openapi,
    state_machine_event_route,
)
from orderbatch.localcloud.event_sources import QueueMapping, mapping_from_resource, mappings_from_template
from orderbatch.localcloud.lambda_service import FunctionSpec
from orderbatch.localcloud.lambda_service.layers import MAX_LAYERS_PER_FUNCTION, LayerSpec

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_STACK_NAME = "orderbatch"

# Resource properties that change nothing on one machine; anything else unhandled is reported by name.
SILENTLY_LOCAL = {
    "AWS::Serverless::Function": {
        "Runtime",
        "Architectures",
        "CodeUri",
        "Handler",
        "MemorySize",
        "Timeout",
        "Environment",
        "Description",
        "Events",
        "ReservedConcurrentExecutions",
        "Policies",
        "Tracing",
        "Role",
        "Layers",
        "FunctionName",
    },
    "AWS::DynamoDB::Table": {
        "TableName",
        "BillingMode",
        "AttributeDefinitions",
        "KeySchema",
        "TimeToLiveSpecification",
        "GlobalSecondaryIndexes",
        "LocalSecondaryIndexes",
        "ProvisionedThroughput",
        "PointInTimeRecoverySpecification",
    },
    "AWS::S3::Bucket": {"BucketName", "BucketEncryption", "PublicAccessBlockConfiguration"},
    "AWS::Serverless::LayerVersion": {
        "LayerName",
        "ContentUri",
        "CompatibleRuntimes",
        "CompatibleArchitectures",
        "Description",
        "LicenseInfo",
        "RetentionPolicy",
    },
    "AWS::Lambda::LayerVersion": {
        "LayerName",
        "Content",
        "CompatibleRuntimes",
        "CompatibleArchitectures",
        "Description",
        "LicenseInfo",
    },
    "AWS::Serverless::StateMachine": {
        "Name",
        "Type",
        "DefinitionUri",
        "Definition",
        "DefinitionSubstitutions",
        "Policies",
        "Role",
        "Tracing",
        "Logging",
        "Events",  # Api events become routes; the others are noted one by one
    },
    "AWS::Serverless::Api": {
        "Name",
        "StageName",
        "DefinitionBody",
        "Description",
        "EndpointConfiguration",
        "__MANAGE_SWAGGER",  # SAM's mark on the implicit API it writes the events' routes into
    },
}
NOT_ENFORCED_LOCALLY = {
    "Tracing": "X-Ray tracing is not collected locally",
    "PointInTimeRecoverySpecification": "point-in-time recovery has no local effect",
    "BucketEncryption": "bucket encryption has no local effect",
}


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    ttl_attribute: str | None = None
    global_secondary_indexes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class StateMachineSpec:
    logical_id: str
    name: str
    arn: str
    type: str
    definition: str
    # CreateStateMachine's loggingConfiguration (from SAM's Logging), or None to log nothing.
    logging: dict[str, Any] | None = None


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    name: str
    url: str
    # CreateQueue attributes, as strings (CloudFormation's properties, RedrivePolicy as its JSON text).
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EventRuleSpec:
    logical_id: str
    name: str
    event_bus: str
    event_pattern: str | None
    schedule: str | None
    targets: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class SubscriptionSpec:
    logical_id: str
    topic_arn: str
    protocol: str
    endpoint: str
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HttpRoute:
    method: str
    path: str
    function_name: str
    api_logical_id: str
    iam_auth: bool
    # "2.0" for an HTTP API's route; "1.0" for a REST API's Lambda proxy route, served under its stage.
    payload_version: str = "2.0"
    stage: str | None = None


@dataclass
class LocalStack:
    """Everything of one template that the local cloud deploys."""

    stack_name: str
    region: str
    account_id: str
    parameters: dict[str, str]
    tables: list[TableSpec] = field(default_factory=list)
    buckets: dict[str, str] = field(default_factory=dict)
    functions: list[FunctionSpec] = field(default_factory=list)
    layers: dict[str, LayerSpec] = field(default_factory=dict)  # by version ARN
    state_machines: list[StateMachineSpec] = field(default_factory=list)
    routes: list[HttpRoute] = field(default_factory=list)
    # API routes whose OpenAPI integration calls Step Functions (api_integrations).
    service_routes: list[ServiceRoute] = field(default_factory=list)
    topics: dict[str, str] = field(default_factory=dict)
    queues: list[QueueSpec] = field(default_factory=list)
    event_buses: dict[str, str] = field(default_factory=dict)
    event_rules: list[EventRuleSpec] = field(default_factory=list)
    subscriptions: list[SubscriptionSpec] = field(default_factory=list)
    queue_mappings: list[QueueMapping] = field(default_factory=list)
    log_groups: dict[str, str] = field(default_factory=dict)
    alarms: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    not_honoured: list[str] = field(default_factory=list)
    # The template as read, its conditions decided: what IAM translates into the roles (localcloud.iam).
    template: dict[str, Any] = field(default_factory=dict, repr=False)

    def table_name(self, logical_id: str) -> str:
        return next(t.name for t in self.tables if t.logical_id == logical_id)

    def state_machine(self, logical_id: str | None = None) -> StateMachineSpec:
        if logical_id is None:
            if len(self.state_machines) != 1:
                raise LookupError(f"the template has {len(self.state_machines)} state machines; name one")
            return self.state_machines[0]
        return next(sm for sm in self.state_machines if sm.logical_id == logical_id)


class TemplateError(ValueError):
    """The template cannot be run locally; the message says which resource and why."""


def load_stack(
    template_path: Path,
    *,
    parameter_overrides: Mapping[str, str] | None = None,
    stack_name: str = DEFAULT_STACK_NAME,
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
) -> LocalStack:
    # SAM CLI is imported here, not at module level: half a second that `orderbatch lint` never needs.
    from samcli.commands._utils.template import get_template_data
    from samcli.lib.intrinsic_resolver.intrinsic_property_resolver import IntrinsicResolver
    from samcli.lib.intrinsic_resolver.intrinsics_symbol_table import IntrinsicsSymbolTable
    from samcli.lib.samlib.wrapper import SamTranslatorWrapper

    template_path = template_path.resolve()
    raw = get_template_data(str(template_path))
    parameters = _parameter_values(raw, parameter_overrides or {})
    pseudo = {
        "AWS::Region": region,
        "AWS::AccountId": account_id,
        "AWS::StackName": stack_name,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackId": f"arn:aws:cloudformation:{region}:{account_id}:stack/{stack_name}/local",
    }
    # SAM CLI's resolver treats an empty parameter value as missing, so `Fn::If` on `Equals [!Ref P, ""]`
    # would stay unresolved; conditions are decided here first.
    raw = _apply_conditions(raw, {**parameters, **pseudo})
    expanded = SamTranslatorWrapper(raw, parameter_values={**parameters, **pseudo}).run_plugins()

    def resolve(template: dict[str, Any], translator: dict[str, Any]) -> dict[str, Any]:
        # Each resource body and output is resolved on its own: SAM CLI's resolve_template would also
        # translate the Resources' keys, which our richer symbol table (Ref, Arn, Name) turns into dicts.
        symbols = IntrinsicsSymbolTable(logical_id_translator=translator, template=template)
        resolver = IntrinsicResolver(template=template, symbol_resolver=symbols)
        return {
            "Resources": {
                logical_id: resolver.intrinsic_property_resolver(body, True, parent_function=logical_id)
                for logical_id, body in (template.get("Resources") or {}).items()
            },
            "Outputs": {
                name: resolver.intrinsic_property_resolver(body, True, parent_function=name)
                for name, body in (template.get("Outputs") or {}).items()
            },
        }

    # First pass: parameters only, enough to read names the template sets itself (TableName, Name, ...).
    first = resolve(json.loads(json.dumps(expanded)), {**parameters, **pseudo})
    physical = _physical_ids(first.get("Resources", {}), stack_name, region, account_id)
    resolved = resolve(expanded, {**parameters, **pseudo, **physical})

    stack = LocalStack(
        stack_name=stack_name, region=region, account_id=account_id, parameters=parameters, template=raw
    )
    base_dir = template_path.parent
    resources = resolved.get("Resources", {})
    # Layers first: a function names them by ARN, wherever they sit in the template.
    for logical_id, resource in resources.items():
        if resource.get("Type") in LAYER_TYPES:
            _add_layer(stack, logical_id, resource, physical, base_dir)
    for logical_id, resource in resources.items():
        if resource.get("Type") not in LAYER_TYPES:
            _add_resource(stack, logical_id, resource, physical, base_dir)
    _add_state_machine_api_events(stack, resources, physical)
    _set_rest_api_stages(stack, resources, physical)
    stack.outputs = {name: output.get("Value") for name, output in (resolved.get("Outputs") or {}).items()}
    return stack


_NO_VALUE = {"Ref": "AWS::NoValue"}


class _Conditions:
    """The template's `Conditions`, decided once from the parameter values."""

    def __init__(self, definitions: Mapping[str, Any], values: Mapping[str, str]) -> None:
        self._definitions = definitions
        self._values = values
        self._decided: dict[str, bool] = {}

    def __getitem__(self, name: str) -> bool:
        if name not in self._decided:
            self._decided[name] = self._holds(self._definitions[name])
        return self._decided[name]

    def _value_of(self, node: Any) -> Any:
        if isinstance(node, dict) and set(node) == {"Ref"} and node["Ref"] in self._values:
            return self._values[node["Ref"]]
        return node

    def _holds(self, node: Any) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            ((function, argument),) = node.items()
            if function == "Condition":
                return self[argument]
            if function == "Fn::Equals":
                left, right = (self._value_of(a) for a in argument)
                return str(left) == str(right)
            combine = {"Fn::Not": lambda xs: not xs[0], "Fn::And": all, "Fn::Or": any}.get(function)
            if combine is not None:
                return bool(combine([self._holds(a) for a in argument]))
        raise TemplateError(f"condition {node!r} cannot be evaluated locally")


def _apply_conditions(template: dict[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """Replace every `Fn::If` by its chosen branch (dropping `AWS::NoValue`) and drop disabled resources."""
    conditions = _Conditions(template.get("Conditions") or {}, values)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::If"}:
                name, when_true, when_false = node["Fn::If"]
                return walk(when_true if conditions[name] else when_false)
            walked = {key: walk(value) for key, value in node.items()}
            return {key: value for key, value in walked.items() if value != _NO_VALUE}
        if isinstance(node, list):
            return [item for item in (walk(each) for each in node) if item != _NO_VALUE]
        return node

    resources = {
        logical_id: body
        for logical_id, body in (template.get("Resources") or {}).items()
        if "Condition" not in body or conditions[body["Condition"]]
    }
    return dict(walk({**template, "Resources": resources}))


def _parameter_values(template: dict[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    declared = template.get("Parameters") or {}
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        raise TemplateError(f"parameter override(s) {', '.join(unknown)} not declared in the template")
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in overrides:
            values[name] = str(overrides[name])
        elif "Default" in spec:
            values[name] = str(spec["Default"])
        else:
            raise TemplateError(
                f"parameter {name} has no default; pass it with --parameter-overrides {name}=VALUE"
            )
    return values


def _physical_ids(
    resources: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> dict[str, dict[str, str]]:
    """What `Ref` and `Fn::GetAtt` return for each resource, as CloudFormation would after creating it."""
    ids: dict[str, dict[str, str]] = {}
    for logical_id, resource in resources.items():
        kind = resource.get("Type", "")
        props = resource.get("Properties") or {}
        if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            name = props.get("FunctionName") or logical_id
            arn = f"arn:aws:lambda:{region}:{account_id}:function:{name}"
            ids[logical_id] = {"Ref": name, "Arn": arn}
        elif kind in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"):
            name = props.get("TableName") or f"{stack_name}-{logical_id}"
            ids[logical_id] = {"Ref": name, "Arn": f"arn:aws:dynamodb:{region}:{account_id}:table/{name}"}
        elif (
            messaging := _messaging_ids(kind, logical_id, props, stack_name, region, account_id)
        ) is not None:
            ids[logical_id] = messaging
        elif kind == "AWS::S3::Bucket":
            name = props.get("BucketName") or f"{stack_name}-{logical_id}".lower()
            ids[logical_id] = {
                "Ref": name,
                "Arn": f"arn:aws:s3:::{name}",
                "DomainName": f"{name}.s3.amazonaws.com",
            }
        elif kind in ("AWS::Serverless::StateMachine", "AWS::StepFunctions::StateMachine"):
            name = props.get("Name") or props.get("StateMachineName") or f"{stack_name}-{logical_id}"
            arn = f"arn:aws:states:{region}:{account_id}:stateMachine:{name}"
            ids[logical_id] = {"Ref": arn, "Arn": arn, "Name": name}
        elif kind in ("AWS::Serverless::HttpApi", "AWS::ApiGatewayV2::Api", "AWS::Serverless::Api"):
            ids[logical_id] = {"Ref": logical_id.lower()}
        elif kind == "AWS::SNS::Topic":
            name = props.get("TopicName") or f"{stack_name}-{logical_id}"
            arn = f"arn:aws:sns:{region}:{account_id}:{name}"
            ids[logical_id] = {"Ref": arn, "TopicArn": arn, "TopicName": name}
        elif kind == "AWS::IAM::Role":
            # As iam.py names it: CloudFormation's "<stack>-<logical id>", without its random suffix.
            name = props.get("RoleName") or f"{stack_name}-{logical_id}"[:64]
            arn = f"arn:aws:iam::{account_id}:role{props.get('Path') or '/'}{name}"
            ids[logical_id] = {"Ref": name, "Arn": arn, "RoleId": name}
        elif kind == "AWS::Logs::LogGroup":
            name = props.get("LogGroupName") or f"{stack_name}-{logical_id}"
            ids[logical_id] = {"Ref": name, "Arn": f"arn:aws:logs:{region}:{account_id}:log-group:{name}:*"}
        elif kind in LAYER_TYPES:
            # Ref is the layer version's ARN; each local deployment is the layer's first version.
            name = props.get("LayerName") or logical_id
            ids[logical_id] = {"Ref": f"arn:aws:lambda:{region}:{account_id}:layer:{name}:1"}
        else:
            ids[logical_id] = {"Ref": logical_id}
    return ids


def _messaging_ids(
    kind: str, logical_id: str, props: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> dict[str, str] | None:
    """Ref and Fn::GetAtt of queues, event buses and rules; None for any other kind."""
    if kind == "AWS::SQS::Queue":
        suffix = ".fifo" if _is_true(props.get("FifoQueue")) else ""
        name = props.get("QueueName") or f"{stack_name}-{logical_id}{suffix}"
        url = f"https://sqs.{region}.amazonaws.com/{account_id}/{name}"
        return {
            "Ref": url,
            "Arn": f"arn:aws:sqs:{region}:{account_id}:{name}",
            "QueueName": name,
            "QueueUrl": url,
        }
    if kind == "AWS::Events::EventBus":
        name = props.get("Name") or f"{stack_name}-{logical_id}"
        return {"Ref": name, "Arn": f"arn:aws:events:{region}:{account_id}:event-bus/{name}", "Name": name}
    if kind == "AWS::Events::Rule":
        name = props.get("Name") or f"{stack_name}-{logical_id}"
        bus = props.get("EventBusName") or "default"
        bus_name = bus.rsplit("/", 1)[-1] if isinstance(bus, str) else "default"
        path = f"{bus_name}/{name}" if bus_name != "default" else name
        return {"Ref": name, "Arn": f"arn:aws:events:{region}:{account_id}:rule/{path}"}
    return None


def _add_resource(
    stack: LocalStack,
    logical_id: str,
    resource: Mapping[str, Any],
    physical: Mapping[str, Any],
    base_dir: Path,
) -> None:
    kind = resource.get("Type", "")
    props: dict[str, Any] = resource.get("Properties") or {}
    ref = physical[logical_id]["Ref"]
    if kind == "AWS::DynamoDB::Table":
        ttl = props.get("TimeToLiveSpecification") or {}
        stack.tables.append(
            TableSpec(
                logical_id=logical_id,
                name=ref,
                key_schema=props["KeySchema"],
                attribute_definitions=props["AttributeDefinitions"],
                ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
                global_secondary_indexes=props.get("GlobalSecondaryIndexes") or [],
            )
        )
    elif _add_messaging_resource(stack, logical_id, kind, props, physical[logical_id]):
        return
    elif kind == "AWS::StepFunctions::StateMachine":
        stack.state_machines.append(
            _state_machine_spec(logical_id, physical[logical_id], _as_serverless_machine(props), base_dir)
        )
        return
    elif kind == "AWS::S3::Bucket":
        stack.buckets[logical_id] = ref
    elif kind in ("AWS::Serverless::Function", "AWS::Serverless::StateMachine"):
        _add_serverless_compute(stack, logical_id, kind, props, physical, base_dir)
    elif kind == "AWS::Serverless::HttpApi":
        if (props.get("Auth") or {}).get("DefaultAuthorizer") not in (None, "AWS_IAM"):
            stack.not_honoured.append(f"{logical_id}: only AWS_IAM authorization is emulated locally")
        _add_definition_routes(stack, logical_id, props, stage=None)
        return
    elif kind == "AWS::Serverless::Api":
        _add_definition_routes(stack, logical_id, props, stage=str(props.get("StageName", "Prod")))
    elif kind == "AWS::SNS::Topic":
        stack.topics[logical_id] = physical[logical_id]["TopicName"]
    elif kind == "AWS::Logs::LogGroup":
        stack.log_groups[logical_id] = ref
    elif kind == "AWS::CloudWatch::Alarm":
        stack.alarms[logical_id] = props
        return
    else:
        stack.not_honoured.append(f"{logical_id} ({kind}): resource type not created locally")
        return
    _note_unhonoured(stack, logical_id, kind, props)


def _add_serverless_compute(
    stack: LocalStack,
    logical_id: str,
    kind: str,
    props: Mapping[str, Any],
    physical: Mapping[str, Any],
    base_dir: Path,
) -> None:
    """A SAM function or state machine, and what its ``Events`` make: routes, rules, queue pollers."""
    ids = physical[logical_id]
    events = props.get("Events") or {}
    if kind == "AWS::Serverless::Function":
        stack.functions.append(
            _function_spec(logical_id, ids["Ref"], props, base_dir, _layers_of(stack, logical_id, props))
        )
        stack.routes.extend(_http_routes(ids["Ref"], events, physical))
        stack.queue_mappings.extend(mappings_from_template(ids["Ref"], events))
    else:
        _add_state_machine(stack, _state_machine_spec(logical_id, ids, props, base_dir))
    stack.event_rules.extend(_event_source_rules(logical_id, ids["Arn"], props))


def _add_messaging_resource(
    stack: LocalStack, logical_id: str, kind: str, props: Mapping[str, Any], ids: Mapping[str, str]
) -> bool:
    """Simple tables, queues, buses, rules, subscriptions, event source mappings and roles; False for any
    other kind."""
    if kind == "AWS::Serverless::SimpleTable":
        key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        attribute = {
            "AttributeName": key["Name"],
            "AttributeType": _SIMPLE_TABLE_TYPES[key.get("Type", "String")],
        }
        stack.tables.append(
            TableSpec(
                logical_id=logical_id,
                name=ids["Ref"],
                key_schema=[{"AttributeName": key["Name"], "KeyType": "HASH"}],
                attribute_definitions=[attribute],
            )
        )
    elif kind == "AWS::SQS::Queue":
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


_SIMPLE_TABLE_TYPES = {"String": "S", "Number": "N", "Binary": "B"}
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


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


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


_RULE_EVENT_TYPES = ("EventBridgeRule", "CloudWatchEvent", "Schedule")


def _event_source_rules(logical_id: str, target_arn: str, props: Mapping[str, Any]) -> list[EventRuleSpec]:
    """The rules SAM makes of a function's or state machine's EventBridgeRule, CloudWatchEvent and
    Schedule events: named ``<LogicalId><EventId>`` unless ``RuleName`` / ``Name`` says otherwise."""
    rules = []
    for event_id, event in (props.get("Events") or {}).items():
        if event.get("Type") not in _RULE_EVENT_TYPES:
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


def _as_serverless_machine(props: Mapping[str, Any]) -> dict[str, Any]:
    """An AWS::StepFunctions::StateMachine's properties under the names AWS::Serverless::StateMachine uses."""
    converted: dict[str, Any] = {
        "Type": props.get("StateMachineType", "STANDARD"),
        "DefinitionSubstitutions": props.get("DefinitionSubstitutions") or {},
    }
    if "DefinitionString" in props:
        converted["DefinitionText"] = props["DefinitionString"]
    elif "Definition" in props:
        converted["Definition"] = props["Definition"]
    elif "DefinitionS3Location" in props:
        converted["DefinitionUri"] = props["DefinitionS3Location"]
    return converted


def _add_state_machine(stack: LocalStack, machine: StateMachineSpec) -> None:
    stack.state_machines.append(machine)
    if machine.logging and machine.type != "EXPRESS":
        stack.not_honoured.append(
            f"{machine.logical_id}.Logging: delivered to CloudWatch Logs for EXPRESS state machines only"
        )


# SAM's implicit REST API, which an Api event without a RestApiId joins, and its stage.
IMPLICIT_REST_API = "ServerlessRestApi"
IMPLICIT_REST_API_STAGE = "Prod"


def _add_state_machine_api_events(
    stack: LocalStack, resources: Mapping[str, Any], physical: Mapping[str, Any]
) -> None:
    """A state machine's ``Events`` of type Api: the StartExecution route SAM writes into the REST API."""
    stages = {
        physical[logical_id]["Ref"]: (
            logical_id,
            str((body.get("Properties") or {}).get("StageName", "Prod")),
        )
        for logical_id, body in resources.items()
        if body.get("Type") == "AWS::Serverless::Api"
    }
    for logical_id, body in resources.items():
        if body.get("Type") != "AWS::Serverless::StateMachine":
            continue
        for event_name, event in ((body.get("Properties") or {}).get("Events") or {}).items():
            if event.get("Type") in _RULE_EVENT_TYPES:
                continue  # a rule (_event_source_rules)
            if event.get("Type") != "Api":
                stack.not_honoured.append(
                    f"{logical_id}.Events.{event_name} ({event.get('Type')}): not honoured locally"
                )
                continue
            props = event.get("Properties") or {}
            api_id = props.get("RestApiId")
            api_logical_id, stage = stages.get(api_id, (IMPLICIT_REST_API, IMPLICIT_REST_API_STAGE))
            stack.service_routes.append(
                state_machine_event_route(
                    api_logical_id,
                    stage=str(props.get("Stage") or stage),
                    path=str(props.get("Path", "/")),
                    method=str(props.get("Method", "ANY")),
                    state_machine_arn=physical[logical_id]["Arn"],
                    unescape_quotes=bool(props.get("UnescapeMappingTemplate")),
                )
            )


def _add_definition_routes(
    stack: LocalStack, logical_id: str, props: Mapping[str, Any], stage: str | None
) -> None:
    """The routes of an API's OpenAPI ``DefinitionBody`` that call Step Functions (api_integrations)."""
    body = props.get("DefinitionBody")
    if not isinstance(body, Mapping):
        if stage is not None:
            stack.not_honoured.append(
                f"{logical_id}: only a DefinitionBody's Step Functions routes run locally"
            )
        return
    parsed = routes_from_openapi(
        logical_id,
        body,
        stage=stage,
        http_api=stage is None,
        iam_auth=(props.get("Auth") or {}).get("DefaultAuthorizer") == "AWS_IAM",
    )
    stack.service_routes.extend(parsed.routes)
    stack.not_honoured.extend(parsed.notes)


def _note_unhonoured(stack: LocalStack, logical_id: str, kind: str, props: Mapping[str, Any]) -> None:
    for prop in props:
        if prop in NOT_ENFORCED_LOCALLY:
            stack.not_honoured.append(f"{logical_id}.{prop}: {NOT_ENFORCED_LOCALLY[prop]}")
        elif prop not in SILENTLY_LOCAL.get(kind, set(props)):
            stack.not_honoured.append(f"{logical_id}.{prop}: not honoured locally")


LAYER_TYPES = ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion")


def _add_layer(
    stack: LocalStack,
    logical_id: str,
    resource: Mapping[str, Any],
    physical: Mapping[str, Any],
    base_dir: Path,
) -> None:
    """A layer version whose content is a local folder or zip (``ContentUri``, or ``Content`` as
    ``sam package``/``aws cloudformation package`` take it before uploading)."""
    kind = resource["Type"]
    props: dict[str, Any] = resource.get("Properties") or {}
    content = props.get("ContentUri") if kind == "AWS::Serverless::LayerVersion" else props.get("Content")
    if not isinstance(content, str):
        raise TemplateError(
            f"{logical_id}: a layer's content must be a local folder or .zip to run locally (got {content!r})"
        )
    path = (base_dir / content).resolve()
    if not path.exists():
        raise TemplateError(f"{logical_id}: layer content {path} does not exist")
    arn = physical[logical_id]["Ref"]
    stack.layers[arn] = LayerSpec(name=arn.split(":")[-2], arn=arn, content=path)
    build_method = (resource.get("Metadata") or {}).get("BuildMethod")
    if build_method:
        stack.not_honoured.append(
            f"{logical_id}: used as its folder is, not built (Metadata BuildMethod {build_method}); "
            "`sam build`, then run .aws-sam/build/template.yaml"
        )
    _note_unhonoured(stack, logical_id, kind, props)


def _layers_of(stack: LocalStack, logical_id: str, props: Mapping[str, Any]) -> tuple[LayerSpec, ...]:
    """The function's layers the template defines, in its order; others (published ARNs) are named."""
    found = []
    for arn in props.get("Layers") or []:
        layer = stack.layers.get(str(arn))
        if layer is None:
            stack.not_honoured.append(
                f"{logical_id}.Layers: {arn} is not defined in the template; not in its /opt"
            )
        else:
            found.append(layer)
    if len(found) > MAX_LAYERS_PER_FUNCTION:
        raise TemplateError(f"{logical_id}: {len(found)} layers; Lambda allows {MAX_LAYERS_PER_FUNCTION}")
    return tuple(found)


def _function_spec(
    logical_id: str, name: str, props: Mapping[str, Any], base_dir: Path, layers: tuple[LayerSpec, ...] = ()
) -> FunctionSpec:
    if props.get("PackageType") == "Image":
        raise TemplateError(f"{logical_id}: image functions need a container runtime; use --lambda-endpoint")
    code_uri = props.get("CodeUri")
    if not isinstance(code_uri, str):
        raise TemplateError(f"{logical_id}: CodeUri must be a local folder to run locally (got {code_uri!r})")
    environment = ((props.get("Environment") or {}).get("Variables")) or {}
    reserved = props.get("ReservedConcurrentExecutions")
    return FunctionSpec(
        name=name,
        handler=str(props["Handler"]),
        code_dir=(base_dir / code_uri).resolve(),
        runtime=str(props.get("Runtime", "python3.12")),
        timeout_seconds=int(props.get("Timeout", 3)),
        memory_mb=int(props.get("MemorySize", 128)),
        environment={key: _env_string(value) for key, value in environment.items()},
        reserved_concurrency=int(reserved) if reserved is not None else None,
        layers=layers,
    )


def _env_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _http_routes(
    function_name: str, events: Mapping[str, Any], physical: Mapping[str, Any]
) -> list[HttpRoute]:
    routes = []
    for event in events.values():
        props = event.get("Properties") or {}
        if event.get("Type") == "HttpApi":
            routes.append(
                HttpRoute(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props.get("Path", "/")),
                    function_name=function_name,
                    api_logical_id=str(props.get("ApiId", "ServerlessHttpApi")),
                    iam_auth=True,
                )
            )
        elif event.get("Type") == "Api":
            # A REST API's Lambda proxy route; its stage is the API's (set once every API is read).
            routes.append(
                HttpRoute(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props.get("Path", "/")),
                    function_name=function_name,
                    api_logical_id=str(props.get("RestApiId") or IMPLICIT_REST_API).lower(),
                    iam_auth=((props.get("Auth") or {}).get("Authorizer")) == "AWS_IAM",
                    payload_version="1.0",
                )
            )
    return routes


def _set_rest_api_stages(
    stack: LocalStack, resources: Mapping[str, Any], physical: Mapping[str, Any]
) -> None:
    """Each REST API proxy route is served under its API's ``StageName`` (SAM's implicit API: ``Prod``)."""
    stages = {
        str(physical[logical_id]["Ref"]).lower(): str((body.get("Properties") or {}).get("StageName", "Prod"))
        for logical_id, body in resources.items()
        if body.get("Type") == "AWS::Serverless::Api"
    }
    stack.routes = [
        replace(route, stage=stages.get(route.api_logical_id, IMPLICIT_REST_API_STAGE))
        if route.payload_version == "1.0"
        else route
        for route in stack.routes
    ]


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


def substitute_definition(text: str, substitutions: Mapping[str, Any]) -> str:
    """Replace `${Name}` placeholders as Step Functions does: in the raw text, so numbers may be unquoted."""

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(substitutions[key]) if key in substitutions else match.group(0)

    return _PLACEHOLDER.sub(replace, text)


def _state_machine_spec(
    logical_id: str, ids: Mapping[str, str], props: Mapping[str, Any], base_dir: Path
) -> StateMachineSpec:
    if "DefinitionUri" in props:
        uri = props["DefinitionUri"]
        if not isinstance(uri, str):
            raise TemplateError(f"{logical_id}: DefinitionUri must be a local file to run locally")
        text = (base_dir / uri).read_text()
    elif "Definition" in props:
        text = json.dumps(props["Definition"])
    elif isinstance(props.get("DefinitionText"), str):
        text = props["DefinitionText"]
    else:
        raise TemplateError(f"{logical_id}: no Definition or DefinitionUri")
    definition = _parse_definition(
        logical_id, substitute_definition(text, props.get("DefinitionSubstitutions") or {})
    )
    return StateMachineSpec(
        logical_id=logical_id,
        name=ids["Name"],
        arn=ids["Arn"],
        type=str(props.get("Type", "STANDARD")),
        definition=definition,
        logging=logging_configuration(props.get("Logging")),
    )


def logging_configuration(logging: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """SAM's ``Logging`` (CloudFormation's LoggingConfiguration) in the API's shape."""
    if not logging:
        return None
    include = logging.get("IncludeExecutionData", False)
    return {
        "level": str(logging.get("Level", "OFF")),
        "includeExecutionData": include is True or str(include).lower() == "true",
        "destinations": [
            {"cloudWatchLogsLogGroup": {"logGroupArn": str(group.get("LogGroupArn"))}}
            for destination in logging.get("Destinations") or []
            if (group := destination.get("CloudWatchLogsLogGroup"))
        ],
    }


def _parse_definition(logical_id: str, substituted: str) -> str:
    """The definition's JSON text, read as CloudFormation reads a DefinitionUri file: after substitution,
    as JSON, else as YAML (re-serialised to JSON)."""
    leftover = sorted(set(_PLACEHOLDER.findall(substituted)))
    hint = f" (unresolved placeholders: {', '.join(leftover)})" if leftover else ""
    try:
        json.loads(substituted)
        return substituted
    except json.JSONDecodeError as json_error:
        problem = f"not valid JSON after substitution{hint}: {json_error}"
    try:
        parsed = yaml.safe_load(substituted)
    except yaml.YAMLError as yaml_error:
        raise TemplateError(
            f"{logical_id}: definition is {problem}; nor valid YAML: {yaml_error}"
        ) from yaml_error
    if not isinstance(parsed, dict):
        raise TemplateError(f"{logical_id}: definition is {problem}; nor a YAML mapping")
    if leftover:
        # A YAML file reads a leftover placeholder as a string; it must not reach Step Functions unnoticed.
        raise TemplateError(f"{logical_id}: definition has unresolved placeholders: {', '.join(leftover)}")
    return json.dumps(parsed)
