"""The IAM actions and resource ARNs a request needs, derived from it as the service authorises it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from sam_local_cloud.iam.policies import Access
from sam_local_cloud.json_types import JsonValue


@dataclass(frozen=True)
class _Scope:
    access_key_id: str
    region: str
    service: str


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]*)/([^/,\s]+)/")


def credential_scope(environ: Mapping[str, Any]) -> _Scope | None:
    """Who signed the request (SigV4 header or presigned URL), for which region and service."""
    match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match is None:
        presigned = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential")
        if not presigned:
            return None
        match = _CREDENTIAL.search(f"Credential={presigned[0]}")
        if match is None:
            return None
    return _Scope(access_key_id=match.group(1), region=match.group(2), service=match.group(3))


def _body(environ: dict[str, Any]) -> bytes:
    """The request body, read once and put back for whoever serves the request."""
    import io

    body: bytes = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


# Signing names whose IAM prefix differs, and the botocore model the REST services are routed with.
_IAM_PREFIX = {"monitoring": "cloudwatch"}
_REST_MODELS = {"lambda": "lambda", "s3": "s3"}
# Identity policies are not what authorises these: the HTTP API checks its own SigV4, STS answers anyone.
_NOT_CHECKED = {"execute-api", "sts"}


# Answered by a worker holding a task token: IAM authorises them on the activity or state machine it came
# from, which only the engine can tell from the token.
_TASK_TOKEN_ACTIONS = frozenset(
    {"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"}
)
TaskTokenResource = Callable[[str, str, str], "str | None"]  # (account, region, token) -> ARN


def requested_access(
    service: str,
    environ: dict[str, Any],
    region: str,
    account_id: str,
    task_token_resource: TaskTokenResource | None = None,
) -> list[Access]:
    """The actions and resources a request needs, derived from it as IAM would; [] if not derivable."""
    if service in _NOT_CHECKED:
        return []
    if service in _REST_MODELS:
        operation, params = _routed_operation(service, environ)
        if operation is None:
            return []
        if service == "s3":
            return _s3_accesses(operation, params, environ)
        return _lambda_accesses(operation, params, environ, region, account_id)
    body = _body(environ)
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        operation = target.rpartition(".")[2]
        params = json.loads(body or b"{}") if body.strip() else {}
    else:
        form = {key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items()}
        operation, params = form.get("Action", ""), form
    if not operation:
        # Any other REST service moto serves (API Gateway, Batch, EKS, X-Ray, ...): its router knows it.
        routed, params = _routed_operation(service, environ)
        if routed is None:
            return []
        operation = routed
    prefix = _IAM_PREFIX.get(service, service)
    arn_prefix = f"arn:aws:{prefix}:{region}:{account_id}"
    action = f"{prefix}:{_ACTION_NAMES.get(prefix, {}).get(operation, operation)}"
    if action in _TASK_TOKEN_ACTIONS:
        token = str(params.get("taskToken", ""))
        owner = task_token_resource(account_id, region, token) if task_token_resource and token else None
        return [Access(action, owner) if owner else Access(action, "*", resource_known=False)]
    deriver = _RESOURCE_DERIVERS.get(prefix)
    if deriver is not None:
        return _unique(deriver(action, params, arn_prefix))
    return _unique(
        access if access.resource != "*" else Access(access.action, "*", resource_known=False)
        for access in _generic_accesses(action, params, arn_prefix)
    )


def _routed_operation(service: str, environ: dict[str, Any]) -> tuple[str | None, Mapping[str, JsonValue]]:
    """The operation and URI parameters of a REST request, matched by moto's router on botocore's model."""
    from botocore.exceptions import UnknownServiceError
    from werkzeug.exceptions import NotFound

    from sam_local_cloud.moto_seam.services import Request

    try:
        operation, params = _router(_REST_MODELS.get(service, service)).match(Request(environ))
    except (NotFound, NotImplementedError, UnknownServiceError):
        # UnknownServiceError: a signing name botocore has no model of; the request is not checked.
        return None, {}
    if operation is None:
        return None, {}
    return str(operation.name), dict(params)


@cache
def _router(service: str) -> Any:
    from sam_local_cloud.moto_seam.services import get_service_router

    return get_service_router(service)


def _objects(value: JsonValue) -> list[JsonValue]:
    """A request member that must be a JSON array, as a list."""
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, found {type(value).__name__}")
    return value


def _object(value: JsonValue) -> dict[str, JsonValue]:
    """A request member that must be a JSON object, as a dict."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, found {type(value).__name__}")
    return value


def _unique(accesses: Iterable[Access]) -> list[Access]:
    return list(dict.fromkeys(accesses))


