"""Nested stacks (``AWS::CloudFormation::Stack``, SAM's ``AWS::Serverless::Application``) deployed as
CloudFormation deploys them: the child template is a stack of its own, its ``Parameters`` the parent's
resource property, its logical IDs and generated names its own, its ``Outputs`` what the parent reads as
``!GetAtt Child.Outputs.Name``.

Names: CloudFormation names a nested stack ``<parent stack>-<LogicalId>-<random suffix>`` and each resource
of it it names ``<nested stack>-<LogicalId>-<random suffix>``; locally the suffix is left out, as for the
parent's own resources, so a child's table is ``<parent>-<LogicalId>-<TableId>``. The root stack's unnamed
functions keep their logical ID as their name; a nested stack's are ``<nested stack>-<FunctionId>`` (at
most Lambda's 64 characters), so that the same child template deployed twice, or a child and its parent
with a function of the same logical ID, do not collide. In the merged ``LocalStack`` a child's resources
are known by SAM CLI's full path, ``<LogicalId>/<ChildLogicalId>``.

Only a template on the local disk can be deployed offline: an S3 or HTTPS ``TemplateURL``/``Location`` and
a Serverless Application Repository application (``{ApplicationId, SemanticVersion}``) are AWS's to fetch,
and are refused naming the resource.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from sam_local_cloud.stack.model import (
    EventRuleSpec,
    LocalStack,
    QueueSpec,
    StateMachineSpec,
    SubscriptionSpec,
    TableSpec,
    TemplateError,
    note_unhonoured,
)

# The resources a nested stack's own lists hold, each known by its logical ID.
_Spec = TypeVar("_Spec", TableSpec, StateMachineSpec, QueueSpec, EventRuleSpec, SubscriptionSpec)

NESTED_STACK_TYPES = ("AWS::CloudFormation::Stack", "AWS::Serverless::Application")
_FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")
_MAX_FUNCTION_NAME = 64
_REMOTE_SCHEMES = ("s3", "http", "https")


def child_stack_name(parent_stack_name: str, logical_id: str) -> str:
    return f"{parent_stack_name}-{logical_id}"


def nested_templates(template: Mapping[str, Any], base_dir: Path) -> dict[str, Path]:
    """The local template file of each nested stack, by logical ID; a remote one is refused."""
    found = {}
    for logical_id, body in (template.get("Resources") or {}).items():
        kind = body.get("Type")
        if kind not in NESTED_STACK_TYPES:
            continue
        location_property = "TemplateURL" if kind == "AWS::CloudFormation::Stack" else "Location"
        location = (body.get("Properties") or {}).get(location_property)
        found[logical_id] = _local_template(logical_id, location_property, location, base_dir)
    return found


def _local_template(logical_id: str, location_property: str, location: object, base_dir: Path) -> Path:
    if isinstance(location, Mapping) and "ApplicationId" in location:
        raise TemplateError(
            f"{logical_id}: {location_property} is the Serverless Application Repository application "
            f"{location.get('ApplicationId')} ({location.get('SemanticVersion')}), which AWS would fetch; "
            "the local cloud deploys nested templates from local files only"
        )
    if not isinstance(location, str):
        raise TemplateError(
            f"{logical_id}: {location_property} must be a local template file to deploy locally "
            f"(got {location!r})"
        )
    parsed = urlparse(location)
    if parsed.scheme in _REMOTE_SCHEMES:
        raise TemplateError(
            f"{logical_id}: {location_property} {location} is a remote template, which AWS would fetch; "
            "the local cloud deploys nested templates from local files only"
        )
    # As SAM CLI reads it: a file:// URL, else a path relative to the parent template's folder.
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else base_dir / location
    if not path.is_file():
        raise TemplateError(f"{logical_id}: {location_property} {path} does not exist")
    return path.resolve()


def with_generated_function_names(template: Mapping[str, Any], stack_name: str) -> dict[str, Any]:
    """The template with each unnamed function named as a nested stack's (see the module's docstring)."""
    resources = {}
    for logical_id, body in (template.get("Resources") or {}).items():
        props = body.get("Properties") or {}
        if body.get("Type") in _FUNCTION_TYPES and not props.get("FunctionName"):
            name = f"{stack_name}-{logical_id}"[:_MAX_FUNCTION_NAME]
            body = {**body, "Properties": {**props, "FunctionName": name}}
        resources[logical_id] = body
    return {**template, "Resources": resources}


def deployment_order(resources: Mapping[str, Any], nested: Mapping[str, Path]) -> list[str]:
    """The nested stacks in an order CloudFormation could create them: one whose parameters read another's
    outputs (or that ``DependsOn`` it) after that one."""
    needs = {
        logical_id: (set(_references(resources[logical_id])) & set(nested)) - {logical_id}
        for logical_id in nested
    }
    order: list[str] = []
    while len(order) < len(needs):
        ready = [each for each in needs if each not in order and needs[each] <= set(order)]
        if not ready:
            waiting = sorted(set(needs) - set(order))
            raise TemplateError(f"Circular dependency between resources: [{', '.join(waiting)}]")
        order.extend(ready)
    return order


def _references(node: object) -> Iterator[str]:
    """Logical IDs a resource body names: Ref, Fn::GetAtt, ${...} of Fn::Sub, DependsOn."""
    if isinstance(node, list):
        for item in node:
            yield from _references(item)
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::GetAtt":
                target = value.split(".", 1)[0] if isinstance(value, str) else value[0]
                yield str(target)
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                if isinstance(text, str):
                    yield from (part.split("}", 1)[0].split(".", 1)[0] for part in text.split("${")[1:])
            elif key == "DependsOn":
                yield from [value] if isinstance(value, str) else value
            yield from _references(value)


def child_parameters(logical_id: str, props: Mapping[str, Any]) -> dict[str, str]:
    """The nested stack's ``Parameters`` property, resolved, as the strings CloudFormation passes."""
    values = {}
    for name, value in (props.get("Parameters") or {}).items():
        if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
            values[name] = ",".join(str(item) for item in value)
        elif isinstance(value, bool):
            values[name] = str(value).lower()
        elif isinstance(value, str | int | float):
            values[name] = str(value)
        else:
            raise TemplateError(
                f"{logical_id}: parameter {name} of the nested stack cannot be resolved locally ({value!r})"
            )
    return values


