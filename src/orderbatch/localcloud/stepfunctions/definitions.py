"""CreateStateMachine and UpdateStateMachine refuse what AWS refuses: a bad definition shows before a deploy.

- moto parses a definition but does not check that state names are unique across the whole state
  machine, which AWS does: a name repeated in two Map processors is answered with InvalidDefinition
  ("DUPLICATE_STATE_NAME: Duplicate State name: <name> at <path>").
- moto's parser raises its InvalidDefinition without an error code, so boto3 saw an empty code; the
  local cloud answers with the code AWS uses.

moto has no ValidateStateMachineDefinition to patch.
"""

from __future__ import annotations

import json
from typing import Any

from moto.core.exceptions import AWSError

from orderbatch.state_names import duplicate_state_names, invalid_definition_message


class InvalidDefinitionError(AWSError):
    """Step Functions' InvalidDefinition answer."""

    TYPE = "InvalidDefinition"
    STATUS = 400


def patch() -> None:
    from moto.stepfunctions.parser.api import InvalidDefinition as MotoInvalidDefinition
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend._validate_definition

    def validate_definition(definition: str) -> None:
        try:
            original(definition=definition)
        except MotoInvalidDefinition as refused:
            raise InvalidDefinitionError(str(refused.message)) from refused
        try:
            parsed: Any = json.loads(definition)
        except ValueError:
            return  # moto's own parser accepted text Python's json does not read: moto's answer stands
        if isinstance(parsed, dict):
            duplicates = duplicate_state_names(parsed)
            if duplicates:
                raise InvalidDefinitionError(invalid_definition_message(duplicates))

    # Both CreateStateMachine and UpdateStateMachine call this static method.
    StepFunctionsParserBackend._validate_definition = staticmethod(validate_definition)  # type: ignore[method-assign]
