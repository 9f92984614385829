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
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationOutput, InvocationStatus
from aws_durable_execution_sdk_python_testing.execution import Execution
from aws_durable_execution_sdk_python_testing.executor import Executor
from aws_durable_execution_sdk_python_testing.threads import DaemonThreadPool
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

    def shutdown(self) -> None:
        self._sweeper_stop.set()
        super().shutdown()


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
