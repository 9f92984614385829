"""Waiting for a Step Functions execution, with a deadline (never an unbounded poll), on a local cloud or
on AWS: only the Step Functions client differs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# The statuses of an execution that has ended (RUNNING and PENDING_REDRIVE are the others).
FINISHED_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


# The first wait between two polls: most executions a caller waits on (a test's, a small batch's) end within
# a second, and a fixed 1 s poll added half a second to each on average. The waits double up to the caller's
# interval, so a long batch is still polled once per interval (DescribeExecution is throttled on AWS too).
FIRST_POLL_SECONDS = 0.05


def poll_delays(poll_seconds: float) -> Iterator[float]:
    """The waits between polls: from FIRST_POLL_SECONDS, doubling, up to ``poll_seconds``."""
    delay = min(FIRST_POLL_SECONDS, poll_seconds)
    while True:
        yield delay
        delay = min(delay * 2, poll_seconds)


class ExecutionStillRunningError(AssertionError):
    """The execution did not finish before the deadline."""


def wait_for_execution(
    stepfunctions: Any,
    execution_arn: str,
    *,
    timeout: float,
    poll_seconds: float = 1.0,
    on_poll: Callable[[str, float], None] | None = None,
) -> str:
    """Poll DescribeExecution until the execution leaves RUNNING; return its status.

    Step Functions, not the app's GET /batches: while a Map oversubscribes the Lambda quota, the API's
    own function is throttled like any other.
    """
    started = time.monotonic()
    status = "RUNNING"
    delays = poll_delays(poll_seconds)
    while (elapsed := time.monotonic() - started) < timeout:
        status = str(stepfunctions.describe_execution(executionArn=execution_arn)["status"])
        if on_poll is not None:
            on_poll(status, elapsed)
        if status != "RUNNING":
            return status
        time.sleep(next(delays))
    raise ExecutionStillRunningError(f"execution {execution_arn} still {status} after {timeout:.0f} s")


@dataclass(frozen=True)
class ExecutionResult:
    """A finished execution as a test reads it: its status, its output parsed, its error, its history."""

    arn: str
    status: str
    # The output as JSON, parsed; None when the execution has none (it failed, or was aborted).
    output: Any
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]

    def events(self, event_type: str) -> list[dict[str, Any]]:
        """The history's events of one type (``TaskFailed``, ``TaskStateEntered``...), oldest first."""
        return [event for event in self.history if event["type"] == event_type]


# GetExecutionHistory's largest page (AWS's limit): a batch's history runs to thousands of events, and a
# page of the default 100 is a round trip each.
HISTORY_PAGE_SIZE = 1000


def execution_history(stepfunctions: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every event of the execution's history, oldest first, read in pages of ``HISTORY_PAGE_SIZE``."""
    pages = stepfunctions.get_paginator("get_execution_history").paginate(
        executionArn=execution_arn, PaginationConfig={"PageSize": HISTORY_PAGE_SIZE}
    )
    return [event for page in pages for event in page["events"]]


def finished_execution(
    stepfunctions: Any, execution_arn: str, *, timeout: float, poll_seconds: float = 1.0
) -> ExecutionResult:
    """Wait for the execution to finish (``ExecutionStillRunningError`` past ``timeout`` seconds) and read
    it: DescribeExecution, then every page of GetExecutionHistory."""
    wait_for_execution(stepfunctions, execution_arn, timeout=timeout, poll_seconds=poll_seconds)
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    output = described.get("output")
    return ExecutionResult(
        arn=execution_arn,
        status=str(described["status"]),
        output=json.loads(output) if output is not None else None,
        error=described.get("error"),
        cause=described.get("cause"),
        history=execution_history(stepfunctions, execution_arn),
    )
