"""API Gateway routes that call Step Functions themselves (no function in between), as OpenAPI defines them.

A REST API (``AWS::Serverless::Api`` with a ``DefinitionBody``) route whose
``x-amazon-apigateway-integration`` is ``type: aws`` with
``uri: arn:aws:apigateway:<region>:states:action/<Action>`` (StartSyncExecution, StartExecution) runs as
API Gateway runs it:

1. the request template for the request's content type (``requestTemplates``, VTL, see ``vtl``) turns the
   request into the action's JSON parameters; without one, ``passthroughBehavior`` decides (WHEN_NO_MATCH,
   the default, passes the body through; WHEN_NO_TEMPLATES and NEVER answer 415);
2. the action is called on the local Step Functions, signed with the integration's ``credentials`` role
   when IAM is enforced;
3. the integration response is chosen by matching each ``responses`` key (a regular expression) against
   the action's HTTP status, ``default`` otherwise; its ``responseTemplates`` (``$input`` is now the
   action's JSON answer) and its literal ``responseParameters`` headers make the answer, with its
   ``statusCode``. No matching response and no default: HTTP 500 ``Internal server error``, as AWS
   answers that configuration error. An action slower than the integration's ``timeoutInMillis``
   (29 s by default) gets 504 ``Endpoint request timed out``.

An HTTP API (``AWS::Serverless::HttpApi`` with a ``DefinitionBody``) route with ``type: aws_proxy`` and
``integrationSubtype: StepFunctions-StartSyncExecution`` (or ``-StartExecution``) maps ``requestParameters``
(``$request.body``, ``$request.body.<path>``, ``$request.header.<name>``, ``$request.querystring.<name>``,
``$request.path.<name>``, ``$context.requestId`` or literal text) onto the action's parameters and answers
with the action's status and JSON body (503 ``Service Unavailable`` past its ``timeoutInMillis``, 30 s by
default).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from werkzeug.wrappers import Request, Response

from sam_local_cloud import vtl
from sam_local_cloud.json_types import JsonObject, JsonValue

STATES_ACTION_URI = re.compile(r"^arn:aws[\w-]*:apigateway:[\w-]+:states:action/(\w+)$")
STATES_ACTIONS = frozenset({"StartSyncExecution", "StartExecution"})
HTTP_API_SUBTYPES = {
    "StepFunctions-StartSyncExecution": "StartSyncExecution",
    "StepFunctions-StartExecution": "StartExecution",
}
# HTTP API's request parameter names, as the action's members.
_HTTP_API_PARAMETERS = {
    "StateMachineArn": "stateMachineArn",
    "Input": "input",
    "Name": "name",
    "TraceHeader": "traceHeader",
}
# API Gateway's integration timeouts (``timeoutInMillis`` sets a route's own): past them the caller gets
# 504 "Endpoint request timed out" from a REST API, 503 "Service Unavailable" from an HTTP API.
REST_API_TIMEOUT_MILLISECONDS = 29_000
HTTP_API_TIMEOUT_MILLISECONDS = 30_000
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "x-amazon-apigateway-any-method")
_INTERNAL_ERROR: JsonObject = {"message": "Internal server error"}


@dataclass(frozen=True)
class ServiceRoute:
    """One OpenAPI operation whose integration calls a Step Functions action."""

    api_logical_id: str
    method: str
    path: str
    action: str
    integration: Mapping[str, Any]
    stage: str | None = None  # REST APIs only; HTTP APIs answer on $default, without a stage in the path
    iam_auth: bool = False
    http_api: bool = False


@dataclass(frozen=True)
class ActionOutcome:
    """The Step Functions action's HTTP answer."""

    status: int
    body: bytes


# (action, parameters, the integration's role ARN or None) -> the action's answer
StatesCaller = Callable[[str, JsonObject, str | None], ActionOutcome]


