"""Service integration Tasks (``aws-sdk:*``, ``states:startExecution``, ``dynamodb:*`` ...) as AWS runs them.

moto's interpreter passes a Task's ``Parameters`` to boto3 as written and hands back boto3's answer as
is: botocore then fails on Step Functions' PascalCase names (``StateMachineArn`` where its model says
``stateMachineArn``: "KeyError 'StateMachineArn'"), on a JSON value where the API takes a blob
(``s3:putObject`` with an object ``Body``), and an S3 object's streaming ``Body`` cannot be carried in
the state's output. LocalStack, where the interpreter comes from, maps the parameters onto the
operation's input shape and the answer back into Step Functions' casing, reading streaming bodies as
text; moto dropped that step. This puts it back, and names aws-sdk errors by the service's SDK name as
AWS does (``S3.NoSuchKeyException``, not ``s3.NoSuchKeyException``).
"""

from __future__ import annotations

import datetime
import functools
from typing import TYPE_CHECKING, Any

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.stepfunctions.context_object import aws_timestamp

if TYPE_CHECKING:
    from collections.abc import Callable

    from botocore.model import OperationModel

    from sam_local_cloud.moto_seam.stepfunctions import Environment

_CONCERN = "service_tasks"
# How AWS names a service in an aws-sdk integration's errors: the SDK's service class name. The default
# is the service name with its first letter upper-cased (sqs -> Sqs, lambda -> Lambda, ec2 -> Ec2).
_SDK_SERVICE_NAMES = {
    "dynamodb": "DynamoDb",
    "sfn": "Sfn",
    "s3": "S3",
    "secretsmanager": "SecretsManager",
    "eventbridge": "EventBridge",
    "cloudwatch": "CloudWatch",
    "cloudwatchlogs": "CloudWatchLogs",
    "apigateway": "ApiGateway",
}


def sdk_service_name(service: str) -> str:
    lowered = service.lower()
    return _SDK_SERVICE_NAMES.get(lowered, lowered[:1].upper() + lowered[1:])


@functools.cache
def _operation_model(service: str, operation_snake_case: str) -> OperationModel | None:
    from botocore import xform_name
    from botocore.exceptions import UnknownServiceError

    from sam_local_cloud import sdk_models

    try:
        model = sdk_models.service_model(service)
    except UnknownServiceError:
        return None  # the Task fails when its client is built, naming the service
    for operation in model.operation_names:
        if xform_name(operation) == operation_snake_case:
            return model.operation_model(operation)
    return None


