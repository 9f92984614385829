"""Waiting for a Step Functions execution, with a deadline (never an unbounded poll)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
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
