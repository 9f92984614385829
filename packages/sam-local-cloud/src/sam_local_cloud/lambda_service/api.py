"""The Lambda REST API (the operations boto3 and moto's Step Functions call) as a WSGI application.

Paths follow botocore's ``lambda`` service model. Besides them:
``GET /_sam_local_cloud/lambda/stats[?timeseries=false]`` and
``GET|PUT|DELETE /_sam_local_cloud/lambda/faults``.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

from sam_local_cloud.lambda_service.errors import (
    InvalidParameterValueError,
    LambdaApiError,
    ResourceNotFoundError,
    ServiceError,
    UnsupportedOperationError,
)

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse

    from sam_local_cloud.json_types import JsonObject
    from sam_local_cloud.lambda_service.accounting import LambdaStats
    from sam_local_cloud.lambda_service.faults import FaultPlan


class AnsweredInvoke(Protocol):
    """What the Lambda service returns for one invocation (its ``InvokeResult``), as far as a caller in
    this process reads it (durable executions' replays)."""

    @property
    def request_id(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def function_error(self) -> str | None: ...


class InvokeAnswer(AnsweredInvoke, Protocol):
    """What Invoke returns, as the HTTP API sends it."""

    @property
    def status_code(self) -> int: ...
    @property
    def executed_version(self) -> str | None: ...
    @property
    def log_result(self) -> str | None: ...
    @property
    def durable_execution_arn(self) -> str | None: ...


class DurableApi(Protocol):
    """The durable execution operations (``DurableExecutions``)."""

    def answer(
        self, method: str, raw_path: str, query_string: str, body: bytes
    ) -> tuple[int, dict[str, str], bytes]: ...


class LambdaOperations(Protocol):
    """The operations the API serves; LambdaService provides them (the API does not import the service,
    which builds the API around itself)."""

    @property
    def fault_plan(self) -> FaultPlan: ...
    def set_fault_plan(self, plan: Any) -> FaultPlan: ...
    def invoke(
        self,
        name: str,
        payload: bytes = ...,
        invocation_type: str = ...,
        *,
        qualifier: str | None = ...,
        log_type: str | None = ...,
        durable_execution_name: str | None = ...,
    ) -> InvokeAnswer: ...
    @property
    def durable(self) -> DurableApi: ...
    def list_functions(self) -> JsonObject: ...
    def get_function(self, name: str, qualifier: str | None = ...) -> JsonObject: ...
    def account_settings(self) -> JsonObject: ...
    def put_function_concurrency(self, name: str, reserved: object) -> dict[str, int]: ...
    def get_function_concurrency(self, name: str) -> dict[str, int]: ...
    def delete_function_concurrency(self, name: str) -> None: ...
    def stats(self, *, include_timeseries: bool = ...) -> LambdaStats: ...


logger = logging.getLogger(__name__)

# The durable execution operations' routes (botocore's ``lambda`` model, API version 2025-12-01).
DURABLE_API_PREFIX = "/2025-12-01/"
ROUTED_PREFIXES = (
    "/2015-03-31/functions",
    "/2017-10-31/functions",
    "/2019-09-30/functions",
    "/2016-08-19/account-settings",
    DURABLE_API_PREFIX,
    "/_sam_local_cloud/lambda/",
)
_NAME = r"(?P<name>[^/]+)"

Response = tuple[int, dict[str, str], bytes]
Handler = Callable[["Request"], Response]


class Request:
    def __init__(self, environ: dict[str, Any], match: re.Match[str]) -> None:
        self.environ = environ
        self.match = match
        query = parse_qs(environ.get("QUERY_STRING", ""))
        self.query = {key: values[-1] for key, values in query.items()}

    @property
    def name(self) -> str:
        return unquote(self.match["name"])

    def header(self, name: str) -> str | None:
        value: str | None = self.environ.get("HTTP_" + name.upper().replace("-", "_"))
        return value

    def body(self) -> bytes:
        length = int(self.environ.get("CONTENT_LENGTH") or 0)
        return self.environ["wsgi.input"].read(length) if length else b""

    def json_body(self) -> Any:
        try:
            return json.loads(self.body() or b"{}")
        except (ValueError, RecursionError) as error:
            raise InvalidParameterValueError(f"Request body is not JSON: {error}") from None


def _request_id() -> str:
    return str(uuid.uuid4())


def _json(status: int, document: object, headers: dict[str, str] | None = None) -> Response:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(document).encode()


class LambdaApi:
    def __init__(self, service: LambdaOperations) -> None:
        self.service = service
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("POST", re.compile(rf"^/2015-03-31/functions/{_NAME}/invocations/?$"), self._invoke),
            ("GET", re.compile(r"^/2015-03-31/functions/?$"), self._list_functions),
            ("GET", re.compile(rf"^/2015-03-31/functions/{_NAME}/?$"), self._get_function),
            ("GET", re.compile(rf"^/2015-03-31/functions/{_NAME}/configuration/?$"), self._get_configuration),
            ("PUT", re.compile(rf"^/2017-10-31/functions/{_NAME}/concurrency/?$"), self._put_concurrency),
            (
                "DELETE",
                re.compile(rf"^/2017-10-31/functions/{_NAME}/concurrency/?$"),
                self._delete_concurrency,
            ),
            ("GET", re.compile(rf"^/2019-09-30/functions/{_NAME}/concurrency/?$"), self._get_concurrency),
            ("GET", re.compile(r"^/2016-08-19/account-settings/?$"), self._account_settings),
            ("GET", re.compile(r"^/_sam_local_cloud/lambda/stats/?$"), self._stats),
            ("GET", re.compile(r"^/_sam_local_cloud/lambda/faults/?$"), self._get_faults),
            ("PUT", re.compile(r"^/_sam_local_cloud/lambda/faults/?$"), self._put_faults),
            ("DELETE", re.compile(r"^/_sam_local_cloud/lambda/faults/?$"), self._delete_faults),
        ]

    @staticmethod
    def handles(path: str) -> bool:
        """Whether the front server should hand this path to the Lambda service."""
        return path.startswith(ROUTED_PREFIXES)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        status, headers, body = self._dispatch(environ)
        headers.setdefault("x-amzn-RequestId", _request_id())
        headers["Content-Length"] = str(len(body))
        start_response(f"{status} {HTTPStatus(status).phrase}", list(headers.items()))
        return [body]

    def _dispatch(self, environ: dict[str, Any]) -> Response:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if path.startswith(DURABLE_API_PREFIX):
                return self._durable(environ, method)
            for route_method, pattern, handler in self._routes:
                match = pattern.match(path)
                if match and route_method == method:
                    return handler(Request(environ, match))
            if not self.handles(path):
                raise ResourceNotFoundError(f"No such path: {path}")
            raise UnsupportedOperationError(f"The local Lambda service does not implement {method} {path}.")
        except LambdaApiError as error:
            return _json(error.status, error.body(), error.headers())
        except Exception as error:  # the API must answer in AWS's shape whatever went wrong
            logger.exception("Lambda API request %s %s failed", method, path)
            failure = ServiceError(f"{type(error).__name__}: {error}")
            return _json(failure.status, failure.body(), failure.headers())

    def _invoke(self, request: Request) -> Response:
        return self.invoke_response(
            request.name,
            request.body(),
            request.header("X-Amz-Invocation-Type") or "RequestResponse",
            qualifier=request.query.get("Qualifier"),
            log_type=request.header("X-Amz-Log-Type"),
            durable_execution_name=request.header("X-Amz-Durable-Execution-Name"),
        )

    def _durable(self, environ: dict[str, Any], method: str) -> Response:
        # The execution ARN is one path label that botocore percent-encodes, slashes included; the
        # decoded PATH_INFO would split it, so routes are matched on the raw path as sent.
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI") or quote(environ.get("PATH_INFO", ""))
        raw_path = urlsplit(raw_uri).path
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        return self.service.durable.answer(method, raw_path, environ.get("QUERY_STRING", ""), body)

    def invoke_response(
        self,
        name: str,
        payload: bytes,
        invocation_type: str,
        *,
        qualifier: str | None = None,
        log_type: str | None = None,
        durable_execution_name: str | None = None,
    ) -> Response:
        """Invoke's answer as the HTTP API sends it; also what the in-process client parses."""
        try:
            result = self.service.invoke(
                name,
                payload,
                invocation_type,
                qualifier=qualifier,
                log_type=log_type,
                durable_execution_name=durable_execution_name,
            )
        except LambdaApiError as error:
            return _json(error.status, error.body(), {**error.headers(), "x-amzn-RequestId": _request_id()})
        headers = {"Content-Type": "application/json", "x-amzn-RequestId": result.request_id}
        if result.function_error:
            headers["X-Amz-Function-Error"] = result.function_error
        if result.executed_version:
            headers["X-Amz-Executed-Version"] = result.executed_version
        if result.log_result is not None:
            headers["X-Amz-Log-Result"] = result.log_result
        if result.durable_execution_arn is not None:
            headers["X-Amz-Durable-Execution-Arn"] = result.durable_execution_arn
        return result.status_code, headers, result.payload

    def _list_functions(self, request: Request) -> Response:
        return _json(200, self.service.list_functions())

    def _get_function(self, request: Request) -> Response:
        return _json(200, self.service.get_function(request.name, request.query.get("Qualifier")))

    def _get_configuration(self, request: Request) -> Response:
        configuration = self.service.get_function(request.name, request.query.get("Qualifier"))[
            "Configuration"
        ]
        return _json(200, configuration)

    def _put_concurrency(self, request: Request) -> Response:
        reserved = request.json_body().get("ReservedConcurrentExecutions")
        return _json(200, self.service.put_function_concurrency(request.name, reserved))

    def _delete_concurrency(self, request: Request) -> Response:
        self.service.delete_function_concurrency(request.name)
        return 204, {}, b""

    def _get_concurrency(self, request: Request) -> Response:
        return _json(200, self.service.get_function_concurrency(request.name))

    def _account_settings(self, request: Request) -> Response:
        return _json(200, self.service.account_settings())

    def _stats(self, request: Request) -> Response:
        include = request.query.get("timeseries", "true").lower() not in {"false", "0", "no"}
        return _json(200, self.service.stats(include_timeseries=include))

    def _get_faults(self, request: Request) -> Response:
        return _json(200, self.service.fault_plan.to_dict())

    def _put_faults(self, request: Request) -> Response:
        try:
            plan = self.service.set_fault_plan(request.json_body())
        except (TypeError, ValueError) as error:
            raise InvalidParameterValueError(f"Invalid fault plan: {error}") from None
        return _json(200, plan.to_dict())

    def _delete_faults(self, request: Request) -> Response:
        self.service.set_fault_plan(None)
        return 204, {}, b""
