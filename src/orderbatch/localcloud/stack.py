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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from orderbatch.localcloud.lambda_service import FunctionSpec

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_STACK_NAME = "orderbatch"

# AWS::SQS::Queue properties that are CreateQueue attributes of the same name (as strings).
QUEUE_ATTRIBUTES = (
    "ContentBasedDeduplication",
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
)

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
    "AWS::SQS::Queue": {"QueueName", "FifoQueue", *QUEUE_ATTRIBUTES},
    "AWS::Events::EventBus": {"Name"},
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
    },
}
NOT_ENFORCED_LOCALLY = {
    "Tracing": "X-Ray tracing is not collected locally",
    "Logging": "state machine logging is not delivered locally",
    "Layers": "layers are not mounted locally",
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
class QueueSpec:
    name: str
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StateMachineSpec:
    logical_id: str
    name: str
    arn: str
    type: str
    definition: str


@dataclass(frozen=True)
class HttpRoute:
    method: str
    path: str
    function_name: str
    api_logical_id: str
    iam_auth: bool


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
    state_machines: list[StateMachineSpec] = field(default_factory=list)
    routes: list[HttpRoute] = field(default_factory=list)
    topics: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueSpec] = field(default_factory=dict)
    event_buses: dict[str, str] = field(default_factory=dict)
    log_groups: dict[str, str] = field(default_factory=dict)
    alarms: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    not_honoured: list[str] = field(default_factory=list)

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

    stack = LocalStack(stack_name=stack_name, region=region, account_id=account_id, parameters=parameters)
    base_dir = template_path.parent
    for logical_id, resource in resolved.get("Resources", {}).items():
        _add_resource(stack, logical_id, resource, physical, base_dir)
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
        elif kind == "AWS::DynamoDB::Table":
            name = props.get("TableName") or f"{stack_name}-{logical_id}"
            ids[logical_id] = {"Ref": name, "Arn": f"arn:aws:dynamodb:{region}:{account_id}:table/{name}"}
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
        elif kind in ("AWS::Serverless::HttpApi", "AWS::ApiGatewayV2::Api"):
            ids[logical_id] = {"Ref": logical_id.lower()}
        elif kind == "AWS::SNS::Topic":
            name = props.get("TopicName") or f"{stack_name}-{logical_id}"
            arn = f"arn:aws:sns:{region}:{account_id}:{name}"
            ids[logical_id] = {"Ref": arn, "TopicArn": arn, "TopicName": name}
        elif kind == "AWS::SQS::Queue":
            name = props.get("QueueName") or _unnamed_queue_name(stack_name, logical_id, props)
            ids[logical_id] = {
                # The queue URL, as SQS's GetQueueUrl answers it on AWS.
                "Ref": f"https://sqs.{region}.amazonaws.com/{account_id}/{name}",
                "Arn": f"arn:aws:sqs:{region}:{account_id}:{name}",
                "QueueName": name,
                "QueueUrl": f"https://sqs.{region}.amazonaws.com/{account_id}/{name}",
            }
        elif kind == "AWS::Events::EventBus":
            name = props.get("Name") or f"{stack_name}-{logical_id}"
            arn = f"arn:aws:events:{region}:{account_id}:event-bus/{name}"
            ids[logical_id] = {"Ref": name, "Arn": arn, "Name": name}
        elif kind == "AWS::Logs::LogGroup":
            name = props.get("LogGroupName") or f"{stack_name}-{logical_id}"
            ids[logical_id] = {"Ref": name, "Arn": f"arn:aws:logs:{region}:{account_id}:log-group:{name}:*"}
        else:
            ids[logical_id] = {"Ref": logical_id}
    return ids


def _queue_spec(name: str, props: Mapping[str, Any]) -> QueueSpec:
    attributes = {key: _env_string(props[key]) for key in QUEUE_ATTRIBUTES if key in props}
    if _is_fifo(props):
        attributes["FifoQueue"] = "true"
    return QueueSpec(name, attributes)


def _is_fifo(props: Mapping[str, Any]) -> bool:
    return props.get("FifoQueue") in (True, "true", "True")


def _unnamed_queue_name(stack_name: str, logical_id: str, props: Mapping[str, Any]) -> str:
    # CloudFormation names an unnamed queue after the stack and logical ID; a FIFO queue's ends in .fifo.
    return f"{stack_name}-{logical_id}" + (".fifo" if _is_fifo(props) else "")


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
    elif kind == "AWS::S3::Bucket":
        stack.buckets[logical_id] = ref
    elif kind == "AWS::Serverless::Function":
        stack.functions.append(_function_spec(logical_id, ref, props, base_dir))
        stack.routes.extend(_http_routes(ref, props.get("Events") or {}, physical))
    elif kind == "AWS::Serverless::StateMachine":
        stack.state_machines.append(_state_machine_spec(logical_id, physical[logical_id], props, base_dir))
    elif kind == "AWS::Serverless::HttpApi":
        if (props.get("Auth") or {}).get("DefaultAuthorizer") not in (None, "AWS_IAM"):
            stack.not_honoured.append(f"{logical_id}: only AWS_IAM authorization is emulated locally")
        return
    elif kind == "AWS::SNS::Topic":
        stack.topics[logical_id] = physical[logical_id]["TopicName"]
    elif kind == "AWS::SQS::Queue":
        stack.queues[logical_id] = _queue_spec(physical[logical_id]["QueueName"], props)
    elif kind == "AWS::Events::EventBus":
        stack.event_buses[logical_id] = physical[logical_id]["Name"]
    elif kind == "AWS::Logs::LogGroup":
        stack.log_groups[logical_id] = ref
    elif kind == "AWS::CloudWatch::Alarm":
        stack.alarms[logical_id] = props
        return
    else:
        stack.not_honoured.append(f"{logical_id} ({kind}): resource type not created locally")
        return
    _note_unhonoured(stack, logical_id, kind, props)


def _note_unhonoured(stack: LocalStack, logical_id: str, kind: str, props: Mapping[str, Any]) -> None:
    for prop in props:
        if prop in NOT_ENFORCED_LOCALLY:
            stack.not_honoured.append(f"{logical_id}.{prop}: {NOT_ENFORCED_LOCALLY[prop]}")
        elif prop not in SILENTLY_LOCAL.get(kind, set(props)):
            stack.not_honoured.append(f"{logical_id}.{prop}: not honoured locally")


def _function_spec(logical_id: str, name: str, props: Mapping[str, Any], base_dir: Path) -> FunctionSpec:
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
        if event.get("Type") != "HttpApi":
            continue
        props = event.get("Properties") or {}
        routes.append(
            HttpRoute(
                method=str(props.get("Method", "ANY")).upper(),
                path=str(props.get("Path", "/")),
                function_name=function_name,
                api_logical_id=str(props.get("ApiId", "ServerlessHttpApi")),
                iam_auth=True,
            )
        )
    return routes


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
    )


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
