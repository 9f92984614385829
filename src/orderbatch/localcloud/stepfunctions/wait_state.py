"""The Wait state's errors as AWS records them.

- AWS keeps a wait's delay in seconds as a signed 32-bit number: a Wait that would last 2^31 seconds or
  more (a timestamp about 24,856 days ahead) fails at once with States.Runtime "Wait state delay is too
  long."; moto started a 68-year wait.
- A JSONata ``Timestamp`` that is not ISO-8601 is a States.QueryEvaluationError (with an EvaluationFailed
  event) on AWS, not moto's States.Runtime with the JSONPath wording.
"""

from __future__ import annotations

from typing import Any

LONGEST_DELAY_SECONDS = 2**31 - 1
DELAY_TOO_LONG = "Wait state delay is too long."


def patch() -> None:
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    original_wait = WaitFunction._wait_interval

    def wait_within_aws_limit(self: Any, env: Any, wait_seconds: int) -> None:
        if wait_seconds > LONGEST_DELAY_SECONDS:
            runtime_error = StatesErrorNameType.StatesRuntime
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=runtime_error),
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=EventDetails(  # type: ignore[typeddict-item]
                        executionFailedEventDetails=ExecutionFailedEventDetails(
                            error=runtime_error.to_name(), cause=DELAY_TOO_LONG
                        )
                    ),
                )
            )
        original_wait(self, env, wait_seconds)

    WaitFunction._wait_interval = wait_within_aws_limit  # type: ignore[method-assign]
    _jsonata_timestamps_fail_as_query_errors()


def _jsonata_timestamps_fail_as_query_errors() -> None:
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp

    from orderbatch.localcloud.stepfunctions.jsonata import fail_query_evaluation

    original = Timestamp._create_failure_event

    def create_failure_event(self: Any, env: Any, timestamp_str: str) -> Any:
        if isinstance(self.string, StringJSONata):
            fail_query_evaluation(
                env,
                "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format "
                f"string: {timestamp_str}",
                "Timestamp",
            )
        return original(self, env, timestamp_str)

    Timestamp._create_failure_event = create_failure_event  # type: ignore[method-assign]
