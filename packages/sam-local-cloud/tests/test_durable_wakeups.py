"""The durable executor's wake-up timer (waits and step retries): a wake-up is never lost to a checkpoint
that re-arms the timer while it fires, or to a re-arm decided on an older state; and an execution left
with a change no invocation was given is invoked by the stall sweeper, and no other."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.worker.status import InvocationState
from durable_driving import executions_without_sweeper

from sam_local_cloud.lambda_service.durable_executor import STALL_SWEEPS

ARN = "arn:aws:lambda:us-east-1:123456789012:function:F:$LATEST/durable-execution/n/1"


@pytest.fixture
def executor() -> Iterator[Any]:
    # The tests look themselves, one sweep at a time.
    with executions_without_sweeper() as executions:
        yield executions.executor


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


def stalled_execution(*, seq: int = 7, touched_at: int = 7, seen: int = 0, **state: Any) -> Any:
    """An execution whose newest change is at ``touched_at``; the handler saw up to ``seen``."""
    fields = {"is_complete": False, "is_paused": False, **state}
    return SimpleNamespace(
        durable_execution_arn=ARN,
        seq_counter=seq,
        handler_seen_seq=seen,
        has_changes_after=lambda after: touched_at > after,
        **fields,
    )


def sweeps(executor: Any, execution: Any, looks: int = STALL_SWEEPS + 2) -> list[str]:
    executor._store.list_all = lambda: [execution]
    invoked: list[str] = []
    executor._invoke_execution = lambda execution_arn, delay=0: invoked.append(execution_arn)
    for _ in range(looks):
        executor.sweep_stalls()
    return invoked


def test_a_change_no_invocation_was_given_is_invoked_once_it_has_waited_three_looks(executor: Any) -> None:
    executor._delivered_seq[ARN] = 5
    execution = stalled_execution()
    executor._store.list_all = lambda: [execution]
    invoked: list[str] = []
    executor._invoke_execution = lambda execution_arn, delay=0: invoked.append(execution_arn)

    looks = [executor.sweep_stalls() for _ in range(STALL_SWEEPS)]

    assert looks == [[]] * (STALL_SWEEPS - 1) + [[ARN]]
    assert invoked == [ARN]


def test_the_sweeper_leaves_alone_what_is_not_stalled(executor: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its last invocation was given every change.
    executor._delivered_seq[ARN] = 7
    assert sweeps(executor, stalled_execution()) == []
    # A checkpoint response delivered it.
    executor._delivered_seq.clear()
    assert sweeps(executor, stalled_execution(seen=7)) == []
    # Ended, or paused by the caller.
    assert sweeps(executor, stalled_execution(is_complete=True)) == []
    assert sweeps(executor, stalled_execution(is_paused=True)) == []
    # An invocation is in flight.
    monkeypatch.setattr(executor, "_invocation_gate", lambda arn: InvocationState.INVOKING)
    assert sweeps(executor, stalled_execution()) == []


def test_a_stalled_execution_that_moves_between_looks_starts_its_count_again(executor: Any) -> None:
    execution = stalled_execution()
    executor._store.list_all = lambda: [execution]
    invoked: list[str] = []
    executor._invoke_execution = lambda execution_arn, delay=0: invoked.append(execution_arn)

    for look in range(STALL_SWEEPS * 2 - 2):
        execution.seq_counter = 7 + look // (STALL_SWEEPS - 1)
        executor.sweep_stalls()

    assert invoked == []
