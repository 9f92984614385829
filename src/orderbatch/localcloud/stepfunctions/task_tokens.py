"""SendTaskFailure as AWS takes it: with its ``cause``.

moto's handler reads only ``taskToken`` and ``error`` and drops ``cause``, so a ``.waitForTaskToken`` Task
failed by its worker with an error and a cause recorded the error alone (TaskFailed, ExecutionFailed,
DescribeExecution's ``cause`` absent) and a Catch saw ``"Cause": ""``.
"""

from __future__ import annotations

from typing import Any


def patch() -> None:
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]