@dataclass
class ParsedRoutes:
    routes: list[ServiceRoute] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def routes_from_openapi(
    api_logical_id: str,
    definition: Mapping[str, Any],
    *,
    stage: str | None,
    http_api: bool,
    iam_auth: bool = False,
) -> ParsedRoutes:
    """The operations of an OpenAPI ``DefinitionBody`` that call Step Functions; the others, as notes."""
    parsed = ParsedRoutes()
    for path, operations in (definition.get("paths") or {}).items():
        for method, operation in (operations or {}).items():
            if method.lower() not in _METHODS or not isinstance(operation, Mapping):
                continue
            verb = "ANY" if method.lower() == "x-amazon-apigateway-any-method" else method.upper()
            integration = operation.get("x-amazon-apigateway-integration")
            if not integration:
                continue  # no integration yet: SAM's implicit API before an event's route is written in
            action = _states_action(integration)
            if action is None and ":lambda:path/" in str(integration.get("uri", "")):
                continue  # a function's route: its HttpApi event is the route the gateway runs
            if action is None:
                parsed.notes.append(
                    f"{api_logical_id} {verb} {path}: integration {integration.get('type', 'none')} "
                    f"{integration.get('uri') or integration.get('integrationSubtype') or ''} not run locally"
                )
                continue
            parsed.routes.append(
                ServiceRoute(
                    api_logical_id=api_logical_id,
                    method=verb,
                    path=str(path),
                    action=action,
                    integration=integration,
                    stage=stage,
                    iam_auth=iam_auth,
                    http_api=http_api,
                )
            )
    return parsed


def state_machine_event_route(
    api_logical_id: str,
    *,
    stage: str,
    path: str,
    method: str,
    state_machine_arn: str,
    unescape_quotes: bool = False,
) -> ServiceRoute:
    """The route SAM writes for a state machine's ``Api`` event: StartExecution with SAM's templates."""
    escaped_input = "$util.escapeJavaScript($input.json('$'))"
    if unescape_quotes:
        # SAM's UnescapeMappingTemplate: undo escapeJavaScript's \' so the input stays valid JSON.
        escaped_input += '.replaceAll("\\\\\'","\'")'
    template = f'{{"input": "{escaped_input}", "stateMachineArn": "{state_machine_arn}"}}'
    return ServiceRoute(
        api_logical_id=api_logical_id,
        method="ANY" if method.lower() == "any" else method.upper(),
        path=path,
        action="StartExecution",
        integration={
            "type": "aws",
            "uri": "arn:aws:apigateway:local:states:action/StartExecution",
            "requestTemplates": {"application/json": template},
            "responses": {"200": {"statusCode": "200"}, "400": {"statusCode": "400"}},
            "passthroughBehavior": "when_no_match",
        },
        stage=stage,
    )


def _states_action(integration: Mapping[str, Any]) -> str | None:
    kind = str(integration.get("type", "")).lower()
    if kind == "aws":
        match = STATES_ACTION_URI.match(str(integration.get("uri", "")))
        if match is not None and match.group(1) in STATES_ACTIONS:
            return match.group(1)
    if kind == "aws_proxy":
        return HTTP_API_SUBTYPES.get(str(integration.get("integrationSubtype", "")))
    return None


def answer(
    route: ServiceRoute,
    request: Request,
    path_parameters: Mapping[str, str],
    call: StatesCaller,
    *,
    api_id: str,
    account_id: str,
) -> Response:
    """The API's answer to ``request`` on ``route``."""
    routed = _RoutedRequest(
        route, request, path_parameters, call, _context(route, request, api_id, account_id)
    )
    return _answer_http_api(routed) if route.http_api else _answer_rest_api(routed)


@dataclass(frozen=True)
class _RoutedRequest:
    """A request on a route that calls Step Functions, with what answering it takes."""

    route: ServiceRoute
    request: Request
    path_parameters: Mapping[str, str]
    call: StatesCaller
    context: JsonObject  # the request's ``$context``


def _context(route: ServiceRoute, request: Request, api_id: str, account_id: str) -> JsonObject:
    now = time.time()
    return {
        "requestId": str(uuid.uuid4()),
        "apiId": api_id,
        "accountId": account_id,
        "stage": route.stage or "$default",
        "httpMethod": request.method,
        "resourcePath": route.path,
        "path": request.path,
        "requestTimeEpoch": int(now * 1000),
        "identity": {
            "sourceIp": request.remote_addr or "127.0.0.1",
            "userAgent": request.headers.get("User-Agent", ""),
        },
    }


