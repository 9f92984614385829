"""What ``Ref`` and ``Fn::GetAtt`` return for each resource the local cloud deploys: one table per type.

Each type lists the attributes CloudFormation documents for it (the resource reference's "Return values",
the same list as the read-only properties of the type's registry schema) and computes the ones that follow
from the local physical name. An attribute that is a property's value (``!GetAtt Queue.VisibilityTimeout``)
is read from the property. A ``Fn::GetAtt`` of an attribute the type does not document fails the template
with CloudFormation's message instead of resolving to whatever SAM CLI's resolver falls back to (for
``Arn``, a Lambda function ARN).
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sam_local_cloud.accounts import FIRST_ACCOUNT_ID

ReturnValues = dict[str, str]


@dataclass(frozen=True)
class _Resource:
    """One resource of the template as its return values are computed: properties after the first pass."""

    logical_id: str
    props: Mapping[str, Any]
    stack_name: str
    region: str
    account_id: str
    resources: Mapping[str, Any]

    def name(self, prop: str, default: str | None = None) -> str:
        """The name the template sets (a first-pass string), else CloudFormation's generated name (locally
        ``<stack>-<logical id>``, without CloudFormation's random suffix)."""
        value = self.props.get(prop)
        if isinstance(value, str | int) and str(value):
            return str(value)
        return default if default is not None else f"{self.stack_name}-{self.logical_id}"

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account_id}:{resource}"


@dataclass(frozen=True)
class ResourceType:
    """What CloudFormation documents for a type: its attributes, and how the local values are computed."""

    attributes: frozenset[str]
    values: Callable[[_Resource], ReturnValues]


def _function(resource: _Resource) -> ReturnValues:
    name = resource.name("FunctionName", default=resource.logical_id)
    apply_on = str((resource.props.get("SnapStart") or {}).get("ApplyOn", "None"))
    return {
        "Ref": name,
        "Arn": resource.arn("lambda", f"function:{name}"),
        "SnapStartResponse.ApplyOn": apply_on,
        "SnapStartResponse.OptimizationStatus": "On" if apply_on == "PublishedVersions" else "Off",
    }


def _alias(resource: _Resource) -> ReturnValues:
    # SAM's translation of AutoPublishAlias (what IAM reads): Ref is the alias ARN.
    function_name = _function_name(resource.resources, resource.props.get("FunctionName"))
    arn = resource.arn("lambda", f"function:{function_name}:{resource.props.get('Name')}")
    return {"Ref": arn, "AliasArn": arn}


def _version(resource: _Resource) -> ReturnValues:
    # Each local deployment publishes a function's first version.
    function_name = _function_name(resource.resources, resource.props.get("FunctionName"))
    function_arn = resource.arn("lambda", f"function:{function_name}")
    return {"Ref": f"{function_arn}:1", "FunctionArn": function_arn, "Version": "1"}


def _layer(resource: _Resource) -> ReturnValues:
    # Ref is the layer version's ARN; each local deployment is the layer's first version.
    arn = resource.arn("lambda", f"layer:{resource.name('LayerName', default=resource.logical_id)}:1")
    return {"Ref": arn, "LayerVersionArn": arn}


def _table(resource: _Resource) -> ReturnValues:
    name = resource.name("TableName")
    arn = resource.arn("dynamodb", f"table/{name}")
    values = {"Ref": name, "Arn": arn}
    if resource.props.get("StreamSpecification"):
        # The stream label is the stream's creation time; the local one is fixed so runs compare.
        values["StreamArn"] = f"{arn}/stream/1970-01-01T00:00:00.000"
    return values


def _queue(resource: _Resource) -> ReturnValues:
    suffix = ".fifo" if _is_true(resource.props.get("FifoQueue")) else ""
    name = resource.name("QueueName", default=f"{resource.stack_name}-{resource.logical_id}{suffix}")
    url = f"https://sqs.{resource.region}.amazonaws.com/{resource.account_id}/{name}"
    return {"Ref": url, "Arn": resource.arn("sqs", name), "QueueName": name, "QueueUrl": url}


def _topic(resource: _Resource) -> ReturnValues:
    name = resource.name("TopicName")
    arn = resource.arn("sns", name)
    return {"Ref": arn, "TopicArn": arn, "TopicName": name}


def _event_bus(resource: _Resource) -> ReturnValues:
    name = resource.name("Name")
    return {"Ref": name, "Arn": resource.arn("events", f"event-bus/{name}"), "Name": name}


def _rule(resource: _Resource) -> ReturnValues:
    name = resource.name("Name")
    bus = resource.props.get("EventBusName") or "default"
    bus_name = bus.rsplit("/", 1)[-1] if isinstance(bus, str) else "default"
    path = f"{bus_name}/{name}" if bus_name != "default" else name
    return {"Ref": name, "Arn": resource.arn("events", f"rule/{path}"), "RuleName": name}


