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
or ECS error (a denied ``PutEvents``) is not caught at all and becomes ``States.Runtime``.

Also here, as failures of a Task: an integration pattern the local cloud cannot run for a resource fails
with States.Runtime naming it, and an aws-sdk error answer without a request ID (moto's 404 page for an
operation it lacks) is named like any other instead of breaking on ``KeyError('RequestId')``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Environment


@dataclass(frozen=True)
class _JavaService:
    error_prefix: str
    base_exception: str
    service_name: str  # as the cause's "Service:" names it
    botocore_name: str


# Optimised integrations whose errors are named here, by the name of moto's class for them (the seam
# hands the class on under that name).
_SERVICES = {
    "StateTaskServiceSqs": _JavaService("SQS", "AmazonSQSException", "AmazonSQS", "sqs"),
    "StateTaskServiceSns": _JavaService("SNS", "AmazonSNSException", "AmazonSNS", "sns"),
    "StateTaskServiceEvents": _JavaService(
        "EventBridge", "AmazonEventBridgeException", "AmazonEventBridge", "events"
    ),
    "StateTaskServiceDynamoDB": _JavaService(
        "DynamoDB", "AmazonDynamoDBException", "AmazonDynamoDBv2", "dynamodb"
    ),
    "StateTaskServiceSfn": _JavaService(
        "StepFunctions", "AWSStepFunctionsException", "AWSStepFunctions", "stepfunctions"
    ),
    "StateTaskServiceEcs": _JavaService("ECS", "AmazonECSException", "AmazonECS", "ecs"),
    "StateTaskServiceGlue": _JavaService("Glue", "AWSGlueException", "AWSGlue", "glue"),
}
_CONCERN = "service_errors"


@functools.cache
def _modelled_exceptions(botocore_name: str) -> dict[str, str]:
    """Error code -> exception class name, from the service's model (both the shape's name and the
    code it is sent with answer to it)."""
    from sam_local_cloud import sdk_models

    model = sdk_models.service_model(botocore_name)
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


def register_hooks() -> None:
    from botocore.exceptions import ClientError

    from sam_local_cloud.moto_seam import stepfunctions as moto_sfn

    for class_name, service in _SERVICES.items():

        def from_error(
            proceed: Any, self: Any, env: Environment, ex: Exception, *, _service: _JavaService = service
        ) -> Any:
            if isinstance(ex, moto_sfn.FailureEventException):
                # Already named (States.Runtime for parameters that cannot make the request, ...); moto's
                # DynamoDB integration would rename any exception DynamoDB.AmazonDynamoDBException.
                return ex.failure_event
            if not isinstance(ex, ClientError):
                return proceed(self, env, ex)
            error, cause = error_and_cause(_service, ex)
            return task_failed_event(env, error, cause, task=self)

        hooks.around(getattr(moto_sfn, class_name), "_from_error", concern=_CONCERN)(from_error)

    _name_patterns_not_run_locally()
    _tolerate_errors_without_request_id()


def error_name_of(error: str) -> Any:
    """The interpreter's name of ``error``: Step Functions' own for a ``States.`` name it defines, the
    task's own (custom) otherwise. A ``States.`` name Step Functions does not define is matched by name."""
    from sam_local_cloud.moto_seam.stepfunctions import CustomErrorName, ErrorName, StatesErrorName

    if not error.startswith("States."):
        return CustomErrorName(error)
    try:
        return StatesErrorName.from_name(error)
    except ValueError:
        return ErrorName(error)


def task_failed_event(env: Environment, error: str, cause: str, *, task: object = None) -> Any:
    """The interpreter's TaskFailed failure event with this error and cause (of ``task``'s resource)."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        EventDetails,
        FailureEvent,
        HistoryEventType,
        TaskFailedEventDetails,
    )

    details = TaskFailedEventDetails(error=error, cause=cause)
    if task is not None:
        details["resource"], details["resourceType"] = internals.sfn_resource(task)
    return FailureEvent(
        env=env,
        error_name=error_name_of(error),
        event_type=HistoryEventType.TaskFailed,
        event_details=cast(EventDetails, {"taskFailedEventDetails": details}),
    )


def task_failure(env: Environment, error: str, cause: str, *, task: object = None) -> Exception:
    """A TaskFailed failure of the state, raised where the interpreter expects a failure event."""
    from sam_local_cloud.moto_seam.stepfunctions import FailureEventException

    return FailureEventException(failure_event=task_failed_event(env, error, cause, task=task))


def runtime_failure(env: Environment, cause: str) -> Exception:
    """A States.Runtime failure of the state, raised where the interpreter expects a failure event."""
    return task_failure(env, "States.Runtime", cause)


def _name_patterns_not_run_locally() -> None:
    """A ``.sync`` or ``.waitForTaskToken`` the interpreter cannot run for a service
    (``sqs:sendMessage.sync``, ``codebuild:startBuild.sync``, ``aws-sdk:s3:listBuckets.sync``) failed with
    a Python ``RuntimeError``'s text as its cause and no state named, and one on an integration without
    patterns (``dynamodb:putItem.waitForTaskToken``) ran as a plain call. Both now fail with States.Runtime
    naming the resource and the pattern, decorated like any other States.Runtime of the state."""
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskService, StateTaskServiceCallback

    def not_run(self: Any, env: Environment) -> Exception:
        return runtime_failure(
            env,
            f"The resource '{self.resource.resource_arn}' cannot run locally: the local cloud does not offer "
            f"the '{self.resource.condition}' integration pattern for it.",
        )

    def sync_resolver(self: Any, env: Environment, *args: object, **kwargs: object) -> NoReturn:
        raise not_run(self, env)

    @hooks.around(StateTaskService, "_eval_execution", concern=_CONCERN)
    def eval_execution(proceed: Any, self: Any, env: Environment) -> None:
        pattern = getattr(self.resource, "condition", None)
        supported = internals.supported_integration_patterns(self)
        if pattern is not None and pattern not in supported and not env.is_mocked_mode():
            raise not_run(self, env)
        proceed(self, env)

    hooks.replace(StateTaskServiceCallback, "_build_sync_resolver", sync_resolver, concern=_CONCERN)
    hooks.replace(StateTaskServiceCallback, "_build_sync2_resolver", sync_resolver, concern=_CONCERN)
    # Checked in _eval_execution instead, where the failure is the state's own (Retry, Catch, event ID).
    hooks.replace(
        StateTaskServiceCallback,
        "_assert_integration_pattern_is_supported",
        lambda self: None,
        concern=_CONCERN,
    )


def _tolerate_errors_without_request_id() -> None:
    """An error answer without a request ID (moto's for an operation it does not implement) made the
    aws-sdk integration fail with ``KeyError('RequestId')`` instead of the service's error."""
    from botocore.exceptions import ClientError

    from sam_local_cloud.moto_seam.stepfunctions import StateTaskServiceAwsSdk

    @hooks.around(StateTaskServiceAwsSdk, "_from_error", concern=_CONCERN)
    def from_error(proceed: Any, self: Any, env: Environment, ex: Exception) -> Any:
        if isinstance(ex, ClientError):
            response = cast(dict[str, Any], ex.response)
            metadata = response.setdefault("ResponseMetadata", {})
            metadata.setdefault("RequestId", "")
            metadata.setdefault("HTTPStatusCode", 500)
        return proceed(self, env, ex)
