"""The Map state as the local cloud runs it: AWS's limits, memory flat in the number of items, real results.

Adjustments to moto's interpreter, each for a reason a user would meet:
- an inline Map without MaxConcurrency starts one thread per item; AWS runs about 40 iterations of an
  inline Map at once, so the local cloud holds it to that;
- a Map worker evaluates its next item by calling itself, so every item it ran stays on its stack with
  its whole frame (state data, context, variables) until the Map ends: memory grew with the number of
  items, and a worker past ~1,000 items would hit Python's recursion limit. Here it loops;
- a Distributed Map collects every child execution's events into one list that is dropped when the Map
  ends: all of them held at once, payloads included. On AWS they are separate child executions' histories,
  which moto does not expose; here they are counted, not kept;
- what a Distributed Map reads, batches, tolerates and writes is ``distributed_map``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sam_local_cloud.aws_limits import INLINE_MAP_CONCURRENCY_LIMIT
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import Evaluation, MapJob, MapWorker, ProgramEnvironment
from sam_local_cloud.moto_seam.records import EngineRecords

if TYPE_CHECKING:
    from collections.abc import Callable

_CONCERN = "map_state"


def register_hooks() -> None:
    _cap_inline_map_concurrency()
    _loop_map_workers()
    _count_child_events_without_keeping_them()
    _name_the_value_not_its_type()


def _cap_inline_map_concurrency() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        DEFAULT_MAX_CONCURRENCY_VALUE,
        InlineIterationComponent,
    )

    @hooks.around(InlineIterationComponent, "_eval_body", concern=_CONCERN)
    def eval_body_within_aws_limit(proceed: Evaluation, self: object, env: ProgramEnvironment) -> None:
        eval_input = env.stack[-1]
        requested = eval_input.max_concurrency
        if requested == DEFAULT_MAX_CONCURRENCY_VALUE or requested > INLINE_MAP_CONCURRENCY_LIMIT:
            eval_input.max_concurrency = INLINE_MAP_CONCURRENCY_LIMIT
        proceed(self, env)


def _loop_map_workers() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        DistributedItemProcessorWorker,
        DistributedIteratorWorker,
        IterationWorker,
    )

    hooks.replace(IterationWorker, "_eval_pool", _inline_eval_pool, concern=_CONCERN)
    hooks.replace(
        DistributedItemProcessorWorker,
        "_eval_pool",
        _distributed_eval_pool("open_inner_frame"),
        concern=_CONCERN,
    )
    hooks.replace(
        DistributedIteratorWorker, "_eval_pool", _distributed_eval_pool("open_frame"), concern=_CONCERN
    )


def _inline_eval_pool(self: MapWorker, job: MapJob | None, worker_frame: ProgramEnvironment) -> None:
    """moto's ``IterationWorker._eval_pool``, step for step, as a loop instead of a recursion."""
    env, job_pool = internals.worker_environment(self), internals.job_pool_of(self)
    while job is not None:
        job_frame = worker_frame.open_inner_frame()
        internals.eval_job(self, env=job_frame, job=job)
        worker_frame.close_frame(job_frame)
        if isinstance(job.job_output, Exception) or self.stopped():
            env.close_frame(worker_frame)
            job_pool.close_job(job)
            return
        next_job = job_pool.next_job()
        if next_job is None:
            # Non-faulty terminal iteration events are the source of the following states' events.
            worker_frame.event_history_context.source_event_id = (
                job_frame.event_history_context.last_published_event_id
            )
            # Closed before the job: the Map waits for its jobs, and the owner must be updated by then.
            env.close_frame(worker_frame)
            job_pool.close_job(job)
            return
        job_pool.close_job(job)
        job = next_job
    env.close_frame(worker_frame)


def _distributed_eval_pool(
    open_job_frame: str,
) -> Callable[[MapWorker, MapJob | None, ProgramEnvironment], None]:
    """moto's distributed workers' ``_eval_pool`` (the two differ in how a job frame opens), as a loop."""

    def eval_pool(self: MapWorker, job: MapJob | None, worker_frame: ProgramEnvironment) -> None:
        env, job_pool = internals.worker_environment(self), internals.job_pool_of(self)
        while job is not None:
            job_frame: ProgramEnvironment = getattr(worker_frame, open_job_frame)()
            internals.eval_job(self, env=job_frame, job=job)
            worker_frame.delete_frame(job_frame)
            if isinstance(job.job_output, Exception) or self.stopped():
                env.delete_frame(worker_frame)
                job_pool.close_job(job)
                return
            next_job = job_pool.next_job()
            if next_job is None:
                env.delete_frame(worker_frame)
                job_pool.close_job(job)
                return
            job_pool.close_job(job)
            job = next_job
        env.delete_frame(worker_frame)

    return eval_pool


def _count_child_events_without_keeping_them() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import EventManager, distributed_iteration_component

    class ChildExecutionEvents(EventManager):
        """The events of a Distributed Map's children: numbered and counted, then let go."""

        published = 0

        def _publish_history_event(self, *args: object, **kwargs: object) -> None:
            self.published += 1

    # The module creates the Map run's event manager by this name.
    hooks.replace(distributed_iteration_component, "EventManager", ChildExecutionEvents, concern=_CONCERN)


_NOT_AN_ARRAY = "Map state input must be an array but was: "


@dataclass
class _EvaluatedItems:
    """The items a Map evaluation computed last: the check that fails a non-array pops them before it
    builds its cause."""

    value: object = None


# By evaluation environment.
_evaluated_items: EngineRecords[_EvaluatedItems] = EngineRecords(_EvaluatedItems)


def _name_the_value_not_its_type() -> None:
    """AWS's cause for a Map over a non-array quotes the value as JSON (``... but was: true``); moto's names
    the Python type (``<class 'bool'>``)."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        FailureEventException,
        Items,
        ItemsPath,
        StateMap,
    )

    for component in (ItemsPath, Items):
        _remember_evaluated_items(component)

    @hooks.around(StateMap, "_eval_execution", concern=_CONCERN)
    def eval_execution(proceed: Evaluation, self: object, env: ProgramEnvironment) -> None:
        # Without Items or ItemsPath (JSONata), the items are the state's input, already on the stack.
        _evaluated_items.forget(env)
        state_input = env.stack[-1] if env.stack else None
        try:
            proceed(self, env)
        except FailureEventException as failure:
            details: Any = failure.failure_event.event_details or {}
            evaluation = details.get("evaluationFailedEventDetails") or {}
            cause = evaluation.get("cause")
            if isinstance(cause, str) and cause.startswith(_NOT_AN_ARRAY):
                evaluated = _evaluated_items.get(env)
                items = state_input if evaluated is None else evaluated.value
                evaluation["cause"] = _NOT_AN_ARRAY + json.dumps(items, separators=(",", ":"))
            raise


def _remember_evaluated_items(component: type) -> None:
    @hooks.around(component, "eval", concern=_CONCERN)
    def eval_and_remember(proceed: Evaluation, self: object, env: ProgramEnvironment) -> None:
        proceed(self, env)
        if env.stack:
            _evaluated_items.of(env).value = env.stack[-1]
