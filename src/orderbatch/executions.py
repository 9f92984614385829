"""Waiting for a Step Functions execution, with a deadline (never an unbounded poll)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# The statuses of an execution that has ended (RUNNING and PENDING_REDRIVE are the others).
FINISHED_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


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
    while (elapsed := time.monotonic() - started) < timeout:
        status = str(stepfunctions.describe_execution(executionArn=execution_arn)["status"])
        if on_poll is not None:
            on_poll(status, elapsed)
        if status != "RUNNING":
            return status
        time.sleep(poll_seconds)
    raise ExecutionStillRunningError(f"execution {execution_arn} still {status} after {timeout:.0f} s")
