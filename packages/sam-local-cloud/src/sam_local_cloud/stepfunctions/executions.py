"""StartExecution and DescribeExecution as AWS answers them where moto differs.

- An execution started without a ``name`` gets a UUID as its name on AWS; moto names it ``None``, so the
  second unnamed execution of a state machine fails with ExecutionAlreadyExists.
- DescribeExecution's ``output`` is the output's JSON text, compact as in the history: moto returns a
  string output bare (``done`` instead of ``"done"``) and other values with ``", "`` separators.
- A timed-out execution has a ``stopDate`` like any other closed one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Execution

_CLOSED_WITHOUT_STOP_DATE_IN_MOTO = "TIMED_OUT"


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import StepFunctionResponse, StepFunctionsParserBackend
    from sam_local_cloud.stepfunctions.histories import compacted_texts

    @hooks.around(StepFunctionsParserBackend, "start_execution", concern="executions")
    def start_execution(
        proceed: Callable[..., Execution],
        self: StepFunctionsParserBackend,
        state_machine_arn: str,
        name: str | None = None,
        *args: object,
        **kwargs: object,
    ) -> Execution:
        return proceed(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    @hooks.around(StepFunctionResponse, "describe_execution", concern="executions")
    def describe_execution(proceed: Any, self: Any) -> Any:
        answer = proceed(self)
        response: dict[str, Any] = answer.result
        execution = self.stepfunction_backend.describe_execution(response["executionArn"])
        # Read before the record: an execution compacted meanwhile has its texts there by then.
        output_held = execution.output
        texts = compacted_texts(execution)
        if texts is not None:
            # Kept compressed since the execution ended (histories.compact_details).
            response["input"], output = texts
            if output is not None and response.get("status") == "SUCCEEDED":
                response["output"] = output
        elif "output" in response:
            response["output"] = json.dumps(output_held, separators=(",", ":"))
        if execution.status == _CLOSED_WITHOUT_STOP_DATE_IN_MOTO and execution.stop_date is not None:
            response["stopDate"] = execution.stop_date
        return answer
