"""Virtual-time, event-driven simulation of a workflow's batches on Lambda's and Step Functions' quotas.

One heap of ``(time, code)`` tuples, ``code = order << 3 | kind`` (negative for the few events that are
not an order's): an order has at most one pending event, so codes never tie and the order of events is
fully determined by the seed. Orders are indexes
into flat lists (current step, retry counts, start time); functions are indexes into per-function lists.
No object per order or per event: a million orders of four tasks run in well under a minute.

Per call, as AWS documents it (Lambda quotas and scaling: https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html; Step Functions quotas and retriers: https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html,
https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html):
- the account quota C; a function with reserved concurrency R draws only on its own R, the others share
  C minus the reservations (the unreserved pool), where a noisy neighbour may hold slots too;
- a call over its limit is rejected at once (HTTP 429, nothing runs, nothing billed) and goes to the
  Task's retrier for Lambda.TooManyRequestsException; with its retries spent, to the Task's Catch;
- a call that finds no idle execution environment of its function starts a new one (init time added,
  within the function's scaling rate of 1,000 environments per 10 s; beyond it, a 429 too); idle
  environments are reused and never reaped during the run;
- a call runs for a duration drawn from its function's lognormal; past the Task's cut-off it is stopped
  and retried by the retrier for States.Timeout / States.TaskFailed, then caught;
- every state an order enters is a billed transition (retries too); Standard workflows draw them from
  the state-transition token bucket and wait when it is empty; a Distributed Map starts each child
  execution through the StartExecution bucket;
- with a second pass (``Workflow.second_pass_map``), an order whose throttle retrier runs out at a step
  that defers leaves the Map (its slot goes to the next item) and waits; once the batch's first pass has
  no order left, the deferred orders run again from that step, ``second_pass_concurrency`` at a time, with
  fresh retriers, and a step still throttled there takes its last-pass route (compensation).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import time
from collections.abc import Iterator

import numpy as np

from orderbatch.capacity.model import lower_bound_seconds
from orderbatch.plan import writes
from orderbatch.plan.durations import Duration
from orderbatch.plan.results import AttemptRecord, PlanResult, RunCounters, TimelinePoint
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.workflow import Workflow

# Event kinds, the low three bits of an event's code.
_DONE = 0  # a call returned
_TIMED_OUT = 1  # a call was cut off at its timeout
_RETRY = 2  # a retrier's wait is over: the Task is entered again (one transition), then called
_CALL = 3  # call the order's current Task now (its transitions are paid)
_START = 4  # an order (a Map iteration or child execution) starts: enter its first states, then call

# Events that are not an order's have negative codes, so they come first at the same time: a neighbour
# arriving at t = 0 holds its slots before the first calls.
_NEIGHBOUR_ARRIVES = -3
_NEIGHBOUR_LEAVES = -2
_SAMPLE = -1

# Draws come in blocks that double from the first size to the largest: a small plan (repeated hundreds of
# times by the exhaustion forecast) needs a few hundred durations per function, a million orders millions.
# numpy's generator yields the same stream whatever the block sizes, so a seed's durations do not change.
_FIRST_SAMPLES_PER_DRAW = 1_024
_SAMPLES_PER_DRAW = 65_536


def simulate(workflow: Workflow, settings: PlanSettings) -> PlanResult:
    """Run ``settings.batches`` batches of ``settings.orders`` orders through ``workflow`` (module doc)."""
    started = time.perf_counter()
    counters, timeline, trace = _Run(workflow, settings).run()
    return PlanResult.build(
        workflow,
        settings,
        counters,
        timeline,
        trace,
        bound_seconds=plan_lower_bound(workflow, settings),
        wall_seconds=time.perf_counter() - started,
    )


def plan_lower_bound(workflow: Workflow, settings: PlanSettings) -> float:
    """The benchmark's physical limit for the state machine's Map (``lower_bound_at_concurrency``)."""
    return lower_bound_at_concurrency(
        workflow, settings, workflow.effective_concurrency(settings.max_concurrency)
    )


def lower_bound_at_concurrency(workflow: Workflow, settings: PlanSettings, per_batch: int) -> float:
    """The physical limit max(N.k.d / capacity, k.d), for all batches together, each running at most
    ``per_batch`` orders at once (a Map's effective concurrency, a durable map's max_concurrency).

    d is the mean of the forward tasks' mean durations; the capacity is min(C, batches x ``per_batch``),
    less the neighbour's slots while it holds them.
    """
    forward = workflow.forward
    mean_work = sum(settings.duration_of(step.function).mean_seconds for step in forward) / len(forward)
    return lower_bound_seconds(
        settings.orders * settings.batches,
        len(forward),
        mean_work,
        settings.account_concurrency,
        max_concurrency=settings.batches * per_batch,
        neighbour=settings.neighbour,
    )


def _duration_stream(duration: Duration, seed: int, index: int) -> Iterator[float]:
    """Durations of one function: fixed, or lognormal draws in blocks (one generator per function, so a
    function's draws do not depend on the others': runs that differ in one setting stay comparable)."""
    if duration.is_fixed:
        return itertools.repeat(duration.mean_seconds)
    mu, sigma = duration.lognormal_parameters()
    generator = np.random.default_rng([seed, index])

    def draws() -> Iterator[float]:
        block = _FIRST_SAMPLES_PER_DRAW
        while True:
            yield from generator.lognormal(mu, sigma, block).tolist()
            block = min(block * 2, _SAMPLES_PER_DRAW)

    return draws()


class _Run:
    """The state of one simulation; ``run`` keeps everything hot in local variables."""

    def __init__(self, workflow: Workflow, settings: PlanSettings) -> None:
        self.workflow = workflow
        self.settings = settings
        self.functions = list(workflow.functions)
        unknown = sorted((set(settings.durations) | set(settings.reserved)) - set(self.functions))
        if unknown:
            raise ValueError(
                f"not a function this workflow invokes: {', '.join(unknown)}; "
                f"its functions: {', '.join(self.functions)}"
            )

    # One long function on purpose: the event loop keeps its state in local variables, which is what
    # makes a million orders run in seconds; helpers called per event would cost as much as the events.
    def run(self) -> tuple[RunCounters, list[TimelinePoint], list[AttemptRecord]]:  # noqa: C901
        workflow, settings = self.workflow, self.settings
        steps = workflow.steps
        functions = self.functions
        function_index = {name: index for index, name in enumerate(functions)}

        # --- per step
        fn_of = [function_index[task.function] for task in steps]
        cut = [task.call_timeout_seconds for task in steps]
        compensating = [task.compensation for task in steps]

        def retry_fields(
            policy_of: str,
        ) -> tuple[list[float], list[float], list[float], list[int], list[bool]]:
            interval, rate, cap, most, jitter = [], [], [], [], []
            for task in steps:
                policy = getattr(task, policy_of)
                interval.append(policy.interval_seconds if policy else 0.0)
                rate.append(policy.backoff_rate if policy else 1.0)
                cap.append(
                    policy.max_delay_seconds if policy and policy.max_delay_seconds is not None else math.inf
                )
                most.append(policy.max_attempts if policy else 0)
                jitter.append(policy.full_jitter if policy else False)
            return interval, rate, cap, most, jitter

        thr_interval, thr_rate, thr_cap, thr_max, thr_jitter = retry_fields("throttle_retry")
        to_interval, to_rate, to_cap, to_max, to_jitter = retry_fields("timeout_retry")
        ok_next = [-1 if task.on_success.next_step is None else task.on_success.next_step for task in steps]
        defers = [task.defers for task in steps]
        last_routes = [task.on_throttle_failure_last_pass or task.on_throttle_failure for task in steps]
        second_cap = workflow.second_pass_concurrency or workflow.concurrency_limit
        ok_pay = [task.on_success.transitions for task in steps]
        write_table = writes.WRITE_UNITS_PER_CALL if settings.write_units is None else settings.write_units
        write_units = [write_table.get(task.function, 0) for task in steps]
        undo_before = []  # what compensation writes for an order that failed at each step
        undone = 0
        for task in steps:
            undo_before.append(undone if not task.compensation else 0)
            if not task.compensation and settings.write_units is None:
                undone += writes.UNDO_WRITE_UNITS.get(task.function, 0)

        # --- per function
        nf = len(functions)
        reserved_of = {task.function: task.reserved_concurrency for task in steps}
        reserved_of.update(settings.reserved)
        limit = [-1 if reserved_of.get(name) is None else int(reserved_of[name] or 0) for name in functions]
        pool = max(0, settings.account_concurrency - sum(value for value in limit if value >= 0))
        busy = [0] * nf
        envs = [settings.warm_environments] * nf
        scale_rate = settings.scaling_environments / settings.scaling_window_seconds
        scale_burst = float(settings.scaling_environments)
        scale_tokens = [scale_burst] * nf
        scale_last = [0.0] * nf
        samplers = [
            _duration_stream(settings.duration_of(name), settings.seed, index)
            for index, name in enumerate(functions)
        ]
        calls = [0] * nf
        throttles = [0] * nf
        colds = [0] * nf
        peak_of = [0] * nf
        held_seconds = [0.0] * nf
        cold_start = settings.cold_start_seconds
        overhead = settings.step_overhead_seconds

        # --- per order
        per_batch = settings.orders
        total_orders = per_batch * settings.batches
        step_of = [0] * total_orders
        thr_count = [0] * total_orders
        to_count = [0] * total_orders
        # 429s in a row on the order's current Task since its last admitted call: what spends a retrier.
        throttle_streak = [0] * total_orders
        started_at = [0.0] * total_orders
        order_seconds = [0.0] * total_orders
        next_item = [batch * per_batch for batch in range(settings.batches)]
        failed_at: dict[int, int] = {}
        # The second pass: orders set aside per batch, first-pass orders still in a batch's Map, and
        # which orders run in the second pass (their throttle exhaustion takes the last-pass route).
        deferred_of: list[list[int]] = [[] for _ in range(settings.batches)]
        first_open = [0] * settings.batches
        in_second = bytearray(total_orders)
        parked = False

        # --- Step Functions quotas
        express = workflow.distributed and workflow.child_execution_type == "EXPRESS"
        bucket_on = not express  # Express workflows are not drawn from the Standard transitions bucket
        tr_rate = settings.transitions_per_second
        tr_burst = settings.transitions_burst
        tr_tokens = tr_burst
        tr_last = 0.0
        transition_wait = 0.0
        start_rate = settings.start_executions_per_second
        start_burst = settings.start_executions_burst
        start_tokens = start_burst
        start_last = 0.0
        start_wait = 0.0
        distributed = workflow.distributed
        entry_pay = workflow.entry_transitions

        # --- counters kept as locals in the loop
        # The loop below runs once per event, millions of times for a million orders, so it
        # reads and writes plain locals. That is why a retry's wait and a failed order's routing are
        # written out for a throttle and again for a timeout: a helper would have to reach these counters
        # as closure cells or attributes, which slows every access in the loop. What both cases share
        # (a call's end freeing its slot, a move's draw on the transitions bucket) is one branch instead.
        transitions = 0
        throttle_retries = 0
        timeout_retries = 0
        timeouts = 0
        scaling_throttles = 0
        longest_throttle_streak = 0
        failed_throttled = 0
        deferred = 0
        failed_timed_out = 0
        compensation_failed = 0
        uncaught = 0
        succeeded = 0
        compensated = 0
        completed = 0
        write_total = 0
        unreserved_busy = 0
        total_busy = 0
        peak_busy = 0
        peak_account = 0
        neighbour_want = 0
        neighbour_held = 0
        makespan = 0.0

        rng = random.Random(settings.seed)
        jitter_draw = rng.random
        trace_limit = settings.trace_orders
        trace: list[AttemptRecord] = []

        heap: list[tuple[float, int]] = []
        push = heapq.heappush
        pop = heapq.heappop

        # --- the start: every batch's Map starts its first iterations at once
        concurrency = workflow.effective_concurrency(settings.max_concurrency)
        for batch in range(settings.batches):
            first = batch * per_batch
            for order in range(first, first + min(per_batch, concurrency)):
                delay = 0.0
                if distributed:
                    start_tokens = min(start_burst, start_tokens) - 1.0
                    if start_tokens < 0:
                        delay = -start_tokens / start_rate
                        start_wait += delay
                push(heap, (delay, order << 3 | _START))
            next_item[batch] = first + min(per_batch, concurrency)
            first_open[batch] = min(per_batch, concurrency)
        neighbour = settings.neighbour
        if neighbour is not None and neighbour.slots > 0:
            push(heap, (neighbour.start_seconds, _NEIGHBOUR_ARRIVES))
            if math.isfinite(neighbour.duration_seconds):
                leaves = neighbour.start_seconds + neighbour.duration_seconds
                push(heap, (leaves, _NEIGHBOUR_LEAVES))
        bound = plan_lower_bound(workflow, settings)
        points = max(10, settings.timeline_points)
        sample_every = max(bound, 1e-3) * 2 / points
        timeline: list[TimelinePoint] = []
        push(heap, (0.0, _SAMPLE))

        while heap:
            now, code = pop(heap)
            if code < 0:  # not an order; negative, so it comes first among events at the same time
                if code == _SAMPLE:
                    timeline.append(
                        TimelinePoint(now, total_busy, neighbour_held, sum(throttles), completed, transitions)
                    )
                    if len(timeline) > 2 * points:
                        del timeline[1::2]
                        sample_every *= 2
                    if completed < total_orders:
                        push(heap, (now + sample_every, code))
                elif code == _NEIGHBOUR_ARRIVES:
                    assert neighbour is not None
                    neighbour_want = neighbour.slots
                    neighbour_held = min(neighbour_want, max(0, pool - unreserved_busy))
                    peak_account = max(peak_account, total_busy + neighbour_held)
                else:
                    neighbour_want = 0
                    neighbour_held = 0
                continue
            order = code >> 3
            kind = code & 7
            advance = False
            next_step = -1
            pay = 0
            if kind <= _TIMED_OUT:  # a call ended, returned or cut off: its slot is free again
                current = step_of[order]
                fn = fn_of[current]
                busy[fn] -= 1
                total_busy -= 1
                if limit[fn] < 0:
                    unreserved_busy -= 1
                    if neighbour_held < neighbour_want:
                        neighbour_held += 1  # the neighbour keeps calling and takes the freed slot
                if kind == _DONE:
                    write_total += write_units[current]
                    if compensating[current] and order in failed_at:
                        write_total += undo_before[failed_at.pop(order)]
                    next_step = ok_next[current]
                    pay = ok_pay[current]
                    if next_step < 0:
                        if compensating[current]:
                            compensated += 1
                        else:
                            succeeded += 1
                    advance = True
                else:  # _TIMED_OUT
                    timeouts += 1
                    attempt = to_count[order] + 1
                    if attempt <= to_max[current]:
                        to_count[order] = attempt
                        wait = to_interval[current] * to_rate[current] ** (attempt - 1)
                        if wait > to_cap[current]:
                            wait = to_cap[current]
                        if to_jitter[current]:
                            wait *= jitter_draw()
                        timeout_retries += 1
                        push(heap, (now + wait, order << 3 | _RETRY))
                        continue
                    route = steps[current].on_timeout_failure
                    if compensating[current]:
                        compensation_failed += 1
                    else:
                        failed_timed_out += 1
                        failed_at[order] = current
                    uncaught += not route.caught
                    next_step = -1 if route.next_step is None else route.next_step
                    pay = route.transitions
                    advance = True
            elif kind == _RETRY:
                transitions += 1
                if bucket_on:
                    tr_tokens += (now - tr_last) * tr_rate
                    if tr_tokens > tr_burst:
                        tr_tokens = tr_burst
                    tr_last = now
                    tr_tokens -= 1
                    if tr_tokens < 0:
                        delay = -tr_tokens / tr_rate
                        transition_wait += delay
                        push(heap, (now + delay, order << 3 | _CALL))
                        continue
            elif kind == _CALL:
                pass
            else:  # _START
                started_at[order] = now
                next_step = 0
                pay = entry_pay
                advance = True

            # Move the order on (when ``advance``), then call its Task, until it waits for an event.
            while True:
                if advance:
                    calls_now = True  # the order (or the batch's next one) calls its Task after this
                    if next_step >= 0:
                        step_of[order] = next_step
                        thr_count[order] = 0
                        to_count[order] = 0
                        throttle_streak[order] = 0
                    else:
                        # The order is finished (or set aside); its Map slot goes to the batch's next item.
                        batch = order // per_batch
                        if parked:
                            parked = False
                            deferred_of[batch].append(order)
                        else:
                            completed += 1
                            order_seconds[order] = now - started_at[order]
                            makespan = now
                        if in_second[order]:
                            # A second-pass order is done: the next deferred one takes its place.
                            if deferred_of[batch]:
                                resumed = deferred_of[batch].pop(0)
                                in_second[resumed] = 1
                                thr_count[resumed] = to_count[resumed] = throttle_streak[resumed] = 0
                                pay += 2  # the second pass's way in, and the Task again
                                push(heap, (now + overhead, resumed << 3 | _CALL))
                            transitions += pay
                            break
                        first_open[batch] -= 1
                        following = next_item[batch]
                        delayed_start = 0.0
                        if following >= (batch + 1) * per_batch and not first_open[batch]:
                            # The batch's first pass is over: its deferred orders run again.
                            for resumed in deferred_of[batch][:second_cap]:
                                in_second[resumed] = 1
                                thr_count[resumed] = to_count[resumed] = throttle_streak[resumed] = 0
                                pay += 2
                                push(heap, (now + overhead, resumed << 3 | _CALL))
                            del deferred_of[batch][:second_cap]
                        if following < (batch + 1) * per_batch:
                            first_open[batch] += 1
                            next_item[batch] = following + 1
                            order = following
                            if distributed:
                                start_tokens += (now - start_last) * start_rate
                                if start_tokens > start_burst:
                                    start_tokens = start_burst
                                start_last = now
                                start_tokens -= 1
                                if start_tokens < 0:
                                    delayed_start = -start_tokens / start_rate
                        if following < (batch + 1) * per_batch and delayed_start <= 0:
                            started_at[order] = now
                            step_of[order] = 0
                            # The finished order's last states and the new one's first, drawn together.
                            pay += entry_pay
                        else:
                            calls_now = False  # only the finished order's last states to draw now
                    transitions += pay
                    delay = overhead
                    if bucket_on:
                        tr_tokens += (now - tr_last) * tr_rate
                        if tr_tokens > tr_burst:
                            tr_tokens = tr_burst
                        tr_last = now
                        tr_tokens -= pay
                        if tr_tokens < 0 and calls_now:
                            waited = -tr_tokens / tr_rate
                            transition_wait += waited
                            delay += waited
                    if not calls_now:
                        if delayed_start > 0:
                            start_wait += delayed_start
                            push(heap, (now + delayed_start, order << 3 | _START))
                        break
                    if delay > 0:
                        push(heap, (now + delay, order << 3 | _CALL))
                        break

                # Call the order's current Task.
                current = step_of[order]
                fn = fn_of[current]
                cap = limit[fn]
                # A reserved function draws on its own reservation, the others on the unreserved pool.
                admitted = busy[fn] < cap if cap >= 0 else unreserved_busy + neighbour_held < pool
                init = 0.0
                if admitted and busy[fn] >= envs[fn]:
                    tokens = scale_tokens[fn] + (now - scale_last[fn]) * scale_rate
                    if tokens > scale_burst:
                        tokens = scale_burst
                    scale_last[fn] = now
                    if tokens < 1.0:
                        scale_tokens[fn] = tokens
                        admitted = False
                        scaling_throttles += 1
                    else:
                        scale_tokens[fn] = tokens - 1.0
                        envs[fn] += 1
                        colds[fn] += 1
                        init = cold_start
                if order < trace_limit:
                    trace.append(AttemptRecord(order, steps[current].state_name, now, admitted))
                if admitted:
                    throttle_streak[order] = 0
                    busy[fn] += 1
                    if busy[fn] > peak_of[fn]:
                        peak_of[fn] = busy[fn]
                    if cap < 0:
                        unreserved_busy += 1
                    total_busy += 1
                    if total_busy > peak_busy:
                        peak_busy = total_busy
                    if total_busy + neighbour_held > peak_account:
                        peak_account = total_busy + neighbour_held
                    calls[fn] += 1
                    work = next(samplers[fn])
                    if work > cut[current]:
                        held = init + cut[current]
                        push(heap, (now + held, order << 3 | _TIMED_OUT))
                    else:
                        held = init + work
                        push(heap, (now + held, order << 3 | _DONE))
                    held_seconds[fn] += held
                    break
                throttles[fn] += 1
                streak = throttle_streak[order] + 1
                throttle_streak[order] = streak
                if streak > longest_throttle_streak:
                    longest_throttle_streak = streak
                attempt = thr_count[order] + 1
                if attempt <= thr_max[current]:
                    thr_count[order] = attempt
                    wait = thr_interval[current] * thr_rate[current] ** (attempt - 1)
                    if wait > thr_cap[current]:
                        wait = thr_cap[current]
                    if thr_jitter[current]:
                        wait *= jitter_draw()
                    throttle_retries += 1
                    push(heap, (now + wait, order << 3 | _RETRY))
                    break
                # Retries spent (or none for 429s): the Task's Catch decides where the order goes.
                if defers[current] and not in_second[order]:
                    # Set aside at this step for the second pass (no compensation, nothing failed yet).
                    deferred += 1
                    parked = True
                    next_step = -1
                    pay = steps[current].on_throttle_failure.transitions
                    advance = True
                    continue
                route = last_routes[current] if in_second[order] else steps[current].on_throttle_failure
                if compensating[current]:
                    compensation_failed += 1
                else:
                    failed_throttled += 1
                    failed_at[order] = current
                uncaught += not route.caught
                next_step = -1 if route.next_step is None else route.next_step
                pay = route.transitions
                advance = True

        if completed != total_orders:
            raise RuntimeError(f"simulation ended with {total_orders - completed} orders unfinished")
        timeline.append(
            TimelinePoint(makespan, total_busy, neighbour_held, sum(throttles), completed, transitions)
        )
        counters = RunCounters(
            functions=tuple(functions),
            memory_mb=tuple(
                next(task.memory_mb for task in steps if task.function == name) for name in functions
            ),
            reserved=tuple(None if value < 0 else value for value in limit),
            unreserved_pool=pool,
            calls=tuple(calls),
            throttles=tuple(throttles),
            cold_starts=tuple(colds),
            peak_concurrency=tuple(peak_of),
            held_seconds=tuple(held_seconds),
            environments=tuple(envs),
            orders=total_orders,
            succeeded=succeeded,
            compensated=compensated,
            failed_throttled=failed_throttled,
            deferred=deferred,
            failed_timed_out=failed_timed_out,
            compensation_failed=compensation_failed,
            uncaught=uncaught,
            makespan_seconds=makespan,
            transitions=transitions,
            throttle_retries=throttle_retries,
            timeout_retries=timeout_retries,
            timeouts=timeouts,
            scaling_throttles=scaling_throttles,
            longest_throttle_streak=longest_throttle_streak,
            peak_busy=peak_busy,
            peak_account=peak_account,
            transition_wait_seconds=transition_wait,
            start_execution_wait_seconds=start_wait,
            write_units=write_total,
            order_seconds=order_seconds,
        )
        return counters, timeline, trace
