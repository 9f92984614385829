"""CreateStateMachine and UpdateStateMachine refuse what AWS refuses: a bad definition shows before a deploy.

- moto parses a definition but does not check that state names are unique across the whole state
  machine, which AWS does: a name repeated in two Map processors is answered with InvalidDefinition
  ("DUPLICATE_STATE_NAME: Duplicate State name: <name> at <path>").
- moto's parser raises its InvalidDefinition without an error code, so boto3 saw an empty code; the
  local cloud answers with the code AWS uses.
- A ``States`` entry that is not an object (``"QueryLanguage": "JSONata"`` put inside ``States``) failed
  in moto's grammar with "mismatched input ... expecting '{'"; it is refused naming the entry, as AWS's
  schema check does.
- What moto's grammar does not check (unknown state types, a missing ``Next``, transitions to no state,
  unreachable states, a workflow without a terminal state, paths that are no JSONPath, JSONata that does
  not parse) is checked by ``definition_checks`` before moto parses, and answered in AWS's words.
- A definition longer than the API model's 1,048,576 characters is a ValidationException, as AWS's request
  validation answers it, before any of the above.

moto has no ValidateStateMachineDefinition to patch.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.state_names import (
    duplicate_state_names,
    invalid_definition_message,
    states_that_are_not_objects,
)
from sam_local_cloud.stepfunctions import definition_checks


@functools.cache
def _invalid_definition_error() -> type[Exception]:
    """Step Functions' InvalidDefinition answer, a class made on first use (importing imports no moto)."""
    from sam_local_cloud.moto_seam.stepfunctions import AWSError

    class InvalidDefinitionError(AWSError):
        TYPE = "InvalidDefinition"
        STATUS = 400

    return InvalidDefinitionError


def invalid_definition(message: str) -> Exception:
    return _invalid_definition_error()(message)


# The ``definition`` member's maximum length in Step Functions' API model (botocore's service-2.json).
MAX_DEFINITION_LENGTH = 1_048_576


@functools.cache
def _validation_error() -> type[Exception]:
    from sam_local_cloud.moto_seam.stepfunctions import AWSError

    class ValidationError(AWSError):
        TYPE = "ValidationException"
        STATUS = 400

    return ValidationError


def definition_too_long(definition: str) -> Exception | None:
    """AWS's request validation answer for a definition over the model's length, or None."""
    if len(definition) <= MAX_DEFINITION_LENGTH:
        return None
    return _validation_error()(
        "1 validation error detected: Value at 'definition' failed to satisfy constraint: "
        f"Member must have length less than or equal to {MAX_DEFINITION_LENGTH}"
    )


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import InvalidDefinition as MotoInvalidDefinition
    from sam_local_cloud.moto_seam.stepfunctions import StepFunctionsParserBackend

    # Both CreateStateMachine and UpdateStateMachine call this static method.
    @hooks.around(StepFunctionsParserBackend, "_validate_definition", concern="definitions")
    def validate_definition(proceed: Callable[..., None], definition: str) -> None:
        too_long = definition_too_long(definition)
        if too_long is not None:
            raise too_long
        try:
            parsed: Any = json.loads(definition)
        except ValueError:
            parsed = None  # moto's own parser may read text Python's json does not: its answer stands
        # Before moto's grammar, whose error for a state that is not an object names a token, not the state.
        not_objects = states_that_are_not_objects(parsed) if isinstance(parsed, dict) else []
        if not_objects:
            problems = ", ".join(
                f"SCHEMA_VALIDATION_FAILED: The value for the field '{name}' must be an OBJECT at {path}"
                for name, path in not_objects
            )
            raise invalid_definition(f"Invalid State Machine Definition: '{problems}'")
        # Before moto's grammar too: its error for an unknown Type or a path that is no JSONPath names a
        # token, and it accepts the rest.
        found = definition_checks.definition_problems(parsed) if isinstance(parsed, dict) else []
        if found:
            raise invalid_definition(definition_checks.invalid_definition_message(found))
        try:
            proceed(definition=definition)
        except MotoInvalidDefinition as refused:
            raise invalid_definition(str(refused.message)) from refused
        if isinstance(parsed, dict):
            duplicates = duplicate_state_names(parsed)
            if duplicates:
                raise invalid_definition(invalid_definition_message(duplicates))
