"""The durable executor's wake-up timer (waits and step retries): a wake-up is never lost to a checkpoint
that re-arms the timer while it fires, or to a re-arm decided on an older state."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from orderbatch.localcloud.lambda_service.durable import DurableExecutions

ARN = "arn:aws:lambda:us-east-1:123456789012:function:F:$LATEST/durable-execution/n/1"


@pytest.fixture
def executor() -> Iterator[Any]:
    def never(name: str, *_: object) -> Any:
        raise AssertionError(f"nothing is invoked here: {name}")

    executions = DurableExecutions(
        resolve=never, run_invocation=never, region="us-east-1", account_id="123456789012"
    )
    try:
        yield executions.executor
    finally:
        executions.close()


def eventually(predicate: Any, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_wakeup_that_fired_still_invokes_when_a_checkpoint_rearms_the_timer_meanwhile(
    executor: Any,
) -> None:
    on_lane, release = threading.Event(), threading.Event()
    invoked: list[str] = []

    def complete_due_wait(execution_arn: str) -> bool:
        on_lane.set()
        release.wait(5)
        return True

    executor._fire_due_operations = complete_due_wait
    executor._invoke_execution = lambda execution_arn, delay=0: invoked.append(execution_arn)
    fired = executor._scheduler.call_later(executor._fire_due_and_invoke_handler(ARN), delay=0)
    assert on_lane.wait(5)
    # A checkpoint on the lane re-arms the timer and cancels the one it replaces: this one, mid-fire.
    fired.cancel()
    release.set()

    assert eventually(lambda: invoked), "the due wait was completed but its execution never invoked"
    assert invoked == [ARN]


def test_a_rearm_decided_on_an_older_state_cannot_cancel_the_timer_a_newer_one_armed(executor: Any) -> None:
    later = datetime.now(UTC) + timedelta(seconds=60)
    newer_armed = threading.Event()
    older_computed = threading.Event()

    def earliest(execution: Any) -> datetime | None:
        if threading.current_thread().name == "older":
            # Read before the checkpoint added a wait; decided only after that checkpoint re-armed.
            older_computed.set()
            newer_armed.wait(1)
            return None
        return later

    executor._store.load = lambda arn: SimpleNamespace(is_complete=False)
    executor._earliest_pending_timestamp = earliest
    older = threading.Thread(target=executor._schedule_earliest_pending, args=(ARN,), name="older")
    older.start()
    assert older_computed.wait(5)
    newer = threading.Thread(target=executor._schedule_earliest_pending, args=(ARN,), name="newer")
    newer.start()
    newer.join(5)
    newer_armed.set()
    older.join(5)
    newer.join(5)

    armed = executor._pending_wakeup.get(ARN)
    assert armed is not None
    assert not armed.cancelled(), "the wait's wake-up was cancelled by a stale re-arm"
