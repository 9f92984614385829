"""Reads a SAM template into a ``LocalStack``: parameters, conditions, physical IDs, intrinsics.

The heavy lifting is SAM CLI's own: `SamTranslatorWrapper` applies `Globals` and the SAM plugins,
`IntrinsicResolver` resolves `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If` and the rest. What is ours is
the symbol table: every resource gets a local physical name and ARN before resolution, so `!Ref
BatchBucket` becomes a real bucket name and `!GetAtt Fn.Arn` the ARN our Lambda service answers to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orderbatch.localcloud.stack.apis import add_state_machine_api_events, set_rest_api_stages
from orderbatch.localcloud.stack.functions import LAYER_TYPES, add_layer
from orderbatch.localcloud.stack.model import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    DEFAULT_STACK_NAME,
    LocalStack,
    TemplateError,
)
from orderbatch.localcloud.stack.resources import add_resource


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
    raw = apply_conditions(raw, {**parameters, **pseudo})
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
    physical = physical_ids(first.get("Resources", {}), stack_name, region, account_id)
    resolved = resolve(expanded, {**parameters, **pseudo, **physical})

    stack = LocalStack(
        stack_name=stack_name, region=region, account_id=account_id, parameters=parameters, template=raw
    )
    base_dir = template_path.parent
    resources = resolved.get("Resources", {})
    # Layers first: a function names them by ARN, wherever they sit in the template.
    for logical_id, resource in resources.items():
        if resource.get("Type") in LAYER_TYPES:
            add_layer(stack, logical_id, resource, physical, base_dir)
    for logical_id, resource in resources.items():
        if resource.get("Type") not in LAYER_TYPES:
            add_resource(stack, logical_id, resource, physical, base_dir)
    add_state_machine_api_events(stack, resources, physical)
    set_rest_api_stages(stack, resources, physical)
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


def apply_conditions(template: dict[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
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


def physical_ids(
    resources: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> dict[str, dict[str, str]]:
    """What `Ref` and `Fn::GetAtt` return for each resource, as CloudFormation would after creating it."""
    ids: dict[str, dict[str, str]] = {}
    for logical_id, resource in resources.items():
        kind = resource.get("Type", "")
        props = resource.get("Properties") or {}
        if (lambda_ids := _lambda_ids(resources, logical_id, kind, props, region, account_id)) is not None:
            ids.update(lambda_ids)
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


def _lambda_ids(
    resources: Mapping[str, Any],
    logical_id: str,
    kind: str,
    props: Mapping[str, Any],
    region: str,
    account_id: str,
) -> dict[str, dict[str, str]] | None:
    """Ref and Fn::GetAtt of a function and of its alias; None for any other kind."""
    if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
        name = props.get("FunctionName") or logical_id
        arn = f"arn:aws:lambda:{region}:{account_id}:function:{name}"
        return {logical_id: {"Ref": name, "Arn": arn}} | _published_alias_ids(
            logical_id, arn, props.get("AutoPublishAlias")
        )
    if kind == "AWS::Lambda::Alias":
        # SAM's translation of AutoPublishAlias (what IAM reads): Ref is the alias ARN.
        function_name = _function_name(resources, props.get("FunctionName"))
        arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}:{props.get('Name')}"
        return {logical_id: {"Ref": arn, "Arn": arn}}
    return None


def _function_name(resources: Mapping[str, Any], function: Any) -> str:
    """An alias's function as the first pass left it: a function's logical ID (an unresolved Ref), a name
    or an ARN."""
    target = resources.get(str(function))
    if isinstance(target, Mapping):
        return str((target.get("Properties") or {}).get("FunctionName") or function)
    return str(function).rsplit(":function:", 1)[-1].split(":", 1)[0]


def _published_alias_ids(logical_id: str, function_arn: str, alias: Any) -> dict[str, dict[str, str]]:
    """SAM's ``AutoPublishAlias`` makes an AWS::Lambda::Alias whose Ref is the alias ARN: templates name
    it ``!Ref <Function>.Alias`` (SAM's shorthand) or SAM's logical ID for it, ``<Function>Alias<name>``."""
    if not alias:
        return {}
    alias_arn = {"Ref": f"{function_arn}:{alias}", "Arn": f"{function_arn}:{alias}"}
    generated_id = f"{logical_id}Alias" + "".join(c for c in str(alias) if c.isalnum())
    return {f"{logical_id}.Alias": alias_arn, generated_id: alias_arn}


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


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")
