"""A Lambda client for callers in the local cloud's own process: the same answers as boto3, without HTTP.

moto's Step Functions interpreter invokes Lambda with a boto3 client pointed at the local cloud. Each Task
then pays for request signing, a loopback connection, a server thread and response parsing on both sides:
about half the local cloud's time per Task in a profile. This client hands the call straight to the
``LambdaService`` and turns the API's answer (status, headers, body) into what boto3 would have returned
with botocore's own parser, so a 429 still arrives as a ``ClientError`` with ``Error.Code``
``TooManyRequestsException``, ``Reason`` and ``Type``, and a success carries a streaming ``Payload``.
"""

from __future__ import annotations

import io
from functools import cache
from typing import TYPE_CHECKING, Any

from botocore.awsrequest import HTTPHeaders
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from botocore.response import StreamingBody

if TYPE_CHECKING:
    from botocore.model import OperationModel, ServiceModel
    from mypy_boto3_lambda.type_defs import InvocationResponseTypeDef

    from sam_local_cloud.lambda_service.api import LambdaApi

INVOKE = "Invoke"


@cache
def _lambda_model() -> tuple[ServiceModel, OperationModel]:
    from sam_local_cloud import sdk_models

    service_model = sdk_models.service_model("lambda")
    return service_model, service_model.operation_model(INVOKE)


class InProcessLambdaClient:
    """Implements ``invoke`` only: the one Lambda operation a state machine's Task calls."""

    def __init__(self, api: LambdaApi) -> None:
        self._api = api
        self._parser = create_parser("rest-json")

    def invoke(
        self,
        *,
        FunctionName: str,  # noqa: N803 - boto3's parameter names, so callers pass **parameters unchanged
        Payload: bytes | str | None = None,  # noqa: N803
        InvocationType: str = "RequestResponse",  # noqa: N803
        Qualifier: str | None = None,  # noqa: N803
        LogType: str | None = None,  # noqa: N803
        **_ignored: object,
    ) -> InvocationResponseTypeDef:
        payload = Payload.encode() if isinstance(Payload, str) else (Payload or b"")
        status, headers, body = self._api.invoke_response(
            FunctionName, payload, InvocationType, qualifier=Qualifier, log_type=LogType
        )
        return self._parse(status, headers, body)

    def _parse(self, status: int, headers: dict[str, str], body: bytes) -> InvocationResponseTypeDef:
        service_model, operation = _lambda_model()
        output_shape = operation.output_shape
        assert output_shape is not None  # Invoke has an output in every botocore model
        http_headers = HTTPHeaders()
        for name, value in headers.items():
            http_headers[name] = value
        response: dict[str, object] = {"status_code": status, "headers": http_headers}
        if status < 300:
            response["body"] = StreamingBody(io.BytesIO(body), len(body))
            answer: InvocationResponseTypeDef = self._parser.parse(response, output_shape)
            answer["ResponseMetadata"]["RetryAttempts"] = 0
            return answer
        response["body"] = body
        parsed: dict[str, Any] = self._parser.parse(response, output_shape)
        # As botocore's endpoint does for modelled errors: Type, Reason, message at the top level too.
        error_shape = service_model.shape_for_error_code(parsed.get("Error", {}).get("Code", ""))
        if error_shape is not None:
            parsed.update(self._parser.parse(response, error_shape))
        parsed["ResponseMetadata"]["RetryAttempts"] = 0
        raise ClientError(parsed, INVOKE)  # type: ignore[arg-type]