def stack_return_values(child: LocalStack) -> dict[str, str]:
    """``Ref`` (the nested stack's ID) and ``Fn::GetAtt Child.Outputs.<Name>`` of a nested stack."""
    stack_id = f"arn:aws:cloudformation:{child.region}:{child.account_id}:stack/{child.stack_name}/local"
    values = {"Ref": stack_id}
    for name, value in child.outputs.items():
        if isinstance(value, list):
            value = ",".join(str(item) for item in value)
        values[f"Outputs.{name}"] = value if isinstance(value, str) else str(value)
    return values


def merge_child(
    parent: LocalStack, logical_id: str, kind: str, props: Mapping[str, object], child: LocalStack
) -> None:
    """The child's resources deployed with the parent's, known by their full path ``<LogicalId>/<Id>``."""

    def path(child_id: str) -> str:
        return f"{logical_id}/{child_id}"

    def renamed(specs: list[_Spec]) -> list[_Spec]:
        return [dataclasses.replace(spec, logical_id=path(spec.logical_id)) for spec in specs]

    parent.nested_stacks[logical_id] = child
    parent.tables.extend(renamed(child.tables))
    parent.state_machines.extend(renamed(child.state_machines))
    parent.queues.extend(renamed(child.queues))
    parent.event_rules.extend(renamed(child.event_rules))
    parent.subscriptions.extend(renamed(child.subscriptions))
    parent.functions.extend(child.functions)
    parent.layers.update(child.layers)
    parent.routes.extend(child.routes)
    parent.service_routes.extend(child.service_routes)
    parent.queue_mappings.extend(child.queue_mappings)
    for mine, theirs in (
        (parent.buckets, child.buckets),
        (parent.topics, child.topics),
        (parent.activities, child.activities),
        (parent.event_buses, child.event_buses),
        (parent.log_groups, child.log_groups),
    ):
        mine.update({path(child_id): name for child_id, name in theirs.items()})
    for alarm_id, alarm in child.alarms.items():
        parent.alarms[path(alarm_id)] = {"AlarmName": f"{child.stack_name}-{alarm_id}", **alarm}
    parent.not_honoured.extend(path(line) for line in child.not_honoured)
    note_unhonoured(parent, logical_id, kind, props)
