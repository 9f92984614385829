"""HTTP and REST APIs: a function's Lambda proxy routes, an OpenAPI ``DefinitionBody``'s Step Functions
routes, and a state machine's Api events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sam_local_cloud.api_integrations import routes_from_openapi, state_machine_event_route
from sam_local_cloud.stack.messaging import RULE_EVENT_TYPES
from sam_local_cloud.stack.model import HttpRoute, LocalStack

# SAM's implicit REST API, which an Api event without a RestApiId joins, and its stage.
IMPLICIT_REST_API = "ServerlessRestApi"
IMPLICIT_REST_API_STAGE = "Prod"


def add_state_machine_api_events(
    stack: LocalStack, resources: Mapping[str, Any], physical: Mapping[str, Mapping[str, str]]
) -> None:
    """A state machine's ``Events`` of type Api: the StartExecution route SAM writes into the REST API."""
    stages = {
        physical[logical_id]["Ref"]: (
            logical_id,
            str((body.get("Properties") or {}).get("StageName", "Prod")),
        )
        for logical_id, body in resources.items()
        if body.get("Type") == "AWS::Serverless::Api"
    }
    for logical_id, body in resources.items():
        if body.get("Type") != "AWS::Serverless::StateMachine":
            continue
        for event_name, event in ((body.get("Properties") or {}).get("Events") or {}).items():
            if event.get("Type") in RULE_EVENT_TYPES:
                continue  # a rule (event_source_rules)
            if event.get("Type") != "Api":
                stack.not_honoured.append(
                    f"{logical_id}.Events.{event_name} ({event.get('Type')}): not honoured locally"
                )
                continue
            props = event.get("Properties") or {}
            api_id = props.get("RestApiId")
            implicit = (IMPLICIT_REST_API, IMPLICIT_REST_API_STAGE)
            api_logical_id, stage = stages.get(api_id, implicit) if api_id is not None else implicit
            stack.service_routes.append(
                state_machine_event_route(
                    api_logical_id,
                    stage=str(props.get("Stage") or stage),
                    path=str(props.get("Path", "/")),
                    method=str(props.get("Method", "ANY")),
                    state_machine_arn=physical[logical_id]["Arn"],
                    unescape_quotes=bool(props.get("UnescapeMappingTemplate")),
                )
            )


def add_definition_routes(
    stack: LocalStack, logical_id: str, props: Mapping[str, Any], stage: str | None
) -> None:
    """The routes of an API's OpenAPI ``DefinitionBody`` that call Step Functions (api_integrations)."""
    body = props.get("DefinitionBody")
    if not isinstance(body, Mapping):
        if stage is not None:
            stack.not_honoured.append(
                f"{logical_id}: only a DefinitionBody's Step Functions routes run locally"
            )
        return
    parsed = routes_from_openapi(
        logical_id,
        body,
        stage=stage,
        http_api=stage is None,
        iam_auth=(props.get("Auth") or {}).get("DefaultAuthorizer") == "AWS_IAM",
    )
    stack.service_routes.extend(parsed.routes)
    stack.not_honoured.extend(parsed.notes)


def http_routes(
    function_name: str, events: Mapping[str, Any], physical: Mapping[str, Mapping[str, str]]
) -> list[HttpRoute]:
    routes = []
    for event in events.values():
        props = event.get("Properties") or {}
        if event.get("Type") == "HttpApi":
            routes.append(
                HttpRoute(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props.get("Path", "/")),
                    function_name=function_name,
                    api_logical_id=str(props.get("ApiId", "ServerlessHttpApi")),
                    iam_auth=True,
                )
            )
        elif event.get("Type") == "Api":
            # A REST API's Lambda proxy route; its stage is the API's (set once every API is read).
            routes.append(
                HttpRoute(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=str(props.get("Path", "/")),
                    function_name=function_name,
                    api_logical_id=str(props.get("RestApiId") or IMPLICIT_REST_API).lower(),
                    iam_auth=((props.get("Auth") or {}).get("Authorizer")) == "AWS_IAM",
                    payload_version="1.0",
                )
            )
    return routes


def set_rest_api_stages(
    stack: LocalStack, resources: Mapping[str, Any], physical: Mapping[str, Mapping[str, str]]
) -> None:
    """Each REST API proxy route is served under its API's ``StageName`` (SAM's implicit API: ``Prod``)."""
    stages = {
        str(physical[logical_id]["Ref"]).lower(): str((body.get("Properties") or {}).get("StageName", "Prod"))
        for logical_id, body in resources.items()
        if body.get("Type") == "AWS::Serverless::Api"
    }
    stack.routes = [
        replace(route, stage=stages.get(route.api_logical_id, IMPLICIT_REST_API_STAGE))
        if route.payload_version == "1.0"
        else route
        for route in stack.routes
    ]
