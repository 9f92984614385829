"""``arn:aws:states:::apigateway:invoke`` Tasks against the template's own HTTP API, in bounded time.

moto's integration (LocalStack's) sends the request with ``requests`` to ``<ApiEndpoint>/<Stage>/
_user_request_/<Path>``, LocalStack's own URL scheme, with no timeout: an endpoint such as
``abc123.execute-api.us-east-1.amazonaws.com`` is the real internet, so on a machine without it the Task
waits for as long as the network stack lets it (an execution RUNNING minutes after its TaskScheduled),
and it never got that far: the interpreter calls it with a keyword its method does not take
(``state_credentials``), and its error path then broke too (``FailureEvent.__init__() missing ... 'env'``).

Here an ``ApiEndpoint`` of an HTTP API the local cloud serves
(``<api id>.execute-api.<region>.amazonaws.com``, the ID being what ``!Ref`` of the API gives locally)
goes to that API on the local endpoint (``/execute-api/<api id>/<Path>``), signed with SigV4 for
``AuthType: IAM_ROLE``; any other endpoint is refused at once rather than attempted. A request gets at
most ``REQUEST_TIMEOUT_SECONDS``. Failures are named as the integration names them:
``ApiGateway.<status>`` for an HTTP error answer, otherwise ``ApiGateway.<exception>`` with its message.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sam_local_cloud.accounts import parts_for_arn
from sam_local_cloud.json_types import JsonValue
from sam_local_cloud.moto_seam import hooks

if TYPE_CHECKING:
    import requests

    from sam_local_cloud.moto_seam.stepfunctions import Environment, StateTaskServiceApiGateway

_CONCERN = "api_gateway_tasks"

REQUEST_TIMEOUT_SECONDS = 60.0
# The integration's parameters (Step Functions' API Gateway page); moto keeps only the first two and
# silently dropped Path, RequestBody and the rest.
_PARAMETERS = {
    "ApiEndpoint",
    "Method",
    "Headers",
    "Stage",
    "Path",
    "QueryParameters",
    "RequestBody",
    "AllowNullValues",
    "AuthType",
}

_LOCAL_ENDPOINT = re.compile(
    r"^(?:https?://)?(?P<api_id>[^./]+)\.execute-api\.(?P<region>[^.]+)\.amazonaws\.com/?$"
)
_signing = threading.local()


class EndpointNotLocalError(Exception):
    """The Task names an API endpoint the local cloud does not serve (there is no internet to reach)."""


def _local_url(parameters: dict[str, Any]) -> str:
    endpoint = str(parameters.get("ApiEndpoint", ""))
    match = _LOCAL_ENDPOINT.match(endpoint)
    port = getattr(_signing, "port", None)
    if match is None or port is None:
        raise EndpointNotLocalError(
            f"The API endpoint '{endpoint}' is not an API of the local cloud; only "
            "<api id>.execute-api.<region>.amazonaws.com endpoints of the template's HTTP APIs are reached"
        )
    path = str(parameters.get("Path") or "").lstrip("/")
    url = f"http://localhost:{port}/execute-api/{match.group('api_id')}/{path}"
    query = parameters.get("QueryParameters") or {}
    if query:
        url += "?" + urlencode([(key, value) for key, values in query.items() for value in values])
    return url


class _BoundedRequests:
    """``requests`` as moto's integration calls it, with a timeout and SigV4 when the Task asks for it."""

    def __getattr__(self, method: str) -> Callable[..., requests.Response]:
        import requests

        def send(
            url: str, *, headers: dict[str, str] | None = None, json: JsonValue = None
        ) -> requests.Response:
            request = requests.Request(method.upper(), url, headers=headers or {}, json=json).prepare()
            credentials = getattr(_signing, "credentials", None)
            if credentials is not None:
                _sign(request, credentials, getattr(_signing, "region", "us-east-1"))
            with requests.Session() as session:
                return session.send(request, timeout=REQUEST_TIMEOUT_SECONDS)

        return send


def _sign(request: requests.PreparedRequest, credentials: tuple[str, str], region: str) -> None:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    aws_request = AWSRequest(
        method=request.method, url=request.url, data=request.body or b"", headers=dict(request.headers)
    )
    SigV4Auth(Credentials(*credentials), "execute-api", region).add_auth(aws_request)
    request.headers.update(dict(aws_request.headers.items()))


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        FailureEventException,
        StateTaskServiceApiGateway,
        state_task_service_api_gateway,
    )
    from sam_local_cloud.stepfunctions import task_clients
    from sam_local_cloud.stepfunctions.service_errors import task_failed_event

    task = StateTaskServiceApiGateway
    hooks.replace(state_task_service_api_gateway, "requests", _BoundedRequests(), concern=_CONCERN)
    hooks.replace(task, "_get_supported_parameters", lambda self: _PARAMETERS, concern=_CONCERN)
    hooks.replace(task, "_invoke_url_of", staticmethod(_local_url), concern=_CONCERN)
    # moto keeps a body that is not JSON (an empty 200, plain text) as text by catching the standard
    # library's JSONDecodeError, but requests raises simplejson's when simplejson is installed, which is
    # not a subclass of it: the Task failed with ApiGateway.JSONDecodeError. Both are ValueErrors.
    hooks.replace(state_task_service_api_gateway, "JSONDecodeError", ValueError, concern=_CONCERN)

    @hooks.around(task, "_eval_service_task", concern=_CONCERN)
    def eval_service_task(
        proceed: Callable[..., None], self: StateTaskServiceApiGateway, env: Environment, **arguments: Any
    ) -> None:
        parameters = arguments["normalised_parameters"]
        role_arn = getattr(arguments.get("state_credentials"), "role_arn", None)
        parts = parts_for_arn(env.states.context_object.context_object_data["Execution"]["Id"])
        signed = parameters.get("AuthType") == "IAM_ROLE"
        _signing.credentials = (
            (task_clients.credentials_for_role(role_arn, parts) or ("local", "local")) if signed else None
        )
        # The API is served by the Task's own cloud.
        _signing.port = task_clients.endpoint_port(parts)
        _signing.region = arguments["resource_runtime_part"].region
        try:
            # Positionally: moto's method names its last parameter task_credentials, while the
            # interpreter passes state_credentials=, so moto's integration never got this far.
            proceed(
                self,
                env,
                arguments["resource_runtime_part"],
                arguments["normalised_parameters"],
                arguments.get("state_credentials"),
            )
        finally:
            _signing.credentials = None
            _signing.port = None

    def from_error(self: StateTaskServiceApiGateway, env: Environment, ex: Exception) -> object:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        if isinstance(ex, state_task_service_api_gateway.SfnGatewayException):
            error, cause = f"ApiGateway.{ex.response.status_code}", ex.response.text
        else:
            error, cause = f"ApiGateway.{type(ex).__name__}", str(ex)
        return task_failed_event(env, error, cause, task=self)

    hooks.replace(task, "_from_error", from_error, concern=_CONCERN)
