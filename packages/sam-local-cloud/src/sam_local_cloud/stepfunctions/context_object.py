"""The context object (``$$``, ``$states.context``) with AWS's timestamps.

AWS writes ``$$.Execution.StartTime`` and ``$$.State.EnteredTime`` as ISO-8601 text in UTC with
milliseconds (``2019-03-26T20:14:13.192Z``). moto keeps the start time as a ``datetime`` object, which
JSON cannot carry (DescribeExecution answered HTTP 500 for an output holding ``$$``, and JSONata refused
``$states.context``), and writes the entered time with microseconds and ``+00:00``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Environment, ExecutionWorker


def millisecond_timestamp(moment: datetime.datetime) -> str:
    """``moment``'s own fields as ``2026-12-02T13:04:05.999Z``, whatever its zone says.

    isoformat, not strftime: this stamps every history event and every state's context object, several
    times per Task.
    """
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def aws_timestamp(moment: datetime.datetime) -> str:
    return millisecond_timestamp(moment.astimezone(datetime.UTC))


def _aws_state_data(**fields: object) -> dict[str, object]:
    entered = fields.get("EnteredTime")
    if isinstance(entered, str):
        fields["EnteredTime"] = aws_timestamp(datetime.datetime.fromisoformat(entered))
    return fields


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionWorker, state

    @hooks.around(ExecutionWorker, "_get_evaluation_environment", concern="context_object")
    def evaluation_environment(
        proceed: Callable[[ExecutionWorker], Environment], self: ExecutionWorker
    ) -> Environment:
        env = proceed(self)
        execution = env.states.context_object.context_object_data["Execution"]
        # moto's ExecutionData declares a string; its worker puts the datetime there.
        if isinstance(start := execution.get("StartTime"), datetime.datetime):
            execution["StartTime"] = aws_timestamp(start)
        return env

    # State entry builds the State part of the context object through this name, looked up at call time.
    hooks.replace(state, "StateData", _aws_state_data, concern="context_object")
