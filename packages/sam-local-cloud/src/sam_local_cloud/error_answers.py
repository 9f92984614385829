"""An AWS error answer in each protocol's shape: status line, headers and body, as the SDKs parse them.

The protocol guard, IAM's denials and refused signatures all answer errors; they share these shapes so that
an error reads the same whoever in the local cloud gives it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from http import HTTPStatus
from xml.sax.saxutils import escape

from sam_local_cloud.stack.return_values import unique_id

Answer = tuple[str, list[tuple[str, str]], bytes]

# Characters XML 1.0 does not allow (a request's value echoed into an answer must not make it unreadable).
NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def error_answer(
    protocol: str,
    code: str,
    message: str,
    status: int,
    *,
    content_type: str = "application/x-amz-json-1.0",
    query_code: str | None = None,
    details: Iterable[tuple[str, str]] = (),
    message_key: str = "message",
) -> Answer:
    """The error as ``protocol`` ("json", "rest-json", "rest-xml" or "query") carries it.

    ``query_code`` is the query protocol's code a query-compatible JSON service adds in its
    ``x-amzn-query-error`` header; ``details`` are S3's extra elements (``StringToSign``...).
    JSON services spell the message's key as each error does: ``message`` for most, ``Message`` for an
    access denial.
    """
    request_id = str(uuid.uuid4())
    status_line = f"{status} {HTTPStatus(status).phrase}"
    message = NOT_XML.sub("?", message)
    if protocol == "json":
        body = json.dumps({"__type": f"com.amazon.coral.service#{code}", message_key: message}).encode()
        headers = [("Content-Type", content_type), ("x-amzn-RequestId", request_id)]
        if query_code is not None:
            fault = "Receiver" if status >= 500 else "Sender"
            headers.append(("x-amzn-query-error", f"{query_code};{fault}"))
    elif protocol == "rest-json":
        body = json.dumps({"Type": "User", "Message": message}).encode()
        headers = [
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", code),
            ("x-amzn-RequestId", request_id),
        ]
    elif protocol == "rest-xml":
        extra = "".join(f"<{name}>{_xml_text(value)}</{name}>" for name, value in details)
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{_xml_text(message)}</Message>{extra}"
            f"<RequestId>{request_id}</RequestId><HostId>{unique_id(request_id, 40)}</HostId></Error>"
        ).encode()
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
    else:
        fault = "Receiver" if status >= 500 else "Sender"
        body = (
            f"<ErrorResponse><Error><Type>{fault}</Type><Code>{code}</Code>"
            f"<Message>{_xml_text(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
        headers = [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)]
    return status_line, [*headers, ("Content-Length", str(len(body)))], body


def _xml_text(text: str) -> str:
    return escape(NOT_XML.sub("?", text), {'"': "&quot;"})
