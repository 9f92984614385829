"""The template's API routes, answered as API Gateway (HTTP API, payload format 2.0) would.

Requests arrive at `/execute-api/{api_id}/{path}` on the local cloud's endpoint (a REST API's at
`/execute-api/{api_id}/{stage}/{path}`). Routes with IAM authorization require a SigV4 `Authorization`
header scoped to `execute-api` (any credentials are accepted, as everywhere in the local cloud); the
function is invoked through the local Lambda service, so it counts against the concurrency quota like
any other invocation. Routes whose OpenAPI integration calls Step Functions are answered by
``api_integrations``.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from werkzeug.wrappers import Request, Response

from sam_local_cloud import api_integrations
from sam_local_cloud.api_integrations import ServiceRoute, StatesCaller
from sam_local_cloud.served_paths import API_PATH_PREFIX
from sam_local_cloud.stack import HttpRoute

_SIGV4_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")


@dataclass(frozen=True)
class InvokeOutcome:
    """What the HTTP API needs from an invocation: its payload, or why there is none."""

    payload: bytes
    function_error: str | None = None
    throttled: bool = False


Invoker = Callable[[str, bytes], InvokeOutcome]


@dataclass(frozen=True)
class _CompiledRoute:
    route: HttpRoute
    pattern: re.Pattern[str]

    @property
    def route_key(self) -> str:
        return f"{self.route.method} {self.route.path}"


def _compile(path: str) -> re.Pattern[str]:
    regex = ""
    for part in re.split(r"(\{[^}]+\})", path):
        if part.startswith("{") and part.endswith("+}"):
            regex += f"(?P<{part[1:-2]}>.+)"
        elif part.startswith("{"):
            regex += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}$")


@dataclass(frozen=True)
class _RouteMatch:
    """A request matched to a function's route."""

    compiled: _CompiledRoute
    path: str  # the request's path below the API's
    route_path: str  # that path as the route sees it: a REST API's without its stage
    path_parameters: dict[str, str]


