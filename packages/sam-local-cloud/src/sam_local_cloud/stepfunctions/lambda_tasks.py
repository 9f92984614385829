"""Lambda Task results and errors in the shapes AWS records.

moto's interpreter differs from AWS in two places every Lambda Task meets:

- a ``lambda:invoke`` result lacks ``SdkHttpMetadata`` and ``SdkResponseMetadata``, which AWS adds (the
  Java SDK's response metadata) and which state machines select from or pass on;
- a function error's ``Cause`` is re-serialised compactly for both kinds of Task. AWS does that for
  ``lambda:invoke`` only; a bare function ARN Task keeps the runtime's own JSON text (``", "`` and
  ``": "`` separators, key order as the runtime wrote it).
"""

from __future__ import annotations

import functools
import json
import random
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sam_local_cloud.lambda_service.functions import LATEST
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals

if TYPE_CHECKING:
    from collections.abc import Callable

    from sam_local_cloud.moto_seam.stepfunctions import Environment

_CONCERN = "lambda_tasks"


class _RawPayloadError(Exception):
    """Marks a function error that also carries the payload exactly as the runtime wrote it."""

    raw_payload: str


def sdk_http_metadata(
    request_id: str, payload_text: str, executed_version: str, log_result: str | None = None
) -> dict[str, Any]:
    """What AWS adds to a ``lambda:invoke`` result: the Invoke response's headers, as recorded."""
    now = int(time.time())
    trace_id = f"root={_trace_id(now)};sampled=0"
    headers = {
        **({"X-Amz-Log-Result": log_result} if log_result is not None else {}),
        "X-Amz-Executed-Version": executed_version,
        "x-amzn-Remapped-Content-Length": "0",
        "Connection": "keep-alive",
        "x-amzn-RequestId": request_id,
        "Content-Length": str(len(payload_text.encode())),
        "Date": _http_date(now),
        "X-Amzn-Trace-Id": trace_id,
        "Content-Type": "application/json",
    }
    return {
        "AllHttpHeaders": {name: [value] for name, value in headers.items()},
        "HttpHeaders": dict(sorted(headers.items(), key=lambda item: item[0].lower())),
        "HttpStatusCode": 200,
    }


# A trace ID names a request and guards nothing: no need for the secrets module's system calls.
_trace_random = random.Random()


def _trace_id(epoch_seconds: int) -> str:
    """An X-Ray trace ID: version 1, the request's time in epoch seconds, 96 random bits."""
    return f"1-{epoch_seconds:08x}-{_trace_random.getrandbits(96):024x}"


@functools.lru_cache(maxsize=4)
def _http_date(epoch_seconds: int) -> str:
    return formatdate(epoch_seconds, usegmt=True)


def _payload_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskLambda, lambda_eval_utils

    function_error_class = lambda_eval_utils.LambdaFunctionErrorException
    raw_error_class = type("LambdaFunctionRawErrorException", (function_error_class, _RawPayloadError), {})

    @hooks.around(lambda_eval_utils, "execute_lambda_function_integration", concern=_CONCERN)
    def execute_lambda_function_integration(
        proceed: Any, env: Environment, parameters: dict[str, Any], region: str, state_credentials: Any
    ) -> None:
        if env.is_mocked_mode():
            proceed(env=env, parameters=parameters, region=region, state_credentials=state_credentials)
            return
        # Read at call time: task_clients puts its own in the module's place.
        client: Any = lambda_eval_utils.boto_client_for(
            service="lambda", region=region, state_credentials=state_credentials
        )
        response = client.invoke(**parameters)
        payload_text = response["Payload"].read().decode("utf-8", errors="replace")
        if response.get("FunctionError"):
            compact = json.dumps(_payload_value(payload_text), separators=(",", ":"))
            error = raw_error_class(response["FunctionError"], compact)
            error.raw_payload = payload_text
            raise error
        request_id = response.get("ResponseMetadata", {}).get("RequestId", "")
        executed_version = response.get("ExecutedVersion", LATEST)
        log_result = response.get("LogResult")
        env.stack.append(
            {
                "ExecutedVersion": executed_version,
                # Only when the Task asked for LogType Tail, as on AWS.
                **({"LogResult": log_result} if log_result is not None else {}),
                "Payload": _payload_value(payload_text),
                "SdkHttpMetadata": sdk_http_metadata(request_id, payload_text, executed_version, log_result),
                "SdkResponseMetadata": {"RequestId": request_id},
                "StatusCode": response.get("StatusCode", 200),
            }
        )

    @hooks.around(StateTaskLambda, "_from_error", concern=_CONCERN)
    def from_error_as_aws_records_it(
        proceed: Callable[[object, Environment, Exception], object],
        self: object,
        env: Environment,
        ex: Exception,
    ) -> object:
        if isinstance(ex, _RawPayloadError) and isinstance(ex, function_error_class):
            ex = function_error_class(ex.function_error, ex.raw_payload)
        if isinstance(ex, ClientError):
            return _lambda_refused(env, ex)
        return proceed(self, env, ex)


def _lambda_refused(env: Environment, client_error: Any) -> Any:
    """A bare function ARN Task whose Invoke Lambda refused (a 429 above all) fails as ``lambda:invoke``
    does on AWS: ``Lambda.TooManyRequestsException``, the cause ``Rate Exceeded. (Service: AWSLambda;
    Status Code: 429; ...)``, so that a ``Retry`` on ``Lambda.TooManyRequestsException`` matches it.
    moto names every such error ``Exception`` with the bare message, which no such Retry matches."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        CustomErrorName,
        EventDetails,
        FailureEvent,
        HistoryEventType,
        LambdaFunctionFailedEventDetails,
    )

    error, cause = internals.lambda_error_and_cause(client_error)
    return FailureEvent(
        env=env,
        error_name=CustomErrorName(error),
        event_type=HistoryEventType.LambdaFunctionFailed,
        # moto declares EventDetails total, yet each event fills one of its keys (as moto's own code does).
        event_details=EventDetails(  # type: ignore[typeddict-item]
            lambdaFunctionFailedEventDetails=LambdaFunctionFailedEventDetails(error=error, cause=cause)
        ),
    )
