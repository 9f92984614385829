"""A local AWS Lambda: real runtime processes behind its own Runtime API, AWS's concurrency quota,
the Lambda REST API as a WSGI app, counters, CloudWatch metrics and injectable faults.

    service = LambdaService([FunctionSpec("Hello", "app.handler", Path("src"))],
                            endpoint_url="http://127.0.0.1:5000", log_dir=Path("logs"))
    service.invoke("Hello", b'{"name": "x"}')   # or serve `service` as WSGI and use boto3
    service.close()
"""

from sam_local_cloud.lambda_service.errors import (
    CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
    RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
    InvalidParameterValueError,
    LambdaApiError,
    ResourceNotFoundError,
    TooManyRequestsError,
)
from sam_local_cloud.lambda_service.event_keys import EventKeys
from sam_local_cloud.lambda_service.faults import FaultPlan, FaultRule
from sam_local_cloud.lambda_service.functions import FunctionSpec
from sam_local_cloud.lambda_service.metrics import MetricsPublisher
from sam_local_cloud.lambda_service.noisy_neighbour import NoisyNeighbour
from sam_local_cloud.lambda_service.service import InvokeResult, LambdaService

__all__ = [
    "CONCURRENT_INVOCATION_LIMIT_EXCEEDED",
    "RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED",
    "EventKeys",
    "FaultPlan",
    "FaultRule",
    "FunctionSpec",
    "InvalidParameterValueError",
    "InvokeResult",
    "LambdaApiError",
    "LambdaService",
    "MetricsPublisher",
    "NoisyNeighbour",
    "ResourceNotFoundError",
    "TooManyRequestsError",
]
