"""Task states and Map iterations run on parked daemon threads instead of a new thread each.

moto runs every Task state's work on a new thread (``ExecutionState._evaluate_with_timeout``, so that
``TimeoutSeconds`` can stop waiting for it) and every Map iteration's program on another
(``Program.eval``, for the program's own ``TimeoutSeconds``): two thread starts per Lambda Task, about
165 µs each on a loaded two-core machine. Here the same calls run on a thread that an earlier one left
idle, and a new thread starts only when none is: the caller still waits with a timeout and, when it
expires, leaves the work running on its thread, as before. A thread idle for ``IDLE_SECONDS`` ends.

The thread-local values the local cloud's patches keep (JSONata field paths, the Map Run being
redriven, a request's signing credentials) are set and cleared around each use, so a reused thread
starts a job with the same values a new one would.

A wait that has no timeout needs no second thread at all: a Map iteration's program (an ItemProcessor
has no ``TimeoutSeconds``) and a state left at the default ``TimeoutSeconds`` (99,999,999 s) run on the
thread that would only have waited for them, in a fresh context as a new thread has. Each hand-over
between threads costs a wake-up and a turn at the GIL, which a busy interpreter makes milliseconds.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from sam_local_cloud.moto_seam import hooks

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Environment, ExecutionState, Program

IDLE_SECONDS = 30.0
_LOG = logging.getLogger(__name__)


class _Worker(threading.Thread):
    def __init__(self, pool: WorkerPool) -> None:
        super().__init__(daemon=True, name="sfn-worker")
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._pool = pool

    def run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self._pool.retire(self):
                    return
                continue  # taken for a job just now: it is on its way
            job()
            self._pool.park(self)


class WorkerPool:
    """Daemon threads that wait for the next call once they finish one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self.threads_started = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self.threads_started += 1
        if worker is None:
            worker = _Worker(self)
            worker.jobs.put(job)
            worker.start()
        else:
            worker.jobs.put(job)

    def park(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """True when ``worker`` was idle and may end; False when a job was just handed to it."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


POOL = WorkerPool()


_inline = threading.local()


def _run_as_new_thread_would(call: Callable[[], None]) -> None:
    """``call`` on this thread, with the empty context and the exception handling a new thread has."""
    try:
        contextvars.Context().run(call)
    except Exception:
        _LOG.exception("Step Functions worker failed")


class PooledThread:
    """What moto's interpreter uses of ``threading.Thread`` (start, join with a timeout, is_alive)."""

    def __init__(
        self,
        target: Callable[..., object],
        args: tuple[object, ...] = (),
        kwargs: dict[str, object] | None = None,
        daemon: bool | None = None,
        name: str | None = None,
    ) -> None:
        self._call = (target, args, kwargs or {})
        self._done = threading.Event()
        self._started = False

    def start(self) -> None:
        self._started = True
        if getattr(_inline, "requested", False):
            _inline.requested = False
            # The caller's wait has no timeout: it would block until this returns anyway.
            _run_as_new_thread_would(self._run)
            return
        POOL.submit(self._run)

    def _run(self) -> None:
        target, args, kwargs = self._call
        try:
            target(*args, **kwargs)
        except Exception:
            # A thread of its own would have printed this and ended; the parked thread carries on.
            _LOG.exception("Step Functions worker failed")
        finally:
            self._done.set()

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def is_alive(self) -> bool:
        return self._started and not self._done.is_set()


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        EvalComponent,
        ExecutionState,
        Program,
        TimeoutSeconds,
        execute_state,
    )

    hooks.replace(execute_state, "Thread", PooledThread, concern="worker_threads")

    @hooks.around(ExecutionState, "_evaluate_with_timeout", concern="worker_threads")
    def evaluate_with_timeout(proceed: Callable[..., None], self: ExecutionState, env: Environment) -> None:
        # The one thread moto starts here is the state's work; without a timeout of its own the wait
        # for it is unbounded, so it runs where the wait would be.
        _inline.requested = isinstance(self.timeout, TimeoutSeconds) and self.timeout.is_default_value()
        try:
            proceed(self, env)
        finally:
            _inline.requested = False

    def eval_program(self: Program, env: Environment) -> None:
        timeout = self.timeout_seconds.timeout_seconds if self.timeout_seconds else None
        env.next_state_name = self.start_at.start_at_name
        if timeout is None:
            _run_as_new_thread_would(lambda: EvalComponent.eval(self, env))
            return
        worker = PooledThread(target=EvalComponent.eval, args=(self, env))
        worker.start()
        worker.join(timeout=timeout)
        if worker.is_alive():
            env.set_timed_out()

    hooks.replace(Program, "eval", eval_program, concern="worker_threads")