_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _dynamodb_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    """DynamoDB authorises a transaction per item (PutItem, UpdateItem, ... on each item's table) and a
    batch per table; a Query or Scan of an index on the index's ARN."""

    def table_arn(name: str) -> str:
        return name if name.startswith("arn:") else f"{arn_prefix}:table/{name}"

    operation = action.partition(":")[2]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        for item in _objects(params.get("TransactItems") or []):
            for kind, request in _object(item).items():
                yield Access(
                    f"dynamodb:{_TRANSACTION_ACTIONS.get(kind, kind)}",
                    table_arn(str(_object(request)["TableName"])),
                )
    elif operation in ("BatchWriteItem", "BatchGetItem"):
        for table in _object(params.get("RequestItems") or {}):
            yield Access(action, table_arn(table))
    elif "TableName" in params:
        arn = table_arn(str(params["TableName"]))
        if params.get("IndexName"):
            arn += f"/index/{params['IndexName']}"
        yield Access(action, arn)
    else:
        yield from _generic_accesses(action, params, arn_prefix)


# Operations authorised by an IAM action of another name, by IAM prefix (Service Authorization Reference).
_ACTION_NAMES: dict[str, dict[str, str]] = {
    "sqs": {
        "SendMessageBatch": "SendMessage",
        "DeleteMessageBatch": "DeleteMessage",
        "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    },
    "sns": {"PublishBatch": "Publish"},
}

# The parameters that name a request's resource by ARN, most specific first (Step Functions, SNS,
# tagging, ...); any other top-level member ending in "Arn" whose value is an ARN comes after them.
_ARN_PARAMETERS = (
    "mapRunArn",
    "executionArn",
    "stateMachineArn",
    "activityArn",
    "TopicArn",
    "TargetArn",
    "resourceArn",
    "ResourceArn",
    "AlarmArn",
)


def _generic_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    named = [params.get(name) for name in _ARN_PARAMETERS]
    others = [value for name, value in params.items() if name.lower().endswith("arn")]
    for value in (*named, *others):
        if isinstance(value, str) and value.startswith("arn:"):
            yield Access(action, value)
            return
    yield Access(action, "*")


# Step Functions operations that name the resource they create by its name.
_STATES_CREATED = {"states:CreateStateMachine": "stateMachine", "states:CreateActivity": "activity"}


def _states_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    kind = _STATES_CREATED.get(action)
    if kind and params.get("name"):
        yield Access(action, f"{arn_prefix}:{kind}:{params['name']}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _sns_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    if action == "sns:CreateTopic" and params.get("Name"):
        yield Access(action, f"{arn_prefix}:{params['Name']}")
    elif action == "sns:Unsubscribe" and str(params.get("SubscriptionArn", "")).startswith("arn:"):
        # A subscription ARN is its topic's ARN and an ID; SNS authorises the call on the topic.
        yield Access(action, str(params["SubscriptionArn"]).rpartition(":")[0])
    elif action == "sns:Publish" and params.get("PhoneNumber"):
        # An SMS to a number has no topic: SNS names the number as the resource.
        yield Access(action, str(params["PhoneNumber"]))
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _sqs_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    """SQS authorises on the queue's ARN; requests name the queue by URL (``.../<account>/<name>``), or
    by name when creating it or asking for its URL."""
    url = params.get("QueueUrl")
    if isinstance(url, str) and url:
        account, _, name = urlsplit(url).path.strip("/").rpartition("/")
        region = arn_prefix.split(":")[3]
        yield Access(action, f"arn:aws:sqs:{region}:{account or arn_prefix.split(':')[4]}:{name}")
    elif params.get("QueueName"):
        owner = params.get("QueueOwnerAWSAccountId")
        base = f"arn:aws:sqs:{arn_prefix.split(':')[3]}:{owner}" if owner else arn_prefix
        yield Access(action, f"{base}:{params['QueueName']}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


# EventBridge operations on a rule (named by Name or Rule, on the bus named by EventBusName).
_EVENTS_RULE_OPERATIONS = {
    "PutRule",
    "DeleteRule",
    "DescribeRule",
    "EnableRule",
    "DisableRule",
    "PutTargets",
    "RemoveTargets",
    "ListTargetsByRule",
}
# EventBridge operations on an event bus named by Name.
_EVENTS_BUS_OPERATIONS = {"CreateEventBus", "DeleteEventBus", "DescribeEventBus", "UpdateEventBus"}


def _events_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    """EventBridge authorises PutEvents per entry on the entry's bus (by name or ARN; ``default`` when
    none is named), rule operations on ``rule/<name>`` (``rule/<bus>/<name>`` off the default bus)."""

    def bus_name(value: JsonValue) -> str:
        named = str(value or "default")
        return named.rpartition("event-bus/")[2] if named.startswith("arn:") else named

    operation = action.partition(":")[2]
    if operation == "PutEvents":
        entries = _objects(params.get("Entries") or [{}])
        for entry in entries:
            yield Access(action, f"{arn_prefix}:event-bus/{bus_name(_object(entry).get('EventBusName'))}")
    elif operation in _EVENTS_RULE_OPERATIONS and (params.get("Name") or params.get("Rule")):
        rule = params.get("Name") or params.get("Rule")
        bus = bus_name(params.get("EventBusName"))
        yield Access(
            action, f"{arn_prefix}:rule/{rule}" if bus == "default" else f"{arn_prefix}:rule/{bus}/{rule}"
        )
    elif operation in _EVENTS_BUS_OPERATIONS:
        yield Access(action, f"{arn_prefix}:event-bus/{bus_name(params.get('Name'))}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _logs_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    group = params.get("logGroupName")
    if not group:
        yield from _generic_accesses(action, params, arn_prefix)
    elif params.get("logStreamName"):
        yield Access(action, f"{arn_prefix}:log-group:{group}:log-stream:{params['logStreamName']}")
    else:
        yield Access(action, f"{arn_prefix}:log-group:{group}")


def _cloudwatch_accesses(action: str, params: Mapping[str, JsonValue], arn_prefix: str) -> Iterator[Access]:
    names = _objects(params.get("AlarmNames") or ([params["AlarmName"]] if params.get("AlarmName") else []))
    if not names:
        yield Access(action, "*")
    for name in names:
        yield Access(action, f"{arn_prefix}:alarm:{name}")


# By IAM prefix.
_RESOURCE_DERIVERS = {
    "dynamodb": _dynamodb_accesses,
    "states": _states_accesses,
    "sns": _sns_accesses,
    "sqs": _sqs_accesses,
    "events": _events_accesses,
    "logs": _logs_accesses,
    "cloudwatch": _cloudwatch_accesses,
}

# S3 operations whose IAM action has another name (the rest are authorised as s3:<Operation>).
_S3_ACTIONS = {
    "ListObjects": "ListBucket",
    "ListObjectsV2": "ListBucket",
    "HeadBucket": "ListBucket",
    "HeadObject": "GetObject",
    "GetObjectAttributes": "GetObject",
    "ListObjectVersions": "ListBucketVersions",
    "ListMultipartUploads": "ListBucketMultipartUploads",
    "ListParts": "ListMultipartUploadParts",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "UploadPartCopy": "PutObject",
    "CompleteMultipartUpload": "PutObject",
    "CopyObject": "PutObject",
    "DeleteObjects": "DeleteObject",
    "ListBuckets": "ListAllMyBuckets",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "PutBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "DeleteBucketLifecycle": "PutLifecycleConfiguration",
    "GetBucketCors": "GetBucketCORS",
    "PutBucketCors": "PutBucketCORS",
    "DeleteBucketCors": "PutBucketCORS",
    "DeleteBucketTagging": "PutBucketTagging",
    "GetBucketEncryption": "GetEncryptionConfiguration",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "DeleteBucketEncryption": "PutEncryptionConfiguration",
    "GetBucketNotificationConfiguration": "GetBucketNotification",
    "PutBucketNotificationConfiguration": "PutBucketNotification",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "DeletePublicAccessBlock": "PutBucketPublicAccessBlock",
}


def _s3_accesses(operation: str, params: Mapping[str, JsonValue], environ: dict[str, Any]) -> list[Access]:
    action = f"s3:{_S3_ACTIONS.get(operation, operation)}"
    bucket, key = params.get("Bucket"), params.get("Key")
    if not bucket:
        return [Access(action, "*")]
    if operation == "DeleteObjects":
        keys = re.findall(rb"<Key>(.*?)</Key>", _body(environ))
        return _unique(Access(action, f"arn:aws:s3:::{bucket}/{_xml_text(found)}") for found in keys)
    accesses = [Access(action, f"arn:aws:s3:::{bucket}/{key}" if key else f"arn:aws:s3:::{bucket}")]
    source = environ.get("HTTP_X_AMZ_COPY_SOURCE")
    if source and operation in ("CopyObject", "UploadPartCopy"):
        source_path = unquote(source.split("?", 1)[0]).lstrip("/")
        accesses.append(Access("s3:GetObject", f"arn:aws:s3:::{source_path}"))
    return accesses


def _xml_text(raw: bytes) -> str:
    from xml.sax.saxutils import unescape

    return unescape(raw.decode("utf-8", "replace"), {"&quot;": '"', "&apos;": "'"})


# Lambda operations whose IAM action has another name.
_LAMBDA_ACTIONS = {"Invoke": "InvokeFunction", "InvokeWithResponseStream": "InvokeFunction"}


def _lambda_accesses(
    operation: str, params: Mapping[str, JsonValue], environ: Mapping[str, Any], region: str, account_id: str
) -> list[Access]:
    action = f"lambda:{_LAMBDA_ACTIONS.get(operation, operation)}"
    execution = params.get("DurableExecutionArn")
    if execution:
        # The durable execution operations act on the execution: its ARN is the resource.
        return [Access(action, unquote(str(execution)))]
    name = params.get("FunctionName")
    if not name:
        return [Access(action, "*")]
    qualifier = parse_qs(environ.get("QUERY_STRING", "")).get("Qualifier", [None])[0]
    return [Access(action, function_arn(str(name), qualifier, region, account_id))]


def function_arn(name: str, qualifier: str | None, region: str, account_id: str) -> str:
    """A function's ARN from any name form the Lambda API accepts (name, partial ARN, ARN; qualified)."""
    name = unquote(name)
    if name.startswith("arn:"):
        arn = name
    elif ":function:" in name:
        arn = f"arn:aws:lambda:{region}:{name}"
    else:
        arn = f"arn:aws:lambda:{region}:{account_id}:function:{name}"
    if qualifier and arn.count(":") == 6:
        arn += f":{qualifier}"
    return arn
