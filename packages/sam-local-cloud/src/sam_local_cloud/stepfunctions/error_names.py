"""Error names are strings, as AWS reads them; only the errors the interpreter raises itself are decorated.

- moto's ``CustomErrorName`` refuses any name that starts with ``States.`` (a ValueError). AWS compares the
  entries of ``ErrorEquals`` with the name a state reports, as strings; only the predefined ``States.*``
  names mean something of their own (the ``States.ALL`` and ``States.TaskFailed`` wildcards), and another
  ``States.`` name (``States.MyThing``, ``States.Http.Socket``) is accepted and matched by name. So
  CreateStateMachine refused definitions AWS accepts, and a state reporting a ``States.`` name (a Fail state
  with Error ``States.Runtime``, a Lambda function's ``errorType``, a Parallel branch or Map iteration that
  failed with one) ended its execution with moto's ValueError as the cause. Every name is accepted here.
- moto prefixes the cause of every ``States.Runtime`` and ``States.QueryEvaluationError`` failure with
  "An error occurred while executing the state ...". AWS does so for the errors it raises itself; the cause
  a state reports (a Fail state's ``Cause``, a task's error) and the cause a failed Map iteration hands its
  Map, already final, stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sam_local_cloud.moto_seam import hooks

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import (
        CustomErrorName,
        ExecutionFailedEventDetails,
        FailureEventException,
    )

_CONCERN = "error_names"


def register_hooks() -> None:
    _accept_every_error_name()
    _decorate_only_the_interpreters_own_causes()


def _accept_every_error_name() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import CustomErrorName, ErrorName

    @hooks.around(CustomErrorName, "__init__", concern=_CONCERN)
    def init(
        _proceed: Callable[[CustomErrorName, str | None], None], self: CustomErrorName, error_name: str | None
    ) -> None:
        ErrorName.__init__(self, error_name=error_name)


def _decorate_only_the_interpreters_own_causes() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        FailureEventException,
        HistoryEventType,
        StatesErrorName,
    )

    @hooks.around(FailureEventException, "get_execution_failed_event_details", concern=_CONCERN)
    def execution_failed_event_details(
        proceed: Callable[[FailureEventException], ExecutionFailedEventDetails | None],
        self: FailureEventException,
    ) -> ExecutionFailedEventDetails | None:
        details = proceed(self)
        event = self.failure_event
        raised_by_interpreter = isinstance(event.error_name, StatesErrorName)
        if not details or (raised_by_interpreter and event.event_type != HistoryEventType.MapIterationFailed):
            return details
        reported = next(iter((event.event_details or {}).values()), None)
        cause = reported.get("cause") if isinstance(reported, dict) else None
        if isinstance(cause, str):
            details["cause"] = cause
        return details
