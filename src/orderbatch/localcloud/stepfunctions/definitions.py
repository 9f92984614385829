"""CreateStateMachine and UpdateStateMachine refuse what AWS refuses: a bad definition shows before a deploy.

- moto parses a definition but does not check that state names are unique across the whole state
  machine, which AWS does: a name repeated in two Map processors is answered with InvalidDefinition
  ("DUPLICATE_STATE_NAME: Duplicate State name: <name> at <path>").
- moto's parser raises its InvalidDefinition without an error code, so boto3 saw an empty code; the
  local cloud answers with the code AWS uses.

moto has no ValidateStateMachineDefinition to patch.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from orderbatch.localcloud.moto_seam import hooks
from orderbatch.state_names import duplicate_state_names, invalid_definition_message


@functools.cache
def _invalid_definition_error() -> type[Exception]:
    """Step Functions' InvalidDefinition answer, a class made on first use (importing imports no moto)."""
    from orderbatch.localcloud.moto_seam.stepfunctions import AWSError

    class InvalidDefinitionError(AWSError):
        TYPE = "InvalidDefinition"
        STATUS = 400

    return InvalidDefinitionError


def invalid_definition(message: str) -> Exception:
    return _invalid_definition_error()(message)


def register_hooks() -> None:
    from orderbatch.localcloud.moto_seam.stepfunctions import InvalidDefinition as MotoInvalidDefinition
    from orderbatch.localcloud.moto_seam.stepfunctions import StepFunctionsParserBackend

    # Both CreateStateMachine and UpdateStateMachine call this static method.
    @hooks.around(StepFunctionsParserBackend, "_validate_definition", concern="definitions")
    def validate_definition(proceed: Callable[..., None], definition: str) -> None:
        try:
            proceed(definition=definition)
        except MotoInvalidDefinition as refused:
            raise invalid_definition(str(refused.message)) from refused
        try:
            parsed: Any = json.loads(definition)
        except ValueError:
            return  # moto's own parser accepted text Python's json does not read: moto's answer stands
        if isinstance(parsed, dict):
            duplicates = duplicate_state_names(parsed)
            if duplicates:
                raise invalid_definition(invalid_definition_message(duplicates))