def _bucket(resource: _Resource) -> ReturnValues:
    generated = f"{resource.stack_name}-{resource.logical_id}"
    if resource.account_id != FIRST_ACCOUNT_ID:
        # S3's bucket names are one namespace for all accounts, and CloudFormation's generated ones carry a
        # random suffix; here the suffix is the account's, so two clouds of one template in one process do
        # not collide, and it is left off in the first account, so a lone cloud's names are predictable.
        generated += f"-{resource.account_id}"
    name = resource.name("BucketName", default=generated.lower())
    region = resource.region
    # S3's website endpoints use a dash before the region in the regions older than 2014, a dot after.
    website = "s3-website-" if region in _DASHED_WEBSITE_REGIONS else "s3-website."
    return {
        "Ref": name,
        "Arn": f"arn:aws:s3:::{name}",
        "DomainName": f"{name}.s3.amazonaws.com",
        "DualStackDomainName": f"{name}.s3.dualstack.{region}.amazonaws.com",
        "RegionalDomainName": f"{name}.s3.{region}.amazonaws.com",
        "WebsiteURL": f"http://{name}.{website}{region}.amazonaws.com",
    }


_DASHED_WEBSITE_REGIONS = frozenset(
    {
        "us-east-1",
        "us-west-1",
        "us-west-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-northeast-1",
        "eu-west-1",
        "sa-east-1",
        "us-gov-west-1",
    }
)


def _state_machine(resource: _Resource) -> ReturnValues:
    name = resource.name("Name", default=resource.name("StateMachineName"))
    arn = resource.arn("states", f"stateMachine:{name}")
    return {"Ref": arn, "Arn": arn, "Name": name}


def _activity(resource: _Resource) -> ReturnValues:
    name = resource.name("Name")
    arn = resource.arn("states", f"activity:{name}")
    return {"Ref": arn, "Arn": arn, "Name": name}


def _role(resource: _Resource) -> ReturnValues:
    name = resource.name("RoleName", default=f"{resource.stack_name}-{resource.logical_id}"[:64])
    arn = f"arn:aws:iam::{resource.account_id}:role{resource.props.get('Path') or '/'}{name}"
    return {"Ref": name, "Arn": arn, "RoleId": f"AROA{unique_id(arn, 17)}"}


def _managed_policy(resource: _Resource) -> ReturnValues:
    name = resource.name("ManagedPolicyName")
    arn = f"arn:aws:iam::{resource.account_id}:policy{resource.props.get('Path') or '/'}{name}"
    return {
        "Ref": arn,
        "PolicyArn": arn,
        "PolicyId": f"ANPA{unique_id(arn, 17)}",
        "DefaultVersionId": "v1",
        "IsAttachable": "true",
    }


def _log_group(resource: _Resource) -> ReturnValues:
    name = resource.name("LogGroupName")
    return {"Ref": name, "Arn": resource.arn("logs", f"log-group:{name}:*")}


def _http_api(resource: _Resource) -> ReturnValues:
    api_id = resource.logical_id.lower()
    return {
        "Ref": api_id,
        "ApiId": api_id,
        "ApiEndpoint": f"https://{api_id}.execute-api.{resource.region}.amazonaws.com",
        "ExecuteApiArn": resource.arn("execute-api", api_id),
    }


def _rest_api(resource: _Resource) -> ReturnValues:
    api_id = resource.logical_id.lower()
    return {"Ref": api_id, "RestApiId": api_id}


def _alarm(resource: _Resource) -> ReturnValues:
    name = resource.name("AlarmName")
    return {"Ref": name, "Arn": resource.arn("cloudwatch", f"alarm:{name}")}


def _attributes(*names: str) -> frozenset[str]:
    return frozenset(names)


_FUNCTION = ResourceType(
    _attributes(
        "Arn", "SnapStartResponse", "SnapStartResponse.ApplyOn", "SnapStartResponse.OptimizationStatus"
    ),
    _function,
)
_TABLE = ResourceType(_attributes("Arn", "StreamArn"), _table)
_STATE_MACHINE = ResourceType(_attributes("Arn", "Name", "StateMachineRevisionId"), _state_machine)
_LAYER = ResourceType(_attributes("LayerVersionArn"), _layer)
_HTTP_API = ResourceType(_attributes("ApiEndpoint", "ApiId", "ExecuteApiArn"), _http_api)

