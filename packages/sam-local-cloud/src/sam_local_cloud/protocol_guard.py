"""A WSGI guard in front of moto's services: AWS's front-end checks first, AWS-shaped answers always.

Before moto sees a request, ``request_checks`` refuses what AWS's front end refuses, in its words. Whatever
still escapes a service is answered in the service's own protocol instead of moto's HTML 500 page, which
the SDKs retried as a server fault: an operation moto does not implement, or a case of one it cannot handle,
is said plainly (``UnsupportedOperationException``, HTTP 400), and an XML body moto could not parse is S3's
``MalformedXML``. Answers are made readable where moto's are not: characters XML cannot carry, echoed from
a request into an XML answer, are replaced; error codes AWS does not have are replaced by AWS's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING
from xml.etree import ElementTree
from xml.parsers.expat import ExpatError

from botocore.model import ServiceModel

from sam_local_cloud.error_answers import NOT_XML, Answer, error_answer
from sam_local_cloud.error_statuses import documented_status
from sam_local_cloud.moto_seam.s3_subresources import moto_has_no_code_for
from sam_local_cloud.request_checks import (
    MALFORMED_XML,
    NOT_IMPLEMENTED_CODE,
    Refusal,
    check_request,
    operation_name,
    protocol_of,
    rest_operation,
    rest_operations,
    service_of,
)

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

_LOG = logging.getLogger("sam_local_cloud.protocol_guard")


class ProtocolGuard:
    """WSGI middleware: AWS's front-end checks, then the service; a crash answered in the service's shape."""

    def __init__(
        self, app: WSGIApplication, *, checked_before: Callable[[WSGIEnvironment], bool] | None = None
    ) -> None:
        self._app = app
        # A request this says was checked already (forwarded by the local cloud's endpoint) is not again.
        self._checked_before = checked_before

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        model = service_of(environ)
        if model is None:
            return _unrouted(self._app, environ, start_response)
        body = _read_body(environ)
        checked = self._checked_before is not None and self._checked_before(environ)
        refusal = None if checked else check_request(model, environ, body)
        if refusal is not None:
            return answer(model, environ, refusal, start_response)
        protocol = protocol_of(model)
        unknown_to_moto = _s3_operation_moto_lacks(model, environ)
        if unknown_to_moto is not None:
            message = f"The local cloud does not implement {model.service_id} {unknown_to_moto}."
            return answer(model, environ, Refusal(NOT_IMPLEMENTED_CODE, message), start_response)
        if protocol == "json" and not str(environ.get("CONTENT_TYPE", "")).startswith(_JSON_CONTENT_TYPES):
            # moto picks the protocol to read the body with by the Content-Type; AWS goes by the service.
            environ["CONTENT_TYPE"] = f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.0')}"
        try:
            status, headers, exc_info, answered = _captured(self._app, environ)
        except Exception as error:  # moto's exception, never its HTML page: an answer in the service's shape
            refusal = _failure_answer(model, environ, body, error)
            return answer(model, environ, refusal, start_response)
        if status.startswith("5") and _is_html(headers):
            # moto's own page for a request it could not route (a bucket name no host rule reads).
            unrouted = RuntimeError(f"moto answered {status} with an HTML page")
            return answer(model, environ, _failure_answer(model, environ, body, unrouted), start_response)
        if protocol in ("query", "rest-xml"):
            status, headers, answered = _xml_safe(model, status, headers, answered)
        elif protocol == "json":
            status, headers, answered = _json_codes_as_modelled(model, status, headers, answered)
        start_response(status, headers, exc_info)
        return [answered]


def _unrouted(
    app: WSGIApplication, environ: WSGIEnvironment, start_response: StartResponse
) -> Iterable[bytes]:
    """A request no service's signature or target names: moto guesses the service from the host and path,
    and when its guess fails, the client gets a plain 400 in the XML most such protocols speak."""
    try:
        return list(app(environ, start_response))
    except Exception as error:
        _LOG.warning("a request for no known service failed in moto", exc_info=True)
        message = f"The local cloud cannot tell which service this request is for ({type(error).__name__})."
        status, headers, body = error_answer("rest-xml", NOT_IMPLEMENTED_CODE, message, 400)
        start_response(status, headers)
        return [body]


def _failure_answer(model: ServiceModel, environ: WSGIEnvironment, body: bytes, error: Exception) -> Refusal:
    """What a request that moto raised on gets.

    An operation moto lacks, or a case of one it does not handle, is a gap of the local cloud, not a fault of
    AWS's: the client gets it said plainly as ``UnsupportedOperationException`` (HTTP 400, which no SDK
    retries as it would a 500), and the log a warning with the traceback. An XML body moto could not parse is
    S3's ``MalformedXML``.
    """
    operation = operation_name(model, environ, body) or _rest_operation_name(model, environ) or "request"
    if isinstance(error, ExpatError | ElementTree.ParseError) and protocol_of(model) == "rest-xml":
        return Refusal("MalformedXML", MALFORMED_XML)
    if isinstance(error, NotImplementedError):
        return Refusal(
            NOT_IMPLEMENTED_CODE, f"The local cloud does not implement {model.service_id} {operation}."
        )
    _LOG.warning(
        "%s %s: the local cloud cannot answer this request", model.service_id, operation, exc_info=error
    )
    reason = f"{type(error).__name__}: {error}"[:300]
    message = (
        f"The local cloud cannot answer this {model.service_id} {operation} request (moto raised {reason})."
    )
    return Refusal(NOT_IMPLEMENTED_CODE, message)


def _s3_operation_moto_lacks(model: ServiceModel, environ: WSGIEnvironment) -> str | None:
    """The S3 operation this request names when moto has no code for it (it would run the plain object or
    bucket operation instead: an object deleted for a DeleteObjectAnnotation); None otherwise."""
    if model.service_name != "s3":
        return None
    operations = rest_operations(model, str(environ.get("REQUEST_METHOD", "GET")), environ)
    if not operations:
        return None
    query = str(operations[0].http.get("requestUri", "")).partition("?")[2]
    markers = frozenset(part.split("=", 1)[0] for part in query.split("&") if part)
    return " or ".join(operation.name for operation in operations) if moto_has_no_code_for(markers) else None


def _rest_operation_name(model: ServiceModel, environ: WSGIEnvironment) -> str | None:
    operation = rest_operation(model, str(environ.get("REQUEST_METHOD", "GET")), environ)
    return operation.name if operation is not None else None


_JSON_CONTENT_TYPES = ("application/x-amz-json-", "application/json")


def _captured(
    app: WSGIApplication, environ: WSGIEnvironment
) -> tuple[str, list[tuple[str, str]], OptExcInfo | None, bytes]:
    """The app's whole answer, before anything of it is sent: status, headers, exc_info, body."""
    started: list[tuple[str, list[tuple[str, str]], OptExcInfo | None]] = []

    def capture(
        status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
    ) -> Callable[[bytes], object]:
        started[:] = [(status, headers, exc_info)]
        return lambda _data: None

    body = b"".join(app(environ, capture))
    ((status, headers, exc_info),) = started
    return status, headers, exc_info, body


