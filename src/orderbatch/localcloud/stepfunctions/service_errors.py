"""How optimised service integrations (``sqs:sendMessage``, ``sns:publish``, ``events:putEvents``,
``dynamodb:putItem``, ``states:startExecution``) name a service's error, as Step Functions does.

Step Functions calls them with the AWS SDK for Java, and a Task fails with ``<Prefix>.<exception class>``:
the class the service's model gives the error code (``SNS.AuthorizationErrorException``,
``StepFunctions.ExecutionDoesNotExistException``), or the service's base exception for a code its model
does not name (``SQS.AmazonSQSException``, ``DynamoDB.AmazonDynamoDBException``,
``StepFunctions.AWSStepFunctionsException``). The cause is the message followed by
``(Service: <name>; Status Code: <n>; Error Code: <code>; Request ID: <id>; Proxy: null)``.

moto names them unevenly: ``SQS.SdkClientException`` with a bare message for every SQS error,
``StepFunctions.AccessDeniedExceptionException``, ``DynamoDB.AccessDeniedException``, and an EventBridge
error (a denied ``PutEvents``) is not caught at all and becomes ``States.Runtime``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _JavaService:
    error_prefix: str
    base_exception: str
    service_name: str  # as the cause's "Service:" names it
    botocore_name: str


# Optimised integrations whose errors are named here, by the module moto implements them in.
_SERVICES = {
    "state_task_service_sqs.StateTaskServiceSqs": _JavaService(
        "SQS", "AmazonSQSException", "AmazonSQS", "sqs"
    ),
    "state_task_service_sns.StateTaskServiceSns": _JavaService(
        "SNS", "AmazonSNSException", "AmazonSNS", "sns"
    ),
    "state_task_service_events.StateTaskServiceEvents": _JavaService(
        "EventBridge", "AmazonEventBridgeException", "AmazonEventBridge", "events"
    ),
    "state_task_service_dynamodb.StateTaskServiceDynamoDB": _JavaService(
        "DynamoDB", "AmazonDynamoDBException", "AmazonDynamoDBv2", "dynamodb"
    ),
    "state_task_service_sfn.StateTaskServiceSfn": _JavaService(
        "StepFunctions", "AWSStepFunctionsException", "AWSStepFunctions", "stepfunctions"
    ),
}


@functools.cache
def _modelled_exceptions(botocore_name: str) -> dict[str, str]:
    """Error code -> exception class name, from the service's model (both the shape's name and the
    code it is sent with answer to it)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model(botocore_name)
    classes: dict[str, str] = {}
    for shape in model.error_shapes:
        name = shape.name if shape.name.endswith("Exception") else f"{shape.name}Exception"
        classes[shape.name] = name
        code = (shape.metadata.get("error") or {}).get("code")
        if code:
            classes[code] = name
    return classes


def error_and_cause(service: _JavaService, client_error: Any) -> tuple[str, str]:
    """The error name and cause Step Functions records for a service's error response."""
    response = client_error.response
    code = str(response.get("Error", {}).get("Code", ""))
    message = str(response.get("Error", {}).get("Message", ""))
    metadata = response.get("ResponseMetadata", {})
    exception = _modelled_exceptions(service.botocore_name).get(code, service.base_exception)
    details = "; ".join(
        [
            f"Service: {service.service_name}",
            f"Status Code: {metadata.get('HTTPStatusCode')}",
            f"Error Code: {code}",
            f"Request ID: {metadata.get('RequestId')}",
            "Proxy: null",
        ]
    )
    return f"{service.error_prefix}.{exception}", f"{message} ({details})"


def patch() -> None:
    import importlib

    from botocore.exceptions import ClientError
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    package = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
    for location, service in _SERVICES.items():
        module_name, _, class_name = location.partition(".")
        task_class = getattr(importlib.import_module(f"{package}.{module_name}"), class_name)
        original = task_class._from_error

        def from_error(
            self: Any, env: Any, ex: Exception, *, _service: _JavaService = service, _original: Any = original
        ) -> Any:
            if not isinstance(ex, ClientError):
                return _original(self, env, ex)
            error, cause = error_and_cause(_service, ex)
            return FailureEvent(
                env=env,
                error_name=CustomErrorName(error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(
                    taskFailedEventDetails=TaskFailedEventDetails(
                        error=error,
                        cause=cause,
                        resource=self._get_sfn_resource(),
                        resourceType=self._get_sfn_resource_type(),
                    )
                ),
            )

        task_class._from_error = from_error
