"""The Wait state's errors as AWS records them.

- AWS keeps a wait's delay in seconds as a signed 32-bit number: a Wait that would last 2^31 seconds or
  more (a timestamp about 24,856 days ahead) fails at once with States.Runtime "Wait state delay is too
  long."; moto started a 68-year wait.
- A JSONata ``Timestamp`` that is not ISO-8601 is a States.QueryEvaluationError (with an EvaluationFailed
  event) on AWS, not moto's States.Runtime with the JSONPath wording.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sam_local_cloud.moto_seam import hooks

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import (
        Environment,
        ExecutionFailedEventDetails,
        FailureEvent,
        Timestamp,
        WaitFunction,
    )

LONGEST_DELAY_SECONDS = 2**31 - 1
DELAY_TOO_LONG = "Wait state delay is too long."


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ExecutionFailedEventDetails,
        FailureEvent,
        FailureEventException,
        HistoryEventType,
        StatesErrorName,
        StatesErrorNameType,
        WaitFunction,
    )

    @hooks.around(WaitFunction, "_wait_interval", concern="wait_state")
    def wait_within_aws_limit(
        proceed: Callable[..., None], self: WaitFunction, env: Environment, wait_seconds: int
    ) -> None:
        if wait_seconds > LONGEST_DELAY_SECONDS:
            runtime_error = StatesErrorNameType.StatesRuntime
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=runtime_error),
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=_execution_failed(
                        ExecutionFailedEventDetails(error=runtime_error.to_name(), cause=DELAY_TOO_LONG)
                    ),
                )
            )
        proceed(self, env, wait_seconds)

    _jsonata_timestamps_fail_as_query_errors()


def _execution_failed(details: ExecutionFailedEventDetails) -> Any:
    """moto's EventDetails for an ExecutionFailed event (a TypedDict mypy would want complete)."""
    return {"executionFailedEventDetails": details}


def _jsonata_timestamps_fail_as_query_errors() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import StringJSONata, Timestamp
    from sam_local_cloud.stepfunctions.jsonata import fail_query_evaluation

    @hooks.around(Timestamp, "_create_failure_event", concern="wait_state")
    def create_failure_event(
        proceed: Callable[..., FailureEvent], self: Timestamp, env: Environment, timestamp_str: str
    ) -> FailureEvent:
        if isinstance(self.string, StringJSONata):
            fail_query_evaluation(
                env,
                "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format "
                f"string: {timestamp_str}",
                "Timestamp",
            )
        return proceed(self, env, timestamp_str)