def _with_length(headers: list[tuple[str, str]], body: bytes) -> list[tuple[str, str]]:
    return [(n, str(len(body)) if n.lower() == "content-length" else v) for n, v in headers]


# Codes the pinned moto answers that AWS's models do not have, and AWS's code for the same case.
_AWS_CODE_FOR_MOTOS = {
    ("dynamodb", "SourceTableNotFoundException"): "TableNotFoundException",
    ("s3", "NoSuchInventoryConfig"): "NoSuchConfiguration",
    ("s3", "MissingUploadObjectWithObjectLockHeaders"): "InvalidRequest",
    ("s3", "InvalidBucket"): "InvalidBucketName",
    ("sqs", "InvalidToken"): "InvalidParameterValue",
}


def _json_codes_as_modelled(
    model: ServiceModel, status: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The service's answer, with an error code AWS does not have replaced by AWS's: moto spells some without
    the model's ``Exception`` suffix (DynamoDB's TTL calls answer ``ResourceNotFound`` where AWS answers
    ``ResourceNotFoundException``) and invents a few (``_AWS_CODE_FOR_MOTOS``)."""
    if not status.startswith("4") or b'"__type"' not in body:
        return status, headers, body
    try:
        document = json.loads(body)
    except ValueError:
        return status, headers, body
    if not isinstance(document, dict) or not isinstance(document.get("__type"), str):
        return status, headers, body
    prefix, _, code = document["__type"].rpartition("#")
    aws_code = _AWS_CODE_FOR_MOTOS.get((model.service_name, code))
    if aws_code is None and code not in model.shape_names and f"{code}Exception" in model.shape_names:
        aws_code = f"{code}Exception"
    if aws_code is None:
        return _documented(model, status, code), headers, body
    document["__type"] = f"{prefix}#{aws_code}" if prefix else aws_code
    body = json.dumps(document).encode()
    return _documented(model, status, aws_code), _with_length(headers, body), body


def _documented(model: ServiceModel, status: str, code: str) -> str:
    """The status line AWS answers ``code`` with, where its model or docs say and moto's differs."""
    aws_status = documented_status(model.service_name, code)
    if aws_status is None or status.startswith(str(aws_status)):
        return status
    return f"{aws_status} {HTTPStatus(aws_status).phrase}"


