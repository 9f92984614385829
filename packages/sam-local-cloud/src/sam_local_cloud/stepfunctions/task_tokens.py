"""SendTaskFailure and SendTaskHeartbeat as AWS takes them.

- SendTaskFailure with its ``cause``: moto's handler reads only ``taskToken`` and ``error`` and drops
  ``cause``, so a ``.waitForTaskToken`` Task failed by its worker with an error and a cause recorded the
  error alone (TaskFailed, ExecutionFailed, DescribeExecution's ``cause`` absent) and a Catch saw
  ``"Cause": ""``.
- SendTaskHeartbeat for any token a running Task waits on: moto accepts a heartbeat only once the
  execution's thread has armed the state's heartbeat timer, which it does after the worker took the task.
  A worker that heartbeats at once (GetActivityTask, then SendTaskHeartbeat) could get there first and
  was answered ``InvalidToken``, and a Task without ``HeartbeatSeconds`` always was. AWS accepts both.
  A heartbeat before the timer is armed has nothing to reset: the timer starts when it is armed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import StepFunctionsRequest

if TYPE_CHECKING:
    from collections.abc import Callable


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import CallbackEndpoint, StepFunctionResponse

    hooks.replace(StepFunctionResponse, "send_task_failure", _send_task_failure, concern="task_tokens")

    @hooks.around(CallbackEndpoint, "notify_heartbeat", concern="task_tokens")
    def notify_heartbeat(proceed: Callable[[object], object], self: object) -> bool:
        proceed(self)
        return True  # the token is known (its endpoint is in a running execution's pool)


def _send_task_failure(self: StepFunctionsRequest) -> object:
    from sam_local_cloud.moto_seam.stepfunctions import EmptyResult

    self.stepfunction_backend.send_task_failure(
        internals.required_text(self, "taskToken"),
        error=internals.request_text(self, "error"),
        cause=internals.request_text(self, "cause"),
    )
    return EmptyResult()
