"""Access-denied and refused-signature answers in each service's protocol, and the error boto3 raises for
an in-process call."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from orderbatch.localcloud.iam.digests import digest
from orderbatch.localcloud.iam.identities import Denial, SignatureRefusal


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


_QUERY_COMPATIBLE = {"monitoring": "400 Bad Request", "sqs": "403 Forbidden"}


def denied_response(
    service: str, environ: Mapping[str, Any], denial: Denial
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The access-denied answer in the shape the service's protocol gives it (status, headers, body)."""
    if service == "s3":
        return _s3_error("AccessDenied", denial.message(quote_resource=True))
    if service == "lambda":
        return _lambda_error("AccessDeniedException", denial.message())
    if environ.get("HTTP_X_AMZ_TARGET"):
        # Query-compatible JSON services answer with their query protocol's code (AccessDenied).
        status = _QUERY_COMPATIBLE.get(service, "400 Bad Request")
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


def signature_refused_response(
    environ: Mapping[str, Any], refusal: SignatureRefusal
) -> tuple[str, list[tuple[str, str]], bytes]:
    """A refused signature's answer in the service's protocol: 400 for the JSON protocols, 403 for
    Lambda, S3 and the query protocols (and the query-compatible JSON services, SQS's and CloudWatch's)."""
    json_code, s3_code, query_code = _SIGNATURE_CODES[refusal.reason]
    if refusal.service == "s3":
        return _s3_error(s3_code, refusal.message, refusal.details)
    if refusal.service == "lambda":
        return _lambda_error(json_code, refusal.message)
    if environ.get("HTTP_X_AMZ_TARGET"):
        if refusal.service in _QUERY_COMPATIBLE:
            return _json_error(environ, json_code, refusal.message, "403 Forbidden", query_code)
        return _json_error(environ, json_code, refusal.message, "400 Bad Request", None)
    return _query_error(query_code, refusal.message)


Answer = tuple[str, list[tuple[str, str]], bytes]


def _s3_error(code: str, message: str, details: Iterable[tuple[str, str]] = ()) -> Answer:
    request_id = str(uuid.uuid4())
    extra = "".join(f"<{name}>{_xml_escape(value)}</{name}>" for name, value in details)
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
        f"<Message>{_xml_escape(message)}</Message>{extra}"
        f"<RequestId>{request_id}</RequestId><HostId>{digest(request_id, 40)}</HostId></Error>"
    ).encode()
    return "403 Forbidden", [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)], body


def _lambda_error(code: str, message: str) -> Answer:
    request_id = str(uuid.uuid4())
    body = json.dumps({"Message": message, "Type": "User"}).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("x-amzn-ErrorType", code),
        ("x-amzn-RequestId", request_id),
    ]
    return "403 Forbidden", headers, body


def _json_error(
    environ: Mapping[str, Any], code: str, message: str, status: str, query_code: str | None
) -> Answer:
    request_id = str(uuid.uuid4())
    body = json.dumps({"__type": f"com.amazon.coral.service#{code}", "Message": message}).encode()
    headers = [
        ("Content-Type", environ.get("CONTENT_TYPE") or "application/x-amz-json-1.0"),
        ("x-amzn-RequestId", request_id),
    ]
    if query_code is not None:
        headers.append(("x-amzn-query-error", f"{query_code};Sender"))
    return status, headers, body


def _query_error(code: str, message: str) -> Answer:
    request_id = str(uuid.uuid4())
    body = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
        f"<Message>{_xml_escape(message)}</Message></Error>"
        f"<RequestId>{request_id}</RequestId></ErrorResponse>"
    ).encode()
    return "403 Forbidden", [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], body


def _xml_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text, {'"': "&quot;"})