def _is_html(headers: list[tuple[str, str]]) -> bool:
    return any(name.lower() == "content-type" and "html" in value for name, value in headers)


_XML_CODE = re.compile(r"<Code>([^<]*)</Code>")


def _xml_safe(
    model: ServiceModel, status: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The service's answer with characters XML cannot carry replaced, when the answer is XML, and an error
    code AWS does not have replaced by AWS's.

    moto echoes a request's values into its XML answers (``NoSuchEntity: Policy <arn> ...``) unescaped; a
    control character there made the whole answer unreadable to the SDK. AWS never answers such XML.
    """
    if not any(name.lower() == "content-type" and "xml" in value for name, value in headers):
        return status, headers, body
    text = body.decode("utf-8", errors="replace")
    changed = NOT_XML.sub("?", text) if NOT_XML.search(text) else text
    if status.startswith("4") and (found := _XML_CODE.search(changed)):
        aws_code = _AWS_CODE_FOR_MOTOS.get((model.service_name, found.group(1)))
        if aws_code is not None:
            changed = changed[: found.start(1)] + aws_code + changed[found.end(1) :]
        status = _documented(model, status, aws_code or found.group(1))
    if changed == text:
        return status, headers, body
    body = changed.encode()
    return status, _with_length(headers, body), body


def _read_body(environ: WSGIEnvironment) -> bytes:
    """The body, read once and put back for whoever reads it next."""
    import io

    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


# ------------------------------------------------------------------------------------------ answers
def answer(
    model: ServiceModel, environ: WSGIEnvironment, refusal: Refusal, start_response: StartResponse
) -> list[bytes]:
    status, headers, body = error_response(model, environ, refusal)
    start_response(status, headers)
    return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]


def error_response(model: ServiceModel, environ: WSGIEnvironment, refusal: Refusal) -> Answer:
    """The error in the shape the service's protocol gives it: status line, headers, body."""
    protocol = protocol_of(model)
    query_compatible = protocol == "json" and model.metadata.get("awsQueryCompatible") is not None
    return error_answer(
        protocol,
        refusal.code,
        refusal.message,
        refusal.status,
        content_type=f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.0')}",
        query_code=refusal.code if query_compatible else None,
    )
