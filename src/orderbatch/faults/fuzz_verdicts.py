"""What the protocol fuzzer holds each answer to: AWS's codes and statuses, as botocore's models say them.

An answer passes when the connection held, the status is not a server error the operation's model does not
name, and an error carries a code the operation's model names (with that status) or one AWS documents as
common to the service's protocol. Some spoiled requests have one right answer whatever the operation: a JSON
service answers a body that is not JSON with ``SerializationException``, an ``X-Amz-Target`` naming no
operation with ``UnknownOperationException``, and refuses a request missing a required member.
"""

from __future__ import annotations

from dataclasses import dataclass

from botocore.model import OperationModel

from orderbatch.faults.fuzz_requests import (
    BODY_SYNTAX_MUTATIONS,
    HUGE_HEADER,
    MISSING_REQUIRED,
    SUCCESS,
    UNKNOWN_OPERATION,
    FuzzCase,
)
from sam_local_cloud.aws_limits import S3_DOCUMENTED_STATUSES

# Failure kinds, as the summary counts them.
DROPPED_CONNECTION = "dropped-connection"
SERVER_ERROR = "server-error"
UNKNOWN_CODE = "unknown-code"
WRONG_STATUS = "wrong-status"
WRONG_CODE = "wrong-code"
ACCEPTED_INVALID = "accepted-invalid"
UNPARSEABLE_ANSWER = "unparseable-answer"
UNCAUGHT_EXCEPTION = "uncaught-exception"
STOPPED_SERVING = "stopped-serving"

# The local cloud's answer to an operation it does not implement (the Lambda service's, for every service):
# such an operation is not "served", and its requests are counted apart.
NOT_IMPLEMENTED_CODE = "UnsupportedOperationException"

# AWS's common errors (docs: "Common Errors" of the API references), by protocol family, with their statuses.
_COMMON = {
    "AccessDeniedException": 400,
    "AccessDenied": 403,
    "IncompleteSignature": 400,
    "InternalFailure": 500,
    "InvalidAction": 400,
    "InvalidClientTokenId": 403,
    "InvalidSignatureException": 400,
    "NotAuthorized": 400,
    "OptInRequired": 403,
    "RequestExpired": 400,
    "ServiceUnavailable": 503,
    "ThrottlingException": 400,
    "ValidationError": 400,
    "SignatureDoesNotMatch": 403,
    "MissingAuthenticationToken": 403,
}
_JSON_COMMON = {
    "SerializationException": 400,
    "UnknownOperationException": 400,
    "ValidationException": 400,
    "UnrecognizedClientException": 400,
    "MissingAuthenticationTokenException": 400,
}
_QUERY_COMMON = {
    "MissingAction": 400,
    "MissingParameter": 400,
    "InvalidParameterValue": 400,
    "InvalidParameterCombination": 400,
    "InvalidQueryParameter": 400,
    "MalformedQueryString": 404,
    "InvalidParameter": 400,
}
# A header or request line longer than the front server takes: a bare 400 or 431, as AWS's front doors answer.
_OVERSIZE_STATUSES = {400, 431}


@dataclass(frozen=True)
class Outcome:
    """What boto3 saw: the answer's status and error code, or how the exchange failed."""

    status: int | None = None
    code: str | None = None
    message: str = ""
    transport_error: str | None = None
    parse_error: str | None = None
    sent: bool = True


def judge(case: FuzzCase, operation: OperationModel, outcome: Outcome) -> tuple[str, str] | None:
    """The failure (kind, detail) this answer shows, or None if it is an answer AWS gives."""
    if outcome.transport_error is not None:
        return DROPPED_CONNECTION, outcome.transport_error
    if outcome.parse_error is not None:
        if case.mutation == HUGE_HEADER and (
            outcome.status == 431 or _front_door_refusal(outcome.parse_error)
        ):
            return None
        return UNPARSEABLE_ANSWER, outcome.parse_error
    if case.mutation == HUGE_HEADER and (outcome.status or 0) in _OVERSIZE_STATUSES:
        return None
    answered = outcome.code or SUCCESS
    if case.expect and answered not in case.expect:
        return WRONG_CODE, f"{answered} ({outcome.status}) where AWS answers {' or '.join(case.expect)}"
    if outcome.code is None:
        return _judge_success(case, protocol_of(operation), outcome.status or 0)
    if outcome.code == NOT_IMPLEMENTED_CODE:
        return None
    return _judge_error(case, operation, outcome)


def protocol_of(operation: OperationModel) -> str:
    """The protocol boto3 speaks to the service (CloudWatch's model lists CBOR first; boto3 speaks JSON)."""
    model = operation.service_model
    return str(getattr(model, "resolved_protocol", None) or model.protocol)


def _judge_success(case: FuzzCase, protocol: str, status: int) -> tuple[str, str] | None:
    if status >= 500:
        return SERVER_ERROR, f"HTTP {status} without an error code"
    if case.mutation in BODY_SYNTAX_MUTATIONS and protocol == "json":
        return ACCEPTED_INVALID, f"HTTP {status} to a body that is not JSON"
    if case.mutation == UNKNOWN_OPERATION and protocol in ("json", "query"):
        return ACCEPTED_INVALID, f"HTTP {status} to an operation that does not exist"
    if case.mutation == MISSING_REQUIRED and case.label and protocol in ("json", "query"):
        return ACCEPTED_INVALID, f"HTTP {status} without the required member {case.label}"
    return None


