"""Access-denied and refused-signature answers in each service's protocol, and the error boto3 raises for
an in-process call."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from sam_local_cloud.error_answers import Answer, error_answer
from sam_local_cloud.iam.identities import Denial, SignatureRefusal


def access_denied_client_error(message: str, operation: str) -> ClientError:
    """What boto3 raises for Lambda's 403 ``AccessDeniedException`` (an error its model does not name)."""
    request_id = str(uuid.uuid4())
    response: Any = {
        "Error": {"Code": "AccessDeniedException", "Message": message},
        "ResponseMetadata": {
            "RequestId": request_id,
            "HTTPStatusCode": 403,
            "HTTPHeaders": {"x-amzn-requestid": request_id, "x-amzn-errortype": "AccessDeniedException"},
            "RetryAttempts": 0,
        },
        "Message": message,
    }
    return ClientError(response, operation)


_QUERY_COMPATIBLE = {"monitoring": 400, "sqs": 403}


def denied_response(service: str, environ: Mapping[str, object], denial: Denial) -> Answer:
    """The access-denied answer in the shape the service's protocol gives it (status, headers, body)."""
    if service == "s3":
        return _s3_error("AccessDenied", denial.message(quote_resource=True))
    if service == "lambda":
        return _lambda_error("AccessDeniedException", denial.message())
    if environ.get("HTTP_X_AMZ_TARGET"):
        # Query-compatible JSON services answer with their query protocol's code (AccessDenied).
        status = _QUERY_COMPATIBLE.get(service, 400)
        query_code = "AccessDenied" if service in _QUERY_COMPATIBLE else None
        return _json_error(environ, "AccessDeniedException", denial.message(), status, query_code)
    code = "AuthorizationError" if service == "sns" else "AccessDenied"
    return _query_error(code, denial.message())


# A refused signature's code: (JSON protocols and Lambda, S3, query protocols).
_SIGNATURE_CODES = {
    "unknown-key": ("UnrecognizedClientException", "InvalidAccessKeyId", "InvalidClientTokenId"),
    "mismatch": ("InvalidSignatureException", "SignatureDoesNotMatch", "SignatureDoesNotMatch"),
    "skewed": ("InvalidSignatureException", "RequestTimeTooSkewed", "SignatureDoesNotMatch"),
    "expired": ("InvalidSignatureException", "AccessDenied", "SignatureDoesNotMatch"),
}


def signature_refused_response(environ: Mapping[str, object], refusal: SignatureRefusal) -> Answer:
    """A refused signature's answer in the service's protocol: 400 for the JSON protocols, 403 for
    Lambda, S3 and the query protocols (and the query-compatible JSON services, SQS's and CloudWatch's)."""
    json_code, s3_code, query_code = _SIGNATURE_CODES[refusal.reason]
    if refusal.service == "s3":
        return _s3_error(s3_code, refusal.message, refusal.details)
    if refusal.service == "lambda":
        return _lambda_error(json_code, refusal.message)
    if environ.get("HTTP_X_AMZ_TARGET"):
        if refusal.service in _QUERY_COMPATIBLE:
            return _json_error(environ, json_code, refusal.message, 403, query_code)
        return _json_error(environ, json_code, refusal.message, 400, None)
    return _query_error(query_code, refusal.message)


def _s3_error(code: str, message: str, details: Iterable[tuple[str, str]] = ()) -> Answer:
    return error_answer("rest-xml", code, message, 403, details=details)


def _lambda_error(code: str, message: str) -> Answer:
    return error_answer("rest-json", code, message, 403)


def _json_error(
    environ: Mapping[str, object], code: str, message: str, status: int, query_code: str | None
) -> Answer:
    content_type = str(environ.get("CONTENT_TYPE") or "application/x-amz-json-1.0")
    # DynamoDB spells an access denial's key "Message", a refused signature's "message".
    message_key = "Message" if code == "AccessDeniedException" else "message"
    return error_answer(
        "json",
        code,
        message,
        status,
        content_type=content_type,
        query_code=query_code,
        message_key=message_key,
    )


def _query_error(code: str, message: str) -> Answer:
    return error_answer("query", code, message, 403)