class HttpApiGateway:
    def __init__(
        self,
        routes: Iterable[HttpRoute],
        invoke: Invoker,
        *,
        region: str,
        account_id: str,
        service_routes: Iterable[ServiceRoute] = (),
        call_states: StatesCaller | None = None,
    ) -> None:
        self._routes: dict[str, list[_CompiledRoute]] = {}
        for route in routes:
            self._routes.setdefault(route.api_logical_id.lower(), []).append(
                _CompiledRoute(route, _compile(route.path))
            )
        self._service_routes: dict[str, list[tuple[ServiceRoute, re.Pattern[str]]]] = {}
        for service_route in service_routes:
            staged = (
                f"/{service_route.stage}{service_route.path}" if service_route.stage else service_route.path
            )
            self._service_routes.setdefault(service_route.api_logical_id.lower(), []).append(
                (service_route, _compile(staged))
            )
        self._invoke = invoke
        self._call_states = call_states
        self._region = region
        self._account_id = account_id

    @property
    def api_ids(self) -> list[str]:
        return sorted(set(self._routes) | set(self._service_routes))

    def url(self, endpoint: str, api_id: str | None = None) -> str:
        # By default the API of the functions' routes (the app's own), else any.
        chosen = api_id or (sorted(self._routes) or self.api_ids)[0]
        return f"{endpoint.rstrip('/')}{API_PATH_PREFIX}{chosen}"

    def service_routes(self, endpoint: str) -> list[tuple[str, str, str]]:
        """(method, URL, Step Functions action) of every route that calls Step Functions itself."""
        listed = []
        for api_id, routes in sorted(self._service_routes.items()):
            for route, _ in routes:
                stage = f"/{route.stage}" if route.stage else ""
                listed.append(
                    (route.method, f"{self.url(endpoint, api_id)}{stage}{route.path}", route.action)
                )
        return listed

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(API_PATH_PREFIX)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        response = self._respond(request)
        return response(environ, start_response)

    def _respond(self, request: Request) -> Response:
        api_id, _, path = request.path[len(API_PATH_PREFIX) :].partition("/")
        path = "/" + path
        service_answer = self._answer_service_route(request, api_id, path)
        if service_answer is not None:
            return service_answer
        routes = self._routes.get(api_id)
        if routes is None:
            return _json(404, {"message": "Not Found"})
        match = next(
            (
                _RouteMatch(compiled, path, route_path, found.groupdict())
                for compiled in routes
                if compiled.route.method in (request.method, "ANY")
                and (route_path := _within_stage(path, compiled.route.stage)) is not None
                and (found := compiled.pattern.match(route_path)) is not None
            ),
            None,
        )
        if match is None:
            # A REST API answers an unknown route with its missing-authentication message.
            rest = any(compiled.route.payload_version == "1.0" for compiled in routes)
            return _json(403 if rest else 404, {"message": _MISSING_TOKEN if rest else "Not Found"})
        route = match.compiled.route
        if route.iam_auth:
            refusal = _check_sigv4(request.headers.get("Authorization"))
            if refusal is not None:
                return _json(403, {"message": refusal})
        if route.payload_version == "1.0":
            event = self._rest_event(request, api_id, match)
        else:
            event = self._event(request, api_id, match)
        outcome = self._invoke(route.function_name, json.dumps(event).encode())
        if route.payload_version == "1.0":
            if outcome.throttled or outcome.function_error:
                return _json(502, {"message": "Internal server error"})
            return _rest_response_from_payload(outcome.payload)
        if outcome.throttled or outcome.function_error:
            # API Gateway hides the Lambda error from the caller, as it does in AWS.
            return _json(500, {"message": "Internal Server Error"})
        return _response_from_payload(outcome.payload)

    def _answer_service_route(self, request: Request, api_id: str, path: str) -> Response | None:
        """The answer of the route whose integration calls Step Functions, if one matches."""
        for route, pattern in self._service_routes.get(api_id, []):
            found = pattern.match(path)
            if found is None or route.method not in (request.method, "ANY"):
                continue
            if route.iam_auth and (refusal := _check_sigv4(request.headers.get("Authorization"))):
                return _json(403, {"message": refusal})
            if self._call_states is None:
                return _json(500, {"message": "Internal server error"})
            return api_integrations.answer(
                route,
                request,
                found.groupdict(),
                self._call_states,
                api_id=api_id,
                account_id=self._account_id,
            )
        return None

    def _rest_event(self, request: Request, api_id: str, match: _RouteMatch) -> dict[str, Any]:
        """The Lambda proxy event of a REST API (payload format 1.0)."""
        text_body, is_base64 = _event_body(request)
        now = time.time()
        route, path = match.compiled.route, match.route_path
        stage = route.stage or ""
        multi_headers: dict[str, list[str]] = {}
        for key, value in request.headers.items():
            multi_headers.setdefault(key, []).append(value)
        return {
            "resource": route.path,
            "path": path,
            "httpMethod": request.method,
            "headers": dict(request.headers.items()) or None,
            "multiValueHeaders": multi_headers or None,
            "queryStringParameters": dict(request.args) or None,
            "multiValueQueryStringParameters": {key: request.args.getlist(key) for key in request.args}
            or None,
            "pathParameters": match.path_parameters or None,
            "stageVariables": None,
            "requestContext": {
                "resourceId": uuid.uuid4().hex[:6],
                "resourcePath": route.path,
                "httpMethod": request.method,
                "extendedRequestId": str(uuid.uuid4()),
                "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                "path": f"/{stage}{path}",
                "accountId": self._account_id,
                "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                "stage": stage,
                "domainPrefix": api_id,
                "requestTimeEpoch": int(now * 1000),
                "requestId": str(uuid.uuid4()),
                "identity": {
                    "sourceIp": request.remote_addr or "127.0.0.1",
                    "userAgent": request.headers.get("User-Agent", ""),
                },
                "domainName": request.host,
                "apiId": api_id,
            },
            "body": text_body,
            "isBase64Encoded": is_base64,
        }

    def _event(self, request: Request, api_id: str, match: _RouteMatch) -> dict[str, Any]:
        """The Lambda proxy event of an HTTP API (payload format 2.0)."""
        text_body, is_base64 = _event_body(request)
        now = time.time()
        path = match.path
        return {
            "version": "2.0",
            "routeKey": match.compiled.route_key,
            "rawPath": path,
            "rawQueryString": request.query_string.decode(),
            "headers": {key.lower(): value for key, value in request.headers.items()},
            "queryStringParameters": dict(request.args) or None,
            "pathParameters": match.path_parameters or None,
            "requestContext": {
                "accountId": self._account_id,
                "apiId": api_id,
                "domainName": request.host,
                "domainPrefix": api_id,
                "http": {
                    "method": request.method,
                    "path": path,
                    "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                    "sourceIp": request.remote_addr or "127.0.0.1",
                    "userAgent": request.headers.get("User-Agent", ""),
                },
                "requestId": str(uuid.uuid4()),
                "routeKey": match.compiled.route_key,
                "stage": "$default",
                "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                "timeEpoch": int(now * 1000),
                "authorizer": {
                    "iam": {"accountId": self._account_id, "userArn": "arn:aws:iam::local:user/local"}
                },
            },
            "body": text_body,
            "isBase64Encoded": is_base64,
        }