# CloudFormation's types; SAM's resolve as the type SAM translates them into.
RESOURCE_TYPES: dict[str, ResourceType] = {
    "AWS::Lambda::Function": _FUNCTION,
    "AWS::Lambda::Alias": ResourceType(_attributes("AliasArn"), _alias),
    "AWS::Lambda::Version": ResourceType(_attributes("FunctionArn", "Version"), _version),
    "AWS::Lambda::LayerVersion": _LAYER,
    "AWS::DynamoDB::Table": _TABLE,
    "AWS::SQS::Queue": ResourceType(
        _attributes(
            "Arn",
            "QueueName",
            "QueueUrl",
            "ContentBasedDeduplication",
            "DeduplicationScope",
            "DelaySeconds",
            "FifoQueue",
            "FifoThroughputLimit",
            "KmsDataKeyReusePeriodSeconds",
            "KmsMasterKeyId",
            "MaximumMessageSize",
            "MessageRetentionPeriod",
            "ReceiveMessageWaitTimeSeconds",
            "RedrivePolicy.deadLetterTargetArn",
            "RedrivePolicy.maxReceiveCount",
            "SqsManagedSseEnabled",
            "Tags",
            "VisibilityTimeout",
        ),
        _queue,
    ),
    "AWS::SNS::Topic": ResourceType(
        _attributes(
            "TopicArn",
            "TopicName",
            "ContentBasedDeduplication",
            "DeliveryStatusLogging",
            "DisplayName",
            "FifoThroughputScope",
            "FifoTopic",
            "KmsMasterKeyId",
            "MaximumMessageSize",
            "SignatureVersion",
            "Subscription",
            "Tags",
            "TracingConfig",
        ),
        _topic,
    ),
    "AWS::Events::EventBus": ResourceType(
        _attributes(
            "Arn",
            "Name",
            "DeadLetterConfig.Arn",
            "Description",
            "EventSourceName",
            "KmsKeyIdentifier",
            "LogConfig.IncludeDetail",
            "LogConfig.Level",
            "Tags",
        ),
        _event_bus,
    ),
    "AWS::Events::Rule": ResourceType(_attributes("Arn", "RuleName"), _rule),
    "AWS::S3::Bucket": ResourceType(
        _attributes(
            "Arn",
            "DomainName",
            "DualStackDomainName",
            "RegionalDomainName",
            "WebsiteURL",
            "MetadataConfiguration.AnnotationTableConfiguration.TableArn",
            "MetadataConfiguration.AnnotationTableConfiguration.TableName",
            "MetadataConfiguration.Destination",
            "MetadataConfiguration.InventoryTableConfiguration.TableArn",
            "MetadataConfiguration.InventoryTableConfiguration.TableName",
            "MetadataConfiguration.JournalTableConfiguration.TableArn",
            "MetadataConfiguration.JournalTableConfiguration.TableName",
            "MetadataTableConfiguration.S3TablesDestination.TableArn",
            "MetadataTableConfiguration.S3TablesDestination.TableNamespace",
        ),
        _bucket,
    ),
    "AWS::StepFunctions::StateMachine": _STATE_MACHINE,
    "AWS::StepFunctions::Activity": ResourceType(
        _attributes(
            "Arn",
            "Name",
            "Tags",
            "EncryptionConfiguration.KmsDataKeyReusePeriodSeconds",
            "EncryptionConfiguration.KmsKeyId",
            "EncryptionConfiguration.Type",
        ),
        _activity,
    ),
    "AWS::IAM::Role": ResourceType(_attributes("Arn", "RoleId"), _role),
    "AWS::IAM::ManagedPolicy": ResourceType(
        _attributes(
            "AttachmentCount",
            "CreateDate",
            "DefaultVersionId",
            "IsAttachable",
            "PermissionsBoundaryUsageCount",
            "PolicyArn",
            "PolicyId",
            "UpdateDate",
        ),
        _managed_policy,
    ),
    "AWS::Logs::LogGroup": ResourceType(_attributes("Arn"), _log_group),
    "AWS::ApiGatewayV2::Api": _HTTP_API,
    "AWS::CloudWatch::Alarm": ResourceType(_attributes("Arn"), _alarm),
    "AWS::Serverless::Function": _FUNCTION,
    "AWS::Serverless::SimpleTable": _TABLE,
    "AWS::Serverless::StateMachine": _STATE_MACHINE,
    "AWS::Serverless::LayerVersion": _LAYER,
    "AWS::Serverless::HttpApi": _HTTP_API,
    "AWS::Serverless::Api": ResourceType(_attributes("RestApiId", "RootResourceId"), _rest_api),
}
# SAM types and the CloudFormation type whose documented attributes they have once translated.
SAM_TYPES = {
    "AWS::Serverless::Function": "AWS::Lambda::Function",
    "AWS::Serverless::SimpleTable": "AWS::DynamoDB::Table",
    "AWS::Serverless::StateMachine": "AWS::StepFunctions::StateMachine",
    "AWS::Serverless::LayerVersion": "AWS::Lambda::LayerVersion",
    "AWS::Serverless::HttpApi": "AWS::ApiGatewayV2::Api",
    "AWS::Serverless::Api": "AWS::ApiGateway::RestApi",
}


