"""Access-denied answers in each service's protocol, and the error boto3 raises for an in-process call."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from orderbatch.localcloud.iam.digests import digest
from orderbatch.localcloud.iam.identities import Denial


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
    request_id = str(uuid.uuid4())
    if service == "s3":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            f"<Message>{_xml_escape(denial.message(quote_resource=True))}</Message>"
            f"<RequestId>{request_id}</RequestId><HostId>{digest(request_id, 40)}</HostId></Error>"
        ).encode()
        return "403 Forbidden", [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)], body
    if service == "lambda":
        body = json.dumps({"Message": denial.message(), "Type": "User"}).encode()
        headers = [
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", "AccessDeniedException"),
            ("x-amzn-RequestId", request_id),
        ]
        return "403 Forbidden", headers, body
    if environ.get("HTTP_X_AMZ_TARGET"):
        body = json.dumps(
            {"__type": "com.amazon.coral.service#AccessDeniedException", "Message": denial.message()}
        ).encode()
        headers = [
            ("Content-Type", environ.get("CONTENT_TYPE") or "application/x-amz-json-1.0"),
            ("x-amzn-RequestId", request_id),
        ]
        if service in _QUERY_COMPATIBLE:
            # Their JSON protocols are compatible with their query protocols, whose code is AccessDenied.
            headers.append(("x-amzn-query-error", "AccessDenied;Sender"))
        return _QUERY_COMPATIBLE.get(service, "400 Bad Request"), headers, body
    code = "AuthorizationError" if service == "sns" else "AccessDenied"
    body = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
        f"<Message>{_xml_escape(denial.message())}</Message></Error>"
        f"<RequestId>{request_id}</RequestId></ErrorResponse>"
    ).encode()
    return "403 Forbidden", [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], body


def _xml_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text, {'"': "&quot;"})
