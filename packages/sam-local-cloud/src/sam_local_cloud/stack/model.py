"""What one template deploys locally (``LocalStack`` and its resources' specs), what the local cloud
does not honour, and the error a template that cannot run locally raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sam_local_cloud.api_integrations import ServiceRoute
from sam_local_cloud.event_sources import QueueMapping
from sam_local_cloud.lambda_service import FunctionSpec
from sam_local_cloud.lambda_service.layers import LayerSpec

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT_ID = "123456789012"
# The stack name `sam deploy --guided` offers when the project's samconfig.toml names none.
DEFAULT_STACK_NAME = "sam-app"

# Resource properties that change nothing on one machine; anything else unhandled is reported by name.
SILENTLY_LOCAL = {
    "AWS::Serverless::Function": {
        "Runtime",
        "Architectures",
        "CodeUri",
        "InlineCode",
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
        "DurableConfig",
        # Honoured as an alias of $LATEST (FunctionSpec.aliases): no versions are published locally.
        "AutoPublishAlias",
    },
    "AWS::Lambda::Function": {
        "Runtime",
        "Architectures",
        "Code",
        "Handler",
        "MemorySize",
        "Timeout",
        "Environment",
        "Description",
        "ReservedConcurrentExecutions",
        "Role",
        "Layers",
        "FunctionName",
        "TracingConfig",
        "Tags",
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
    "AWS::CloudFormation::Stack": {"TemplateURL", "Parameters"},
    # TemplateUrl: SAM's plugin copies a local Location into it for its translation.
    "AWS::Serverless::Application": {"Location", "Parameters", "TemplateUrl"},
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
    activities: dict[str, str] = field(default_factory=dict)  # names, by logical ID
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
    # What Ref returns for each resource of this template, by logical ID: CloudFormation's physical ID
    # (a function's or table's name, a state machine's ARN, a queue's URL).
    physical_ids: dict[str, str] = field(default_factory=dict)
    not_honoured: list[str] = field(default_factory=list)
    # Nested stacks by logical ID: their resources are also in the lists above (stack.nested).
    nested_stacks: dict[str, LocalStack] = field(default_factory=dict)
    # The template as read, its conditions decided: what IAM translates into the roles (sam_local_cloud.iam).
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


def note_unhonoured(stack: LocalStack, logical_id: str, kind: str, props: Mapping[str, object]) -> None:
    """Each property of a resource the local cloud does not honour, by name; a type without a list of
    properties that change nothing locally notes only what NOT_ENFORCED_LOCALLY names."""
    for prop in props:
        if prop in NOT_ENFORCED_LOCALLY:
            stack.not_honoured.append(f"{logical_id}.{prop}: {NOT_ENFORCED_LOCALLY[prop]}")
        elif prop not in SILENTLY_LOCAL.get(kind, set(props)):
            stack.not_honoured.append(f"{logical_id}.{prop}: not honoured locally")