def physical_ids(
    resources: Mapping[str, Any], stack_name: str, region: str, account_id: str
) -> dict[str, dict[str, str]]:
    """What ``Ref`` and ``Fn::GetAtt`` return for each resource, as CloudFormation would after creating it.

    A type outside the table keeps only ``Ref`` (its logical ID); its attributes are left to SAM CLI's
    resolver.
    """
    ids: dict[str, dict[str, str]] = {}
    for logical_id, body in resources.items():
        kind = body.get("Type", "")
        props = body.get("Properties") or {}
        resource_type = RESOURCE_TYPES.get(kind)
        if resource_type is None:
            ids[logical_id] = {"Ref": logical_id}
            continue
        resource = _Resource(logical_id, props, stack_name, region, account_id, resources)
        values = resource_type.values(resource)
        for attribute in resource_type.attributes - set(values):
            if (value := _property_value(props, attribute)) is not None:
                values[attribute] = value
        ids[logical_id] = values
        if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            ids.update(_published_alias_ids(logical_id, values["Arn"], props.get("AutoPublishAlias")))
    return ids


def unsupported_attributes(template: Mapping[str, Any]) -> list[str]:
    """CloudFormation's error for each ``Fn::GetAtt`` (or ``${Resource.Attribute}`` of a ``Fn::Sub``) of an
    attribute its resource's type does not document."""
    resources = template.get("Resources") or {}
    errors = []
    for logical_id, attribute in _attribute_references(template):
        kind = (resources.get(logical_id) or {}).get("Type")
        resource_type = RESOURCE_TYPES.get(str(kind))
        if resource_type is not None and attribute not in resource_type.attributes:
            message = (
                f"Template error: resource {logical_id} does not support attribute type {attribute} "
                "in Fn::GetAtt"
            )
            if message not in errors:
                errors.append(message)
    return errors


_SUB_REFERENCE = re.compile(r"\$\{([A-Za-z0-9]+)\.([A-Za-z0-9.]+)\}")


def _attribute_references(node: object) -> Iterator[tuple[str, str]]:
    if isinstance(node, list):
        for item in node:
            yield from _attribute_references(item)
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if key == "Fn::GetAtt":
                arguments = value.split(".", 1) if isinstance(value, str) else value
                if isinstance(arguments, list) and len(arguments) == 2 and isinstance(arguments[1], str):
                    yield str(arguments[0]), arguments[1]
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) and value else value
                if isinstance(text, str):
                    yield from ((match[1], match[2]) for match in _SUB_REFERENCE.finditer(text))
            yield from _attribute_references(value)


def _property_value(props: Mapping[str, object], attribute: str) -> str | None:
    """A documented attribute that is a property's value (``VisibilityTimeout``,
    ``RedrivePolicy.deadLetterTargetArn``), when the template sets it to a scalar."""
    value: object = props
    for part in attribute.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, str | int | float) else None


def _function_name(resources: Mapping[str, object], function: object) -> str:
    """An alias's function as the first pass left it: a function's logical ID (an unresolved Ref), a name
    or an ARN."""
    target = resources.get(str(function))
    if isinstance(target, Mapping):
        return str((target.get("Properties") or {}).get("FunctionName") or function)
    return str(function).rsplit(":function:", 1)[-1].split(":", 1)[0]


def _published_alias_ids(logical_id: str, function_arn: str, alias: object) -> dict[str, dict[str, str]]:
    """SAM's ``AutoPublishAlias`` makes an AWS::Lambda::Alias whose Ref is the alias ARN: templates name
    it ``!Ref <Function>.Alias`` (SAM's shorthand) or SAM's logical ID for it, ``<Function>Alias<name>``."""
    if not alias:
        return {}
    alias_arn = {"Ref": f"{function_arn}:{alias}", "AliasArn": f"{function_arn}:{alias}"}
    generated_id = f"{logical_id}Alias" + "".join(c for c in str(alias) if c.isalnum())
    return {f"{logical_id}.Alias": alias_arn, generated_id: alias_arn}


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def unique_id(text: str, length: int) -> str:
    """Upper-case letters and digits derived from ``text``, as IAM's unique IDs look: stable across runs."""
    alphabet = string.ascii_uppercase + "234567"
    number = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big")
    characters = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        characters.append(alphabet[index])
    return "".join(characters)