_MISSING_TOKEN = "Missing Authentication Token"


def _event_body(request: Request) -> tuple[str | None, bool]:
    """The request body as an event carries it: text, or base64 when it is not UTF-8."""
    body = request.get_data()
    try:
        return (body.decode("utf-8") if body else None), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode(), True


def _within_stage(path: str, stage: str | None) -> str | None:
    """The route's path of a request to a REST API stage (``/Prod/orders`` -> ``/orders``); the path
    itself for an HTTP API's route; None when the request is for another stage."""
    if stage is None:
        return path
    prefix = f"/{stage}"
    if path == prefix:
        return "/"
    return path[len(prefix) :] if path.startswith(prefix + "/") else None


def _rest_response_from_payload(payload: bytes) -> Response:
    """A Lambda proxy answer as a REST API returns it; anything but an object with ``statusCode`` is
    API Gateway's 502 for a malformed Lambda proxy response."""
    try:
        result = json.loads(payload or b"null")
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int | str):
        return _json(502, {"message": "Internal server error"})
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    response = Response(data, status=int(result["statusCode"]))
    if "Content-Type" not in (result.get("headers") or {}):
        response.headers["Content-Type"] = "application/json"
    for key, value in (result.get("headers") or {}).items():
        response.headers[key] = str(value)
    for key, values in (result.get("multiValueHeaders") or {}).items():
        for value in values:
            response.headers.add(key, str(value))
    return response


def _check_sigv4(authorization: str | None) -> str | None:
    if not authorization or not authorization.startswith("AWS4-HMAC-SHA256 "):
        return "Forbidden"
    scope = _SIGV4_SCOPE.search(authorization)
    if scope is None:
        return "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters."
    if scope.group(2) != "execute-api":
        return f"Credential should be scoped to correct service: 'execute-api'. (got '{scope.group(2)}')"
    return None


def _response_from_payload(payload: bytes) -> Response:
    try:
        result = json.loads(payload or b"null")
    except json.JSONDecodeError:
        return _json(500, {"message": "Internal Server Error"})
    if not isinstance(result, dict) or "statusCode" not in result:
        # Payload format 2.0: a result without statusCode is the JSON body of a 200.
        return _json(200, result)
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    response = Response(data, status=int(result["statusCode"]))
    for key, value in (result.get("headers") or {}).items():
        response.headers[key] = str(value)
    for cookie in result.get("cookies") or []:
        response.headers.add("Set-Cookie", cookie)
    return response


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")
