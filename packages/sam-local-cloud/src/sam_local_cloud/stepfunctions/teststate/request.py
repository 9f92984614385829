"""A TestState request: its members read and checked as AWS checks them before it parses the definition."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from sam_local_cloud.json_types import JsonObject, JsonValue

_CONTEXT_SECTIONS: Final[dict[str, dict[str, type]]] = {
    "Execution": {"Id": str, "Input": object, "Name": str, "RoleArn": str, "StartTime": str},
    "State": {"EnteredTime": str, "Name": str, "RetryCount": int},
    "StateMachine": {"Id": str, "Name": str},
    "Task": {"Token": str},
}


class RequestRefusedError(Exception):
    """A request TestState refuses: the error code and message AWS answers with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def validation_error(message: str) -> RequestRefusedError:
    return RequestRefusedError("ValidationException", message)


def invalid_definition(message: str) -> RequestRefusedError:
    return RequestRefusedError("InvalidDefinition", message)


@dataclass(frozen=True)
class Mock:
    """``mock``: a result (parsed JSON) or an error, what the tested state would have got from its calls."""

    result: JsonValue = None
    has_result: bool = False
    error: str | None = None
    cause: str | None = None
    validation_mode: str = "STRICT"

    @property
    def is_error(self) -> bool:
        return not self.has_result


@dataclass(frozen=True)
class Request:
    """The members of a TestState request, parsed; ``from_parameters`` refuses what AWS refuses first."""

    definition: str
    state_name: str | None
    input_value: JsonValue
    variables: JsonValue
    inspection_level: str
    role_arn: str | None
    reveal_secrets: bool
    mock: Mock | None
    context: JsonObject | None
    retrier_retry_count: int = 0
    map_iteration_failure_count: int | None = None
    error_caused_by_state: str | None = None
    map_item_reader_data: JsonValue = None
    has_configuration: bool = False

    @classmethod
    def from_parameters(cls, parameters: dict[str, Any]) -> Request:
        configuration = parameters.get("stateConfiguration") or {}
        mock_input = parameters.get("mock")
        if mock_input is not None and {"result", "errorOutput"} <= mock_input.keys():
            raise validation_error(
                "A test mock should have only one of the following fields: [result, errorOutput]."
            )
        if mock_input is not None and parameters.get("revealSecrets"):
            raise validation_error("TestState does not support RevealSecrets when a mock is specified.")
        reader_data = configuration.get("mapItemReaderData")
        return cls(
            definition=parameters["definition"],
            state_name=parameters.get("stateName"),
            input_value=_json_field(parameters.get("input"), "input", default={}),
            variables=_json_field(parameters.get("variables"), "variables", default=None),
            inspection_level=parameters.get("inspectionLevel") or "INFO",
            role_arn=parameters.get("roleArn"),
            reveal_secrets=bool(parameters.get("revealSecrets")),
            mock=_mock_of(mock_input),
            context=_context_of(parameters.get("context")),
            retrier_retry_count=int(configuration.get("retrierRetryCount") or 0),
            map_iteration_failure_count=configuration.get("mapIterationFailureCount"),
            error_caused_by_state=configuration.get("errorCausedByState"),
            map_item_reader_data=_json_field(reader_data, "mapItemReaderData", default=None),
            has_configuration=bool(configuration),
        )


def _json_field(text: str | None, name: str, default: JsonValue) -> JsonValue:
    if text is None:
        return default
    try:
        document: JsonValue = json.loads(text)
    except json.JSONDecodeError as error:
        code = "InvalidExecutionInput" if name == "input" else "ValidationException"
        raise RequestRefusedError(code, f"Invalid {name}: {error}") from None
    return document


def _mock_of(mock_input: dict[str, Any] | None) -> Mock | None:
    if mock_input is None:
        return None
    mode = mock_input.get("fieldValidationMode") or "STRICT"
    if "result" in mock_input:
        try:
            result = json.loads(mock_input["result"])
        except json.JSONDecodeError:
            raise validation_error("Mocked result must be valid JSON") from None
        return Mock(result=result, has_result=True, validation_mode=mode)
    error_output = mock_input.get("errorOutput") or {}
    return Mock(error=error_output.get("error"), cause=error_output.get("cause"), validation_mode=mode)


def _context_of(text: str | None) -> JsonObject | None:
    """The ``context`` object, checked as AWS checks it (sections and fields it knows, their types)."""
    if text is None:
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise validation_error(f"Invalid Context object provided: {error}") from None
    if not isinstance(document, dict):
        raise validation_error("Invalid Context object provided: the Context object must be a JSON object")
    for section, fields in document.items():
        if section == "Map":
            raise validation_error(
                "Invalid Context object provided: 'Map' field is not supported when mocking a Context object"
            )
        known = _CONTEXT_SECTIONS.get(section)
        if known is None:
            raise validation_error(f"Invalid Context object provided: Field '{section}' is not allowed")
        if not isinstance(fields, dict):
            raise validation_error(f"Invalid Context object provided: {section} must be a object")
        for name, value in fields.items():
            expected = known.get(name)
            if expected is None:
                raise validation_error(f"Invalid Context object provided: Field '{name}' is not allowed")
            if not _is_type(value, expected):
                kind = "string" if expected is str else "integer"
                raise validation_error(f"Invalid Context object provided: {section}.{name} must be a {kind}")
    return document


def _is_type(value: object, expected: type) -> bool:
    if expected is object:
        return True
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)
