"""Reads a SAM template into a ``LocalStack``: parameters, conditions, physical IDs, intrinsics.

The heavy lifting is SAM CLI's own: `SamTranslatorWrapper` applies `Globals` and the SAM plugins,
`IntrinsicResolver` resolves `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If` and the rest. What is ours is
the symbol table: every resource gets a local physical name and ARN before resolution, so `!Ref
BatchBucket` becomes a real bucket name and `!GetAtt Fn.Arn` the ARN our Lambda service answers to.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sam_local_cloud.stack.apis import add_state_machine_api_events, set_rest_api_stages
from sam_local_cloud.stack.dependencies import check_dependencies
from sam_local_cloud.stack.functions import LAYER_TYPES, add_layer
from sam_local_cloud.stack.model import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    DEFAULT_STACK_NAME,
    LocalStack,
    TemplateError,
)
from sam_local_cloud.stack.nested import (
    child_parameters,
    child_stack_name,
    deployment_order,
    merge_child,
    nested_templates,
    stack_return_values,
    with_generated_function_names,
)
from sam_local_cloud.stack.resources import add_resource
from sam_local_cloud.stack.return_values import physical_ids, unsupported_attributes
from sam_local_cloud.stack.yaml_text import read_template


def samconfig_stack_name(project_dir: Path) -> str | None:
    """The stack name `sam deploy` would use: samconfig.toml's beside the template (its default
    environment's deploy parameters, else its global ones)."""
    config_file = project_dir / "samconfig.toml"
    if not config_file.is_file():
        return None
    try:
        environment = tomllib.loads(config_file.read_text()).get("default", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return None  # sam deploy refuses it too; the template still runs, under the default name
    for command in ("deploy", "global"):
        name = environment.get(command, {}).get("parameters", {}).get("stack_name")
        if isinstance(name, str) and name:
            return name
    return None


def load_stack(
    template_path: Path,
    *,
    parameter_overrides: Mapping[str, str] | None = None,
    stack_name: str | None = None,
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
    nested: bool = False,
) -> LocalStack:
    # SAM CLI is imported here, not at module level: half a second that `orderbatch lint` never needs.
    from samcli.lib.intrinsic_resolver.intrinsic_property_resolver import IntrinsicResolver
    from samcli.lib.intrinsic_resolver.intrinsics_symbol_table import IntrinsicsSymbolTable
    from samcli.lib.samlib.wrapper import SamTranslatorWrapper

    template_path = template_path.resolve()
    stack_name = stack_name or samconfig_stack_name(template_path.parent) or DEFAULT_STACK_NAME
    raw = inline_includes(read_template(template_path), template_path.parent)
    # Before anything is resolved or created, as CloudFormation refuses such a template outright.
    check_dependencies(raw.get("Resources") or {})
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
    if nested:
        raw = with_generated_function_names(raw, stack_name)
    # Before SAM's plugins, which would fetch a Serverless Application Repository application from AWS.
    child_templates = nested_templates(raw, template_path.parent)
    expanded = SamTranslatorWrapper(raw, parameter_values={**parameters, **pseudo}).run_plugins()

    def resolve(template: dict[str, Any], translator: Mapping[str, object]) -> dict[str, Any]:
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
    if errors := unsupported_attributes(expanded):
        raise TemplateError("; ".join(errors))
    children: dict[str, LocalStack] = {}
    for logical_id in deployment_order(expanded["Resources"], child_templates):
        # The child's parameters may read the parent's resources and earlier children's outputs.
        only_child = {**expanded, "Resources": {logical_id: expanded["Resources"][logical_id]}, "Outputs": {}}
        child_props = resolve(only_child, {**parameters, **pseudo, **physical})["Resources"][logical_id]
        try:
            children[logical_id] = load_stack(
                child_templates[logical_id],
                parameter_overrides=child_parameters(logical_id, child_props.get("Properties") or {}),
                stack_name=child_stack_name(stack_name, logical_id),
                region=region,
                account_id=account_id,
                nested=True,
            )
        except TemplateError as error:
            raise TemplateError(f"{logical_id} (nested stack): {error}") from error
        physical[logical_id] = stack_return_values(children[logical_id])
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
        if logical_id in children:
            merge_child(
                stack, logical_id, resource["Type"], resource.get("Properties") or {}, children[logical_id]
            )
        elif resource.get("Type") not in LAYER_TYPES:
            add_resource(stack, logical_id, resource, physical, base_dir)
    add_state_machine_api_events(stack, resources, physical)
    set_rest_api_stages(stack, resources, physical)
    stack.outputs = {name: output.get("Value") for name, output in (resolved.get("Outputs") or {}).items()}
    stack.physical_ids = {
        logical_id: str(values.get("Ref", logical_id))
        for logical_id, values in physical.items()
        if logical_id not in children
    }
    return stack


def inline_includes(node: Any, base_dir: Path) -> Any:
    """Every ``Fn::Transform: {Name: AWS::Include, Parameters: {Location: <file>}}`` replaced by the file's
    content, as CloudFormation does before it evaluates the template, so the intrinsic functions inside
    an included OpenAPI body (an integration's ``credentials: {Fn::GetAtt: [Role, Arn]}``) are resolved
    with the rest. ``sam package`` reads a local Location relative to the template's directory."""
    if isinstance(node, list):
        return [inline_includes(item, base_dir) for item in node]
    if not isinstance(node, dict):
        return node
    transform = node.get("Fn::Transform")
    if not (isinstance(transform, dict) and transform.get("Name") == "AWS::Include"):
        return {key: inline_includes(value, base_dir) for key, value in node.items()}
    location = str((transform.get("Parameters") or {}).get("Location", ""))
    if "://" in location:
        raise TemplateError(
            f"AWS::Include Location {location!r}: only a file beside the template is read locally"
        )
    path = base_dir / location
    if not path.is_file():
        raise TemplateError(f"AWS::Include Location {location!r}: no such file in {base_dir}")
    included = inline_includes(read_template(path), path.parent)
    siblings = {
        key: inline_includes(value, base_dir) for key, value in node.items() if key != "Fn::Transform"
    }
    if not siblings:
        return included
    if not isinstance(included, dict):
        raise TemplateError(f"AWS::Include Location {location!r}: a list cannot be merged into a mapping")
    return {**siblings, **included}


_NO_VALUE = {"Ref": "AWS::NoValue"}


class _Conditions:
    """The template's `Conditions`, decided once from the parameter values."""

    def __init__(self, definitions: Mapping[str, object], values: Mapping[str, str]) -> None:
        self._definitions = definitions
        self._values = values
        self._decided: dict[str, bool] = {}

    def __getitem__(self, name: str) -> bool:
        if name not in self._decided:
            self._decided[name] = self._holds(self._definitions[name])
        return self._decided[name]

    def _value_of(self, node: object) -> object:
        if isinstance(node, dict) and set(node) == {"Ref"} and node["Ref"] in self._values:
            return self._values[node["Ref"]]
        return node

    def _holds(self, node: object) -> bool:
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
