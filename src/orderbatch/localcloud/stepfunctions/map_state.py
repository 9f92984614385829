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
import weakref
from typing import Any

from orderbatch.aws_limits import INLINE_MAP_CONCURRENCY_LIMIT


def patch() -> None:
    _cap_inline_map_concurrency()
    _loop_map_workers()
    _count_child_events_without_keeping_them()
    _name_the_value_not_its_type()


def _cap_inline_map_concurrency() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
        inline_iteration_component,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
        DEFAULT_MAX_CONCURRENCY_VALUE,
    )

    component = inline_iteration_component.InlineIterationComponent
    original_eval_body = component._eval_body

    def eval_body_within_aws_limit(self: Any, env: Any) -> None:
        eval_input = env.stack[-1]
        requested = eval_input.max_concurrency
        if requested == DEFAULT_MAX_CONCURRENCY_VALUE or requested > INLINE_MAP_CONCURRENCY_LIMIT:
            eval_input.max_concurrency = INLINE_MAP_CONCURRENCY_LIMIT
        original_eval_body(self, env)

    component._eval_body = eval_body_within_aws_limit  # type: ignore[method-assign]


def _loop_map_workers() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
        distributed_item_processor_worker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator import (
        distributed_iterator_worker,
    )

    iteration_worker.IterationWorker._eval_pool = _inline_eval_pool  # type: ignore[method-assign]
    distributed_item_processor_worker.DistributedItemProcessorWorker._eval_pool = (  # type: ignore[method-assign]
        _distributed_eval_pool("open_inner_frame")
    )
    distributed_iterator_worker.DistributedIteratorWorker._eval_pool = (  # type: ignore[method-assign]
        _distributed_eval_pool("open_frame")
    )


def _inline_eval_pool(self: Any, job: Any, worker_frame: Any) -> None:
    """moto's ``IterationWorker._eval_pool``, step for step, as a loop instead of a recursion."""
    while job is not None:
        job_frame = worker_frame.open_inner_frame()
        self._eval_job(env=job_frame, job=job)
        worker_frame.close_frame(job_frame)
        if isinstance(job.job_output, Exception) or self.stopped():
            self._env.close_frame(worker_frame)
            self._job_pool.close_job(job)
            return
        next_job = self._job_pool.next_job()
        if next_job is None:
            # Non-faulty terminal iteration events are the source of the following states' events.
            worker_frame.event_history_context.source_event_id = (
                job_frame.event_history_context.last_published_event_id
            )
            # Closed before the job: the Map waits for its jobs, and the owner must be updated by then.
            self._env.close_frame(worker_frame)
            self._job_pool.close_job(job)
            return
        self._job_pool.close_job(job)
        job = next_job
    self._env.close_frame(worker_frame)


def _distributed_eval_pool(open_job_frame: str) -> Any:
    """moto's distributed workers' ``_eval_pool`` (the two differ in how a job frame opens), as a loop."""

    def eval_pool(self: Any, job: Any, worker_frame: Any) -> None:
        while job is not None:
            job_frame = getattr(worker_frame, open_job_frame)()
            self._eval_job(env=job_frame, job=job)
            worker_frame.delete_frame(job_frame)
            if isinstance(job.job_output, Exception) or self.stopped():
                self._env.delete_frame(worker_frame)
                self._job_pool.close_job(job)
                return
            next_job = self._job_pool.next_job()
            if next_job is None:
                self._env.delete_frame(worker_frame)
                self._job_pool.close_job(job)
                return
            self._job_pool.close_job(job)
            job = next_job
        self._env.delete_frame(worker_frame)

    return eval_pool


def _count_child_events_without_keeping_them() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
        distributed_iteration_component,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    class ChildExecutionEvents(EventManager):
        """The events of a Distributed Map's children: numbered and counted, then let go."""

        published = 0

        def _publish_history_event(self, *args: Any, **kwargs: Any) -> None:
            self.published += 1

    # The module creates the Map run's event manager by this name.
    distributed_iteration_component.EventManager = ChildExecutionEvents  # type: ignore[misc]


_NOT_AN_ARRAY = "Map state input must be an array but was: "
# The items each Map evaluation computed last, by evaluation environment: the check that fails a non-array
# pops them before it builds its cause.
_evaluated_items: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _name_the_value_not_its_type() -> None:
    """AWS's cause for a Map over a non-array quotes the value as JSON (``... but was: true``); moto's names
    the Python type (``<class 'bool'>``)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.path.items_path import ItemsPath
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.items.items import Items
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap

    for component in (ItemsPath, Items):
        _remember_evaluated_items(component)
    original = StateMap._eval_execution

    def eval_execution(self: Any, env: Any) -> None:
        # Without Items or ItemsPath (JSONata), the items are the state's input, already on the stack.
        _evaluated_items.pop(env, None)
        state_input = env.stack[-1] if env.stack else None
        try:
            original(self, env)
        except FailureEventException as failure:
            details: Any = failure.failure_event.event_details or {}
            evaluation = details.get("evaluationFailedEventDetails") or {}
            cause = evaluation.get("cause")
            if isinstance(cause, str) and cause.startswith(_NOT_AN_ARRAY):
                items = _evaluated_items.get(env, state_input)
                evaluation["cause"] = _NOT_AN_ARRAY + json.dumps(items, separators=(",", ":"))
            raise

    StateMap._eval_execution = eval_execution  # type: ignore[method-assign]


def _remember_evaluated_items(component: Any) -> None:
    original_eval = component.eval

    def eval_and_remember(self: Any, env: Any) -> None:
        original_eval(self, env)
        if env.stack:
            _evaluated_items[env] = env.stack[-1]

    component.eval = eval_and_remember
