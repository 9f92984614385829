"""The testing SDK's durable executor, as the local cloud runs it: pools as wide as Lambda's, and no
execution left waiting for an invocation that never comes.

Pools: the SDK sizes both as ``ThreadPoolExecutor`` does, ``min(32, cpus + 4)``: six on two cores, so a
``map`` of 20 orders would run six chained invokes at a time and a quota of 10 would never throttle it.
Lambda starts every one at once and lets the account's quota decide.

Wake-ups: one timer per execution fires at its earliest due wait or step retry; every checkpoint re-arms
it and cancels the timer it replaces. In the SDK that timer stays registered while it fires, so a
checkpoint landing meanwhile (another branch of the same invocation) cancels the firing itself: the due
wait is completed on the lane but its invocation is never started, and an execution whose handler then
returns PENDING waits for ever. Here a timer that has fired runs to its end, and re-arming is serialised,
so a decision taken on an older state cannot cancel one taken on a newer.

Suspending past a completion: the SDK's map and parallel keep a branch that suspended on an invoke (or on a
wait it could not resume in the same invocation) suspended until the invocation ends, even when a later
checkpoint answer (another branch's, or the final flush while the handler stops) shows that operation
complete. The handler then returns PENDING with nothing pending, having been shown every change. The SDK's
executor refuses that answer ("Cannot return PENDING status with no pending operations"), replays only
after its retry delay, counts the refusal as a failed attempt, and fails the execution at the third such
invocation in a row, even when each one moved the execution on; and the sweeper below cannot see such an
execution, since every change was delivered. Nothing is wrong with the execution: a replay finds those
operations complete and goes on. So here such a PENDING, after the service completed an operation during
the invocation and a checkpoint answer delivered it, is accepted and the execution is replayed at once: a
replay is what Lambda would run. A PENDING with nothing pending and nothing completed since its input is
still refused as the SDK refuses it.

Stalls: Lambda keeps a durable execution's pending work in its own durable store, and any change to it
leads to an invocation. In the SDK that guarantee rests on in-memory timers and hand-offs between
threads. So a sweeper checks every few seconds for an execution that has a change no invocation has been
given, with no invocation in flight or arriving, for longer than any retry delay the executor uses; it
logs a warning and invokes it. A replay is what Lambda would have run, so nothing runs twice that a
replay would not run.

What it waits on: ``execution_view`` is the executor's own view of one execution (its invocation gate,
how long its invocation has been in flight, its failed attempts in a row, ``needs_reinvoke``, a wake-up
armed or not, the operations it waits on and for how long), read on the execution's lane, for whoever
must say why an execution is still running (the crash matrix, at its deadline).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationOutput, InvocationStatus
from aws_durable_execution_sdk_python.lambda_service import Operation, OperationStatus, OperationType
from aws_durable_execution_sdk_python_testing.execution import Execution
from aws_durable_execution_sdk_python_testing.executor import Executor
from aws_durable_execution_sdk_python_testing.threads import DaemonThreadPool
from aws_durable_execution_sdk_python_testing.worker.checkpoint_tasks import CallableTask
from aws_durable_execution_sdk_python_testing.worker.status import InvocationState

logger = logging.getLogger(__name__)

# Invocations Lambda makes for durable executions at once (replays, plain chained-invoke targets). The
# account quota bounds them, with 429s, as any invocation; this only bounds the threads that wait on them.
MAX_DURABLE_INVOCATIONS_IN_FLIGHT = 256
# How often the sweeper looks, and how many looks in a row an execution must stay stalled: together
# longer than the executor's own retry delay (RETRY_BACKOFF_SECONDS, 5 s), so a retry on its way is
# never doubled.
STALL_SWEEP_SECONDS = 5.0
STALL_SWEEPS = 3
# How long ``execution_view`` waits for the execution's lane before it reads without it.
VIEW_LANE_SECONDS = 5.0
# The operations an execution can wait on (a context only groups them) and their open statuses.
_WAITED_ON_TYPES = (
    OperationType.STEP,
    OperationType.WAIT,
    OperationType.CALLBACK,
    OperationType.CHAINED_INVOKE,
)
_OPEN_STATUSES = (OperationStatus.STARTED, OperationStatus.PENDING, OperationStatus.READY)


@dataclass(frozen=True)
class WaitedOnOperation:
    """An operation of an execution that has not ended: what the execution waits on."""

    type: str
    name: str | None
    status: str
    # Since the operation started, by the executor's clock; None when it has no start time.
    seconds: float | None
    # A chained invoke's target invocation in flight for this long; None when none is. Only for chained
    # invokes, and only when whoever asked knows the targets in flight (``targets_known``).
    target_seconds: float | None = None
    targets_known: bool = False
    # A wait's end or a step's next attempt, in seconds from now (below zero: overdue); None for others.
    due_in_seconds: float | None = None

    def describe(self) -> str:
        text = f"{self.type} {self.name!r} {self.status}" if self.name else f"{self.type} {self.status}"
        if self.seconds is not None:
            text += f" for {self.seconds:.0f} s"
        if self.due_in_seconds is not None:
            due = self.due_in_seconds
            text += f", due in {due:.0f} s" if due >= 0 else f", overdue by {-due:.0f} s"
        if self.targets_known and self.type == OperationType.CHAINED_INVOKE.value:
            text += (
                f" (its target in flight for {self.target_seconds:.0f} s)"
                if self.target_seconds is not None
                else " (no target invocation in flight)"
            )
        return text


@dataclass(frozen=True)
class ExecutionView:
    """The executor's view of one execution: why it is still running, or what it waits on."""

    status: str
    gate: str
    # How long the invocation holding the gate has been in flight; None when none does.
    invocation_seconds: float | None
    failed_attempts: int
    needs_reinvoke: bool
    unseen_changes: bool
    wakeup_armed: bool
    invocations: int
    waiting_on: tuple[WaitedOnOperation, ...]
    # The lane did not answer within VIEW_LANE_SECONDS: the view was read without it.
    lane_busy: bool = False

    def describe(self) -> str:
        """One line: ``RUNNING, gate INVOKING, its invocation in flight for 63 s; ...; waiting on: ...``."""
        head = f"{self.status}, gate {self.gate}"
        if self.invocation_seconds is not None:
            head += f", its invocation in flight for {self.invocation_seconds:.0f} s"
        parts = [
            head,
            f"{self.failed_attempts} failed invocation attempts in a row",
            f"needs_reinvoke {self.needs_reinvoke}",
            ("changes" if self.unseen_changes else "no change") + " the handler has not seen",
            "a wake-up armed" if self.wakeup_armed else "no wake-up armed",
            f"{self.invocations} invocations ended",
            "waiting on: " + (", ".join(op.describe() for op in self.waiting_on) or "nothing"),
        ]
        if self.lane_busy:
            parts.append(f"read off its lane, which did not answer within {VIEW_LANE_SECONDS:.0f} s")
        return "; ".join(parts)


