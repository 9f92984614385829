"""SendTaskFailure as AWS takes it: with its ``cause``.

moto's handler reads only ``taskToken`` and ``error`` and drops ``cause``, so a ``.waitForTaskToken`` Task
failed by its worker with an error and a cause recorded the error alone (TaskFailed, ExecutionFailed,
DescribeExecution's ``cause`` absent) and a Catch saw ``"Cause": ""``.
"""

from __future__ import annotations

from typing import Any


def register_hooks() -> None:
    from orderbatch.localcloud.moto_seam import hooks
    from orderbatch.localcloud.moto_seam.stepfunctions import StepFunctionResponse

    hooks.replace(StepFunctionResponse, "send_task_failure", _send_task_failure, concern="task_tokens")


def _send_task_failure(self: Any) -> Any:
    from orderbatch.localcloud.moto_seam.stepfunctions import EmptyResult

    self.stepfunction_backend.send_task_failure(
        self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
    )
    return EmptyResult()