def _judge_error(case: FuzzCase, operation: OperationModel, outcome: Outcome) -> tuple[str, str] | None:
    status, code, message = outcome.status or 0, str(outcome.code), outcome.message[:200]
    expected = expected_code(case, protocol_of(operation))
    if expected is not None and code not in expected:
        return WRONG_CODE, f"{code} ({status}) where AWS answers {' or '.join(sorted(expected))}"
    if code.isdigit():  # no error code botocore could read (a HEAD request's answer has no body)
        return (
            (SERVER_ERROR, f"HTTP {status} with no error code botocore could read") if status >= 500 else None
        )
    known = known_statuses(operation)
    if code not in known and _legacy_query_code(operation, code):
        return None
    if code not in known:
        if status >= 500:
            return SERVER_ERROR, f"{code} ({status}): {message}"
        return (
            UNKNOWN_CODE,
            f"{code} ({status}) is neither in the model of {operation.name} nor common: {message}",
        )
    modelled = known[code]
    if modelled is not None and modelled != status:
        return WRONG_STATUS, f"{code} with HTTP {status}, AWS's is {modelled}"
    if status >= 500 and code == "InternalFailure":
        return SERVER_ERROR, f"{code}: {message}"
    return None


def expected_code(case: FuzzCase, protocol: str) -> set[str] | None:
    """The codes AWS answers this spoiled request with whatever the operation, where there is one rule."""
    if protocol == "json":
        if case.mutation in BODY_SYNTAX_MUTATIONS:
            return {"SerializationException"}
        if case.mutation == UNKNOWN_OPERATION:
            return {"UnknownOperationException"}
    if protocol == "query" and case.mutation == UNKNOWN_OPERATION:
        return {"InvalidAction"}
    return None


def known_statuses(operation: OperationModel) -> dict[str, int | None]:
    key = (operation.service_model.service_name, operation.name)
    if key not in _KNOWN:
        _KNOWN[key] = _known_statuses(operation)
    return _KNOWN[key]


_KNOWN: dict[tuple[str, str], dict[str, int | None]] = {}


def _known_statuses(operation: OperationModel) -> dict[str, int | None]:
    """Every code this operation may answer, with its HTTP status where the model or AWS's docs give one."""
    protocol = protocol_of(operation)
    codes: dict[str, int | None] = dict(_COMMON)
    if protocol in ("json", "rest-json", "smithy-rpc-v2-cbor"):
        codes.update(_JSON_COMMON)
    if protocol == "rest-json":
        # Lambda answers a bad signature or key with 403, not the JSON services' 400 (FIELD-NOTES).
        codes.update({"InvalidSignatureException": 403, "UnrecognizedClientException": 403})
    if protocol in ("query", "ec2") or operation.service_model.metadata.get("awsQueryCompatible") is not None:
        codes.update(_QUERY_COMMON)
    if operation.service_model.service_name == "s3":
        codes.update(S3_DOCUMENTED_STATUSES)
    # The operation's list names the errors AWS documents for it; the service's other errors (a missing
    # resource of another kind) are AWS's words too, at their own statuses.
    service_errors = [operation.service_model.shape_for(name) for name in operation.service_model.shape_names]
    errors = [shape for shape in service_errors if shape.metadata.get("exception")] + list(
        operation.error_shapes
    )
    for shape in errors:
        error = shape.metadata.get("error", {})
        status = error.get("httpStatusCode")
        codes[shape.name] = int(status) if status is not None else None
        codes[error.get("code", shape.name)] = codes[shape.name]
        # A JSON service compatible with its query protocol answers the query protocol's code.
        query_error = shape.metadata.get("awsQueryError") or {}
        if query_error.get("code"):
            query_status = query_error.get("httpStatusCode", status)
            codes[query_error["code"]] = int(query_status) if query_status is not None else None
    return codes


# Query codes the JSON models dropped with their query protocol: SQS's query model gave ``QueueNameExists``
# the code ``QueueAlreadyExists``, which AWS still sends in ``x-amzn-query-error`` and boto3 reports.
_QUERY_CODES_OF_ERRORS = {"sqs": {"QueueNameExists": "QueueAlreadyExists"}}


def _legacy_query_code(operation: OperationModel, code: str) -> bool:
    """A JSON service compatible with its query protocol answers its query codes (``x-amzn-query-error``),
    which its JSON model no longer lists: SQS's ``AWS.SimpleQueueService.NonExistentQueue``, and the
    renamed codes of ``_QUERY_CODES_OF_ERRORS`` for the errors the operation lists."""
    metadata = operation.service_model.metadata
    if metadata.get("awsQueryCompatible") is None:
        return False
    renamed = _QUERY_CODES_OF_ERRORS.get(operation.service_model.service_name, {})
    return code.startswith("AWS.") or code in {renamed.get(shape.name) for shape in operation.error_shapes}


def _front_door_refusal(parse_error: str) -> bool:
    """The HTTP server's own page for a header line past its limit (431): refused before any service, as
    AWS's front door refuses it; boto3 cannot read a service error from it, and need not."""
    return "431" in parse_error and "Error response" in parse_error