class LocalCloudExecutor(Executor):
    """The SDK's executor with Lambda-wide pools, wake-ups that are never lost and a stall sweeper."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for attribute, prefix in (
            ("_target_pool", "durable-chained-invoke-target"),
            ("_invocation_pool", "durable-invocation"),
        ):
            getattr(self, attribute).shutdown(wait=False)
            pool = DaemonThreadPool(max_workers=MAX_DURABLE_INVOCATIONS_IN_FLIGHT, thread_name_prefix=prefix)
            setattr(self, attribute, pool)
        self._rearm_lock = threading.RLock()
        # Fired wake-ups, held until they end: a task the loop only references weakly could be collected.
        self._firing: set[asyncio.Future[None]] = set()
        # Execution ARN -> seq_counter when its last invocation's input was built.
        self._delivered_seq: dict[str, int] = {}
        # Execution ARN -> (its seq_counter, looks in a row it has been stalled at that counter).
        self._stalled: dict[str, tuple[int, int]] = {}
        # Execution ARN -> time.monotonic() when its last invocation claimed the gate.
        self._invoking_since: dict[str, float] = {}
        self._sweeper_stop = threading.Event()
        self._sweeper = threading.Thread(
            target=self._sweep_forever, name="durable-stall-sweeper", daemon=True
        )
        self._sweeper.start()

    # -- wake-ups --------------------------------------------------------------------------------------
    def _schedule_earliest_pending(self, execution_arn: str) -> None:
        with self._rearm_lock:
            super()._schedule_earliest_pending(execution_arn)

    def _fire_due_and_invoke_handler(self, execution_arn: str) -> Callable[[], Awaitable[None]]:
        fire = super()._fire_due_and_invoke_handler(execution_arn)

        async def fire_to_the_end() -> None:
            firing = asyncio.ensure_future(fire())
            self._firing.add(firing)
            firing.add_done_callback(self._firing.discard)
            # Cancelling the timer now only stops this wait; the firing completes and invokes.
            await asyncio.shield(firing)

        return fire_to_the_end

    # -- suspending past a completion ------------------------------------------------------------------
    def _validate_invocation_response_and_store(
        self,
        execution_arn: str,
        response: DurableExecutionInvocationOutput,
        execution: Execution,
        invocation_seq: int | None = None,
    ) -> None:
        if not suspended_past_a_completion(response, execution, invocation_seq):
            super()._validate_invocation_response_and_store(
                execution_arn, response, execution, invocation_seq
            )
            return
        logger.info(
            "[%s] the handler returned PENDING after a checkpoint answer showed it %s complete; replaying it",
            execution_arn,
            ", ".join(execution.updated_operation_ids),
        )
        # This replay answers every trigger that met the busy gate meanwhile: the SDK must not add another.
        execution.needs_reinvoke = False
        # On the execution's lane: the replay's claim queues behind this invocation's release of the gate.
        self._invoke_execution(execution_arn)

    # -- stalls ----------------------------------------------------------------------------------------
    def _begin_invocation(self, execution_arn: str) -> Any:
        claim = super()._begin_invocation(execution_arn)
        if claim is not None:
            _, _, invocation_seq = claim
            self._delivered_seq[execution_arn] = invocation_seq
            self._invoking_since[execution_arn] = time.monotonic()
        return claim

    def _sweep_forever(self) -> None:
        while not self._sweeper_stop.wait(STALL_SWEEP_SECONDS):
            try:
                self.sweep_stalls()
            except Exception:  # the sweeper outlives any one bad look
                logger.exception("the durable stall sweeper failed; it looks again")

    def sweep_stalls(self) -> list[str]:
        """One look: invoke each execution stalled for ``STALL_SWEEPS`` looks in a row. Returns them."""
        looked: dict[str, tuple[int, int]] = {}
        invoked = []
        for execution in self._store.list_all():
            arn = execution.durable_execution_arn
            if execution.is_complete:
                self._delivered_seq.pop(arn, None)
                self._invoking_since.pop(arn, None)
                continue
            if execution.is_paused:
                continue
            if self._invocation_gate(arn) is not InvocationState.PRE_INVOKE:
                continue
            delivered = max(self._delivered_seq.get(arn, 0), execution.handler_seen_seq)
            try:
                undelivered = execution.has_changes_after(delivered)
            except RuntimeError:  # its lane changed it while we read: not stalled, by definition
                continue
            if not undelivered:
                continue
            seq = execution.seq_counter
            previous_seq, looks = self._stalled.get(arn, (seq, 0))
            looks = looks + 1 if previous_seq == seq else 1
            if looks >= STALL_SWEEPS:
                logger.warning(
                    "[%s] a change has waited %.0f s for an invocation and none is in flight or on its way; "
                    "invoking the execution",
                    arn,
                    (looks - 1) * STALL_SWEEP_SECONDS,
                )
                self._invoke_execution(arn)
                invoked.append(arn)
                continue
            looked[arn] = (seq, looks)
        self._stalled = looked
        return invoked

    # -- the executor's view ----------------------------------------------------------------------------
    def execution_view(
        self, execution_arn: str, targets_in_flight: Mapping[str, float] | None = None
    ) -> ExecutionView:
        """The executor's view of the execution, read on its lane (so no change lands halfway through the
        read) unless the lane does not answer within ``VIEW_LANE_SECONDS``: a wedged lane is part of the
        answer. ``targets_in_flight`` maps a chained invoke's operation ID to how long its target
        invocation has been in flight (None: not known). Raises ResourceNotFoundException for an unknown
        execution."""
        self.get_execution(execution_arn)
        if self._registry.get(execution_arn) is not None:
            read = self._registry.submit(
                execution_arn, CallableTask(lambda: self._read_view(execution_arn, targets_in_flight))
            )
            try:
                return read.result(timeout=VIEW_LANE_SECONDS)
            except FutureTimeoutError:
                return self._read_view(execution_arn, targets_in_flight, lane_busy=True)
        return self._read_view(execution_arn, targets_in_flight)

    def _read_view(
        self, execution_arn: str, targets_in_flight: Mapping[str, float] | None, *, lane_busy: bool = False
    ) -> ExecutionView:
        execution = self.get_execution(execution_arn)
        gate = self._invocation_gate(execution_arn)
        since = self._invoking_since.get(execution_arn)
        with self._pending_wakeup_lock:
            wakeup = self._pending_wakeup.get(execution_arn)
        now = self._clock.now()
        waiting_on = tuple(
            WaitedOnOperation(
                type=operation.operation_type.value,
                name=operation.name,
                status=operation.status.value,
                seconds=_seconds_between(operation.start_timestamp, now),
                target_seconds=(targets_in_flight or {}).get(operation.operation_id),
                targets_known=targets_in_flight is not None,
                due_in_seconds=_seconds_until(_due(operation), now),
            )
            for operation in list(execution.operations)
            if operation.operation_type in _WAITED_ON_TYPES and operation.status in _OPEN_STATUSES
        )
        return ExecutionView(
            status=execution.current_status().value,
            gate=gate.value,
            invocation_seconds=(
                time.monotonic() - since if gate is InvocationState.INVOKING and since is not None else None
            ),
            failed_attempts=execution.consecutive_failed_invocation_attempts,
            needs_reinvoke=execution.needs_reinvoke,
            unseen_changes=execution.has_unseen_changes(),
            wakeup_armed=wakeup is not None and not wakeup.done(),
            invocations=len(execution.invocation_completions),
            waiting_on=waiting_on,
            lane_busy=lane_busy,
        )

    def shutdown(self) -> None:
        self._sweeper_stop.set()
        super().shutdown()


def _seconds_between(start: datetime | None, now: datetime) -> float | None:
    until = _seconds_until(start, now)
    return None if until is None else max(0.0, -until)


def _seconds_until(moment: datetime | None, now: datetime) -> float | None:
    if moment is None:
        return None
    try:
        return (moment - now).total_seconds()
    except TypeError:  # one naive, one aware: no figure rather than a wrong one
        return None


def _due(operation: Operation) -> datetime | None:
    """When the executor's timer should end the operation: a wait's end, a pending step's next attempt."""
    if operation.operation_type is OperationType.WAIT and operation.wait_details is not None:
        return operation.wait_details.scheduled_end_timestamp
    if operation.status is OperationStatus.PENDING and operation.step_details is not None:
        return operation.step_details.next_attempt_timestamp
    return None


def suspended_past_a_completion(
    response: DurableExecutionInvocationOutput, execution: Execution, invocation_seq: int | None
) -> bool:
    """Whether a PENDING answer only shows the SDK's race: nothing is left pending, the service completed an
    operation while the invocation ran (``updated_operation_ids`` is reset when an invocation's input is
    built), and a checkpoint answer delivered it, so the SDK's executor would refuse the answer."""
    return (
        response.status == InvocationStatus.PENDING
        and invocation_seq is not None
        and not execution.is_complete
        and bool(execution.updated_operation_ids)
        and not execution.has_deferred_invocation
        and not execution.has_pending_operations(execution)
        and not execution.has_changes_after(max(invocation_seq, execution.handler_seen_seq))
    )
