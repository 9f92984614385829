"""What TestState refuses once the state is parsed: states it cannot test so, and mocks that do not fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import UnknownServiceError

if TYPE_CHECKING:
    from botocore.model import ServiceModel, Shape

from sam_local_cloud import sdk_models
from sam_local_cloud.moto_seam import interpreter_internals as internals

# The state classes the interpreter also imports: a list of names from the seam, not logic written twice.
from sam_local_cloud.moto_seam.stepfunctions import (
    StateFail,
    StateMap,
    StateParallel,
    StatePass,
    StateSucceed,
    StateTask,
    StateTaskService,
    StateTaskServiceApiGateway,
)
from sam_local_cloud.stepfunctions.teststate.request import (
    Mock,
    Request,
    RequestRefusedError,
    invalid_definition,
    validation_error,
)


def validate(request: Request, state: object) -> None:
    """What AWS refuses before running anything, in the order its answers show."""
    mock = request.mock
    if request.map_iteration_failure_count is not None:
        if mock is None:
            raise validation_error(
                "TestState does not support MapIterationFailureCount when a mock is not specified."
            )
        if isinstance(mock.result, list) and request.map_iteration_failure_count > len(mock.result):
            raise validation_error(
                "Map iteration failure count must be less than or equal to the number of Map iterations"
            )
    if mock is None and isinstance(state, StateMap | StateParallel):
        raise invalid_definition(
            "TestState API does not support Map or Parallel states. Supported state types include: "
            "[Task, Wait, Pass, Succeed, Fail, Choice]"
        )
    if mock is not None and isinstance(state, StatePass | StateFail | StateSucceed):
        raise validation_error(
            f"State type '{state.state_type.name}' is not supported when a mock is specified"
        )
    if mock is not None and mock.has_result:
        _validate_mock_result(mock, state)
    if request.context is not None and "Task" in request.context and not waits_for_a_token(state):
        raise validation_error(
            "Invalid Context object provided: Context object contains 'Task' when state is not a Task state "
            "with a '.sync' or '.waitForTaskToken' service integration pattern"
        )
    if request.role_arn is None and mock is None and isinstance(state, StateTask):
        raise validation_error("RoleArn must be specified when testing a Task state")
    if mock is None and waits_for_a_token(state):
        # AWS runs these patterns only with a mock (TestState's API reference); the wording is ours.
        raise validation_error(
            "TestState supports the .sync and .waitForTaskToken integration patterns only when a mock is "
            "specified"
        )


def waits_for_a_token(state: object) -> bool:
    resource = getattr(state, "resource", None)
    return getattr(resource, "condition", None) is not None


def _validate_mock_result(mock: Mock, state: object) -> None:
    result = mock.result
    if isinstance(state, StateMap):
        if state.result_writer is not None and not isinstance(result, dict):
            raise validation_error("Mocked result must be a JSON object.")
        if state.result_writer is None and not isinstance(result, list):
            raise validation_error("Mocked result must be an array.")
    elif isinstance(state, StateParallel):
        if not isinstance(result, list):
            raise validation_error("Mocked result must be an array.")
        if len(result) != len(state.branches.programs):
            raise validation_error(
                "Mocked result must contain the same number of items as number of Parallel branches."
            )
    elif isinstance(state, StateTaskService) and mock.validation_mode != "NONE":
        output_shape = _output_shape(state)
        if output_shape is not None:
            _check_shape(result, output_shape, None, strict=mock.validation_mode == "STRICT")


def _output_shape(state: object) -> Shape | None:
    """The botocore output shape of the API a service Task calls; None where there is no API model."""
    if isinstance(state, StateTaskServiceApiGateway):
        return None
    try:
        model = sdk_models.service_model(internals.boto_service_name(state))
        operation = model.operation_model(_api_operation_name(model, internals.boto_service_action(state)))
    except (UnknownServiceError, LookupError, ValueError):
        return None
    return operation.output_shape


def _api_operation_name(model: ServiceModel, action: str) -> str:
    """botocore's operation name for Step Functions' lowerCamel or snake_case action name."""
    wanted = action.replace("_", "").lower()
    for name in model.operation_names:
        if name.lower() == wanted:
            return str(name)
    raise LookupError(action)


def _shape_error(message: str) -> RequestRefusedError:
    return validation_error(f"Mock result schema validation error: {message}")


def _check_shape(value: Any, shape: Any, name: str | None, *, strict: bool) -> None:  # noqa: C901 - one branch per botocore type
    """A mocked result against the API's output shape, as TestState's STRICT and PRESENT modes check it."""
    kind = shape.type_name
    if kind == "document":
        return
    if kind == "structure":
        if not isinstance(value, dict):
            raise _shape_error(f"Field '{name}' must be an object")
        members = {internals.to_sfn_cased(key): member for key, member in shape.members.items()}
        if strict:
            for required in shape.required_members:
                if internals.to_sfn_cased(required) not in value:
                    raise _shape_error(f"Required field '{internals.to_sfn_cased(required)}' is missing")
        for key, item in value.items():
            if key in members:  # fields the API does not model pass: forward compatibility
                _check_shape(item, members[key], key, strict=strict)
        return
    if kind == "list":
        if not isinstance(value, list):
            raise _shape_error(f"Field '{name}' must be an array")
        for item in value:
            _check_shape(item, shape.member, name, strict=strict)
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise _shape_error(f"Field '{name}' must be an object")
        for item in value.values():
            _check_shape(item, shape.value, name, strict=strict)
        return
    _check_scalar(value, shape, name)


def _check_scalar(value: Any, shape: Any, name: str | None) -> None:
    kind = shape.type_name
    metadata = shape.metadata
    if kind in ("string", "timestamp", "blob"):
        if not isinstance(value, str):
            raise _shape_error(f"Field '{name}' must be a string")
        if kind == "string" and shape.enum and value not in shape.enum:
            raise _shape_error(f"Field '{name}' is not an expected value")
        if "min" in metadata and len(value) < metadata["min"]:
            raise _shape_error(f"Field '{name}' is smaller than the minimum length")
        return
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _shape_error(f"Field '{name}' must be a boolean")
        return
    whole = kind in ("integer", "long")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or (whole and not isinstance(value, int)):
        raise _shape_error(f"Field '{name}' must be a number")
    if "min" in metadata and value < metadata["min"]:
        raise _shape_error(f"Field '{name}' is less than the minimum value")
    if "max" in metadata and value > metadata["max"]:
        raise _shape_error(f"Field '{name}' exceeds the maximum value")
