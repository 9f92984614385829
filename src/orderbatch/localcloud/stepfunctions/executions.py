"""StartExecution as AWS answers it where moto differs.

An execution started without a ``name`` gets a UUID as its name on AWS; moto names it ``None``, so the
second unnamed execution of a state machine fails with ExecutionAlreadyExists.
"""

from __future__ import annotations

import uuid
from typing import Any


def patch() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution

    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution  # type: ignore[method-assign]