def _answer_rest_api(routed: _RoutedRequest) -> Response:
    request, integration = routed.request, routed.route.integration
    body = request.get_data(as_text=True)
    content_type = (request.mimetype or "application/json").lower()
    templates: Mapping[str, str] = integration.get("requestTemplates") or {}
    template = templates.get(content_type)
    if template is None:
        behaviour = str(integration.get("passthroughBehavior", "when_no_match")).lower()
        if behaviour == "never" or (behaviour == "when_no_templates" and templates):
            return _json(415, {"message": "Unsupported Media Type"})
        parameters_text = body
    else:
        input_variable = vtl.InputVariable(
            body=body,
            path_parameters=routed.path_parameters,
            query_parameters=dict(request.args),
            headers=dict(request.headers),
        )
        try:
            parameters_text = vtl.render(template, _template_variables(input_variable, routed.context))
        except (vtl.TemplateSyntaxError, ValueError, TypeError):
            return _json(500, _INTERNAL_ERROR)
    try:
        parameters = json.loads(parameters_text or "{}")
    except json.JSONDecodeError:
        # Step Functions itself refuses a body that is not JSON; its answer goes through the responses.
        parameters = None
    if not isinstance(parameters, dict):
        outcome: ActionOutcome | None = ActionOutcome(
            400, json.dumps({"__type": "SerializationException"}).encode()
        )
    else:
        outcome = _call_within(routed, parameters, REST_API_TIMEOUT_MILLISECONDS)
    if outcome is None:
        return _json(504, {"message": "Endpoint request timed out"})
    return _integration_response(integration, outcome, routed.context)


def _call_within(
    routed: _RoutedRequest, parameters: JsonObject, default_milliseconds: int
) -> ActionOutcome | None:
    """The action's answer, or None if it did not come within the integration's timeout.

    As on AWS the action goes on (a synchronous execution runs to its end); only the caller stops waiting.
    """
    route = routed.route
    milliseconds = int(route.integration.get("timeoutInMillis") or default_milliseconds)
    answers: list[ActionOutcome] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            routed.call(route.action, parameters, route.integration.get("credentials"))
        ),
        name="api-integration",
        daemon=True,
    )
    caller.start()
    caller.join(timeout=milliseconds / 1000)
    return answers[0] if answers else None


def _integration_response(
    integration: Mapping[str, Any], outcome: ActionOutcome, context: JsonObject
) -> Response:
    responses: Mapping[str, Any] = integration.get("responses") or {}
    status_text = str(outcome.status)
    chosen = next(
        (
            response
            for pattern, response in responses.items()
            if pattern != "default" and re.fullmatch(pattern, status_text)
        ),
        responses.get("default"),
    )
    if chosen is None:
        return _json(500, _INTERNAL_ERROR)
    templates: Mapping[str, str] = chosen.get("responseTemplates") or {}
    template = templates.get("application/json", next(iter(templates.values()), None))
    body = outcome.body.decode()
    if template:
        try:
            body = vtl.render(template, _template_variables(vtl.InputVariable(body=body), context))
        except (vtl.TemplateSyntaxError, ValueError, TypeError):
            return _json(500, _INTERNAL_ERROR)
    response = Response(body, status=int(chosen.get("statusCode", 200)), content_type="application/json")
    for name, value in (chosen.get("responseParameters") or {}).items():
        header = str(name).removeprefix("method.response.header.")
        text = str(value)
        if header != name and len(text) >= 2 and text[0] == text[-1] == "'":
            response.headers[header] = text[1:-1]
    return response


def _template_variables(input_variable: vtl.InputVariable, context: JsonObject) -> dict[str, object]:
    return {
        "input": input_variable,
        "util": vtl.UtilVariable(),
        "context": context,
        "stageVariables": {},
    }


def _answer_http_api(routed: _RoutedRequest) -> Response:
    body = routed.request.get_data(as_text=True)
    parameters: JsonObject = {}
    for name, source in (routed.route.integration.get("requestParameters") or {}).items():
        member = _HTTP_API_PARAMETERS.get(str(name))
        if member is None:
            continue
        value = _http_api_value(str(source), routed, body)
        if value is not None:
            parameters[member] = value
    outcome = _call_within(routed, parameters, HTTP_API_TIMEOUT_MILLISECONDS)
    if outcome is None:
        return _json(503, {"message": "Service Unavailable"})
    return Response(outcome.body, status=outcome.status, content_type="application/json")


def _http_api_value(source: str, routed: _RoutedRequest, body: str) -> str | None:
    if source == "$request.body":
        return body
    if source.startswith("$request.body."):
        try:
            value = vtl.select(json.loads(body or "{}"), "$" + source[len("$request.body") :])
        except json.JSONDecodeError:
            return None
        if value is vtl.UNDEFINED:
            return None
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    for prefix, values in (
        ("$request.header.", routed.request.headers),
        ("$request.querystring.", routed.request.args),
        ("$request.path.", routed.path_parameters),
    ):
        if source.startswith(prefix):
            found = values.get(source[len(prefix) :])
            return None if found is None else str(found)
    if source.startswith("$context."):
        in_context = routed.context.get(source[len("$context.") :])
        return None if in_context is None else str(in_context)
    return source


def _json(status: int, body: JsonValue) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")