def _task_operation(
    task: object, boto_service_name: str | None, service_action_name: str | None
) -> OperationModel | None:
    """botocore's model of the operation a service Task state calls (None when it has none)."""
    return _operation_model(
        internals.boto_service_name(task, boto_service_name),
        internals.boto_service_action(task, service_action_name),
    )


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        StateTaskService,
        StateTaskServiceAwsSdk,
        StateTaskServiceLambda,
        state_task_service,
    )

    # A pure function of its text that moto runs through a regular expression for every member of the
    # service's input shape on every Task (Invoke's ten for each Lambda Task): remembered per name.
    hooks.replace(
        state_task_service,
        "camel_to_snake_case",
        functools.lru_cache(maxsize=4096)(state_task_service.camel_to_snake_case),
        concern=_CONCERN,
    )

    def normalise_parameters(
        self: object,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        operation = _task_operation(self, boto_service_name, service_action_name)
        if operation is not None and operation.input_shape is not None:
            internals.to_boto_request(self, parameters, operation.input_shape)

    def normalise_response(
        self: object,
        response: object,
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        operation = _task_operation(self, boto_service_name, service_action_name)
        if operation is not None and operation.output_shape is not None and isinstance(response, dict):
            order = list(response)
            internals.from_boto_response(self, response, operation.output_shape)
            _keep_key_order(response, order, internals.to_sfn_cased)
        if isinstance(response, dict):
            response.update(_timestamps_as_text(response))

    @hooks.around(StateTaskService, "_eval_parameters", concern=_CONCERN)
    def eval_parameters(proceed: Any, self: Any, env: Environment) -> dict[str, Any]:
        parameters: dict[str, Any] = proceed(self, env)
        operation = _task_operation(self, None, None)
        if operation is not None and operation.input_shape is not None:
            problems = list(dict.fromkeys(_shape_problems(parameters, operation.input_shape, field_name="")))
            if problems:
                raise _parameters_unusable(env, parameters, problems)
        return parameters

    hooks.replace(StateTaskService, "_normalise_parameters", normalise_parameters, concern=_CONCERN)
    hooks.replace(StateTaskService, "_normalise_response", normalise_response, concern=_CONCERN)
    # lambda:invoke results are built in AWS's shape already (see lambda_tasks).
    hooks.replace(
        StateTaskServiceLambda,
        "_normalise_response",
        lambda self, response, *args, **kwargs: None,
        concern=_CONCERN,
    )
    hooks.replace(
        StateTaskServiceAwsSdk,
        "_normalise_service_error_name",
        staticmethod(sdk_service_name),
        concern=_CONCERN,
    )
    _serialise_message_objects_compactly()


def _serialise_message_objects_compactly() -> None:
    """An object given for a text parameter (``sqs:sendMessage``'s ``MessageBody``, ``sns:publish``'s
    ``Message``, an ``events:putEvents`` entry's ``Detail``) reaches the service as compact JSON on AWS
    (``{"hello":"world"}``, whose MD5 the answer's ``MD5OfMessageBody`` carries), as do the Task's
    parameters and output in its history events; moto writes ``{"hello": "world"}``."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        state_task_service,
        state_task_service_events,
        state_task_service_sns,
        state_task_service_sqs,
        to_json_str,
    )

    def compact_json(obj: object, separators: tuple[str, str] | None = None) -> str:
        return to_json_str(obj, separators=separators or (",", ":"))

    # Each module calls this name only to turn what it sends or records into text.
    for module in (
        state_task_service,
        state_task_service_events,
        state_task_service_sns,
        state_task_service_sqs,
    ):
        hooks.replace(module, "to_json_str", compact_json, concern=_CONCERN)


# How Step Functions names the JSON type a field must have.
_JSON_TYPE_NAMES = {"structure": "an OBJECT", "map": "an OBJECT", "list": "an ARRAY"}


def _shape_problems(value: Any, shape: Any, *, field_name: str) -> list[str]:
    """Where the Task's parameters are not the JSON types of the API's input: an object or array given
    something else (a string-encoded map, a bare string for a DynamoDB attribute value). Step Functions
    cannot build the request from them; a null is left for the service to refuse, as AWS does. Scalars are
    not checked here: the normalisation turns an object given for a string into its JSON text, as Step
    Functions does for ``MessageBody``, ``Message`` and ``Payload``."""
    if value is None:
        return []
    expected = _JSON_TYPE_NAMES.get(shape.type_name)
    if expected is None:
        return []
    holds = isinstance(value, list) if shape.type_name == "list" else isinstance(value, dict)
    if not holds:
        return [f"The value for the field '{field_name}' must be {expected}"]
    problems: list[str] = []
    if shape.type_name == "list":
        for item in value:
            problems.extend(_shape_problems(item, shape.member, field_name=field_name))
    elif shape.type_name == "map":
        for key, item in value.items():
            problems.extend(_shape_problems(item, shape.value, field_name=str(key)))
    else:
        members = {name.lower(): (name, member) for name, member in shape.members.items()}
        for key, item in value.items():
            found = members.get(str(key).lower())
            if found is not None:
                problems.extend(_shape_problems(item, found[1], field_name=str(key)))
    return problems


def _parameters_unusable(env: Environment, parameters: dict[str, Any], problems: list[str]) -> Exception:
    """The States.Runtime failure of a Task whose parameters cannot make the API request."""
    from sam_local_cloud.moto_seam.stepfunctions import to_json_str
    from sam_local_cloud.stepfunctions.service_errors import runtime_failure

    return runtime_failure(
        env,
        f"The Parameters '{to_json_str(parameters, separators=(',', ':'))}' could not be used to start "
        f"the Task: [{', '.join(problems)}]",
    )


def _timestamps_as_text(value: Any) -> Any:
    """boto3 parses timestamps into datetimes, which a state's JSON data cannot hold; Step Functions gives
    them as ISO-8601 text."""
    if isinstance(value, datetime.datetime):
        return aws_timestamp(value)
    if isinstance(value, dict):
        return {key: _timestamps_as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_timestamps_as_text(item) for item in value]
    return value


def _keep_key_order(response: dict[str, Any], order: list[str], cased: Callable[[str], str]) -> None:
    """The answer's keys in the order the API gave them, renamed where the normalisation renamed them."""
    renamed = [cased(key) if cased(key) in response else key for key in order]
    items = [(key, response[key]) for key in renamed if key in response]
    items.extend((key, value) for key, value in response.items() if key not in dict(items))
    response.clear()
    response.update(items)
