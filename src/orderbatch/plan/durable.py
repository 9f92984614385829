"""The batch as a Lambda durable function, in virtual time, on the same quotas and loads as the state machine.

``simulate_durable(workflow, PlanSettings(orders=200, account_concurrency=10))`` runs what
``DurableOrderBatchFunction`` does (docs/architecture.md, "Durable functions") and returns a
``DurableResult`` with the same figures as a Step Functions plan: makespan against the bound, 429s per
order, failed orders and the cost per million orders, plus what only a durable execution has: orchestrator
invocations (replays), their own 429s, durable operations and checkpoint data.

The model, and where each part comes from:

- **Replays** (the Developer Guide's "Durable execution SDK" and "Lambda durable functions" pages,
  https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk.html): an execution runs as a
  sequence of invocations of the orchestrator function; each replays the checkpointed operations from the
  start, runs until every order in flight waits on a chained invoke or a wait, and suspends (no compute
  while suspended). The service invokes it again when an invoke or a wait completes. Completions that
  arrive while an invocation runs are seen by the next one, so a replay handles a whole wave of them.
- **The orchestrator is a Lambda invocation too**: it takes a slot of the account quota for its replay
  time, and with no slot left it is throttled like any invocation. The service starts it as an
  asynchronous invocation, which Lambda retries after a throttle with exponential backoff from 1 s up to
  5 min ("Asynchronous invocation": https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html);
  that AWS retries a durable re-invocation on this schedule is an assumption.
- **Replay time** grows with the execution's history, ``base + per_operation x operations so far``:
  ``GetDurableExecutionState`` pages through every checkpointed operation and the SDK walks them again.
  Both figures are assumptions, not measurements (DEFAULT_REPLAY_* below); measure yours on the local
  cloud's bench (``orderbatch bench --orchestrators durable``) and pass them in ``DurableModel``.
- **Invokes leave while the replay runs**: the SDK checkpoints an invoke's START synchronously and the
  service dispatches it then, so a replay's invokes meet the quota with the orchestrator's own slot still
  taken. A map max_concurrency equal to the quota therefore throttles (C - 1 task slots are left), as
  the local cloud's bench measures.
- **Chained invokes** are invocations of the task functions under the same quota (the app's design): a
  call over the quota is a 429 the service records as a failed invoke (``TooManyRequestsException``).
  The orchestrator's next replay sees it and schedules ``context.wait`` for the throttle retrier's
  backoff (the template's ``ThrottleRetry*`` parameters, full jitter); the wait's end wakes it again and
  the next replay invokes once more. A 429 therefore costs up to two replays, shared by every order in
  the same wave. Retries spent: the order is cancelled (one more invoke, retried the same way).
- **Operations** (what durable functions bill): the execution, its map, one child context per order,
  one per invoke try and one per wait, as the app checkpoints them.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass, field
from typing import Any

from orderbatch.capacity.model import DurablePrices, UnitPrices
from orderbatch.plan import writes
from orderbatch.plan.results import OrchestratorResult
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.simulator import _duration_stream, lower_bound_at_concurrency
from orderbatch.plan.workflow import TaskStep, Workflow

# Assumptions to replace with a measurement: one replay's fixed cost (start, GetDurableExecutionState's
# first page, the handler's own code) and its cost per checkpointed operation in the history.
DEFAULT_REPLAY_BASE_SECONDS = 0.1
DEFAULT_REPLAY_PER_OPERATION_SECONDS = 0.0002
# Lambda retries a throttled asynchronous invocation from 1 s, doubling, up to 5 minutes (invocation-async).
ORCHESTRATOR_RETRY_FIRST_SECONDS = 1.0
ORCHESTRATOR_RETRY_CAP_SECONDS = 300.0
# The durable execution SDKs' limit on operations in one execution (docs/architecture.md).
OPERATIONS_PER_EXECUTION_LIMIT = 25_000
# An assumption: an invoke checkpoints the order (about 0.5 KB) in and its order state out; a wait or a
# context a few hundred bytes. 1 KB per operation on average.
DEFAULT_CHECKPOINT_KB_PER_OPERATION = 1.0
# The template's DurableExecutionRetentionDays default.
DEFAULT_RETENTION_DAYS = 7
# Operations every execution checkpoints once: the execution and its map.
EXECUTION_OPERATIONS = 2

_TASK_DONE = 0
_WAIT_DONE = 1
_ORCHESTRATOR_TRY = 2
_ORCHESTRATOR_END = 3
_SERVICE_RETRY = 4


@dataclass(frozen=True)
class DurableModel:
    """What the durable model assumes beyond the load and the account (``PlanSettings``)."""

    replay_base_seconds: float = DEFAULT_REPLAY_BASE_SECONDS
    replay_per_operation_seconds: float = DEFAULT_REPLAY_PER_OPERATION_SECONDS
    orchestrator_memory_mb: int = 256
    """DurableOrderBatchFunction's memory (the template's Globals)."""
    checkpoint_kb_per_operation: float = DEFAULT_CHECKPOINT_KB_PER_OPERATION
    retention_days: float = DEFAULT_RETENTION_DAYS
    service_retries_chained_throttles: bool = False
    """Where a 429 on a chained invoke goes. False: to the orchestrator at once, as a failed invoke its
    retrier turns into a wait (what the app is written for; AWS does not document which). True: the
    service retries the invoke itself (1 s doubling to 5 min, full jitter, without limit here) and the
    orchestrator never sees it, as the local cloud does (sam_local_cloud.lambda_service.durable)."""

    def __post_init__(self) -> None:
        if min(self.replay_base_seconds, self.replay_per_operation_seconds) < 0:
            raise ValueError("replay times cannot be negative")
        if (
            self.orchestrator_memory_mb <= 0
            or self.checkpoint_kb_per_operation < 0
            or self.retention_days < 0
        ):
            raise ValueError("memory must be positive; checkpoint size and retention cannot be negative")

    def to_json(self) -> dict[str, Any]:
        return {
            "replay_base_seconds": self.replay_base_seconds,
            "replay_per_operation_seconds": self.replay_per_operation_seconds,
            "orchestrator_memory_mb": self.orchestrator_memory_mb,
            "checkpoint_kb_per_operation": self.checkpoint_kb_per_operation,
            "retention_days": self.retention_days,
            "service_retries_chained_throttles": self.service_retries_chained_throttles,
        }


@dataclass(frozen=True)
class DurableCounters:
    orders: int
    succeeded: int
    compensated: int
    failed_throttled: int
    compensation_failed: int
    makespan_seconds: float
    longest_throttle_streak: int
    """The most 429s any order met in a row on one step (its retrier's attempts + 1 when spent)."""
    task_calls: int
    task_throttles: int
    task_gb_seconds: float
    orchestrator_invocations: int
    orchestrator_throttles: int
    orchestrator_seconds: float
    waits: int
    operations: int
    max_operations_per_execution: int
    cold_starts: int
    peak_concurrency: int
    write_units: int
    execution_seconds: list[float] = field(repr=False)
    deferred: int = 0
    """Orders set aside when their throttle retrier ran out, run again by the second pass."""


@dataclass(frozen=True)
class DurableResult(OrchestratorResult):
    settings: PlanSettings
    model: DurableModel
    counters: DurableCounters
    bound_seconds: float
    max_concurrency: int
    unit_prices: UnitPrices
    wall_seconds: float
    label: str = ""

    @property
    def orchestrator(self) -> str:
        return "durable"

    @property
    def failed_orders(self) -> int:
        return self.counters.failed_throttled

    @property
    def throttles(self) -> int:
        """Every 429: the task functions' and the orchestrator's own."""
        return self.counters.task_throttles + self.counters.orchestrator_throttles

    @property
    def replays_per_order(self) -> float:
        return self.counters.orchestrator_invocations / self.orders

    @property
    def operations_per_order(self) -> float:
        return self.counters.operations / self.orders

    @property
    def lambda_gb_seconds(self) -> float:
        return self.counters.task_gb_seconds + (
            self.counters.orchestrator_seconds * self.model.orchestrator_memory_mb / 1024
        )

    @property
    def cost_per_million_orders(self) -> dict[str, float]:
        counters = self.counters
        return durable_cost(
            orders=counters.orders,
            requests=counters.task_calls + counters.orchestrator_invocations,
            gb_seconds=self.lambda_gb_seconds,
            write_units=counters.write_units,
            operations=counters.operations,
            model=self.model,
            prices=self.unit_prices,
        )

    @property
    def over_operations_limit(self) -> bool:
        return self.counters.max_operations_per_execution > OPERATIONS_PER_EXECUTION_LIMIT

    def to_json(self) -> dict[str, Any]:
        counters = self.counters
        return {
            "label": self.label,
            "orchestrator": "durable",
            "settings": self.settings.to_json(),
            "model": self.model.to_json(),
            "max_concurrency": self.max_concurrency,
            "makespan_seconds": round(self.makespan_seconds, 3),
            "lower_bound_seconds": round(self.bound_seconds, 3),
            "bound_ratio": None if self.bound_ratio is None else round(self.bound_ratio, 4),
            "orders": {
                "total": counters.orders,
                "succeeded": counters.succeeded,
                "failed_after_429_retries": counters.failed_throttled,
                "compensated": counters.compensated,
                "compensation_failed": counters.compensation_failed,
            },
            "lambda": {
                "quota": self.settings.account_concurrency,
                "task_calls": counters.task_calls,
                "task_throttles": counters.task_throttles,
                "orchestrator_invocations": counters.orchestrator_invocations,
                "orchestrator_throttles": counters.orchestrator_throttles,
                "orchestrator_seconds": round(counters.orchestrator_seconds, 3),
                "replays_per_order": round(self.replays_per_order, 4),
                "throttles_per_order": round(self.throttles_per_order, 4),
                "cold_starts": counters.cold_starts,
                "peak_concurrency": counters.peak_concurrency,
                "gb_seconds": round(self.lambda_gb_seconds, 3),
            },
            "durable": {
                "operations": counters.operations,
                "operations_per_order": round(self.operations_per_order, 4),
                "waits": counters.waits,
                "max_operations_per_execution": counters.max_operations_per_execution,
                "operations_limit": OPERATIONS_PER_EXECUTION_LIMIT,
                "over_operations_limit": self.over_operations_limit,
            },
            "dynamodb": {"write_units": counters.write_units},
            "cost_per_million_orders": self.cost_per_million_orders,
            "unit_prices": self.unit_prices.to_dict(),
            "simulation_wall_seconds": round(self.wall_seconds, 3),
        }


def durable_cost(
    *,
    orders: int,
    requests: int,
    gb_seconds: float,
    write_units: int,
    operations: int,
    model: DurableModel,
    prices: UnitPrices,
) -> dict[str, float]:
    """Dollars per million orders: Lambda (tasks and replays), DynamoDB, and durable functions' own charges
    (operations, checkpoint data written, and that data retained for ``retention_days``)."""
    durable: DurablePrices = prices.durable
    scale = 1_000_000 / orders
    lambda_cost = (requests * prices.lambda_per_request + gb_seconds * prices.lambda_per_gb_second) * scale
    dynamodb_cost = write_units * prices.dynamodb_per_write_unit * scale
    written_gb = operations * model.checkpoint_kb_per_operation / (1024 * 1024)
    durable_cost = (
        operations * durable.per_operation
        + written_gb * durable.per_gb_written
        + written_gb * model.retention_days / 30 * durable.per_gb_month_retained
    ) * scale
    return {
        "lambda": round(lambda_cost, 2),
        "dynamodb": round(dynamodb_cost, 2),
        "durable_functions": round(durable_cost, 2),
        "total_durable": round(lambda_cost + dynamodb_cost + durable_cost, 2),
    }


def durable_max_concurrency(workflow: Workflow, settings: PlanSettings) -> int:
    """The durable map's max_concurrency: the override, else the template's MapMaxConcurrency (the
    function reads the same parameter); no inline-Map cap of 40 applies to ``context.map``."""
    configured = (
        settings.max_concurrency if settings.max_concurrency is not None else workflow.max_concurrency
    )
    if configured is None or configured <= 0:
        return settings.orders
    return configured


def durable_lower_bound(workflow: Workflow, settings: PlanSettings) -> float:
    """The same physical bound as the state machine's: max(N.k.d / capacity, k.d) over all batches."""
    return lower_bound_at_concurrency(workflow, settings, durable_max_concurrency(workflow, settings))


class OperationsLimitError(ValueError):
    """A batch too large for one durable execution."""


def minimum_operations(orders: int, steps: int) -> int:
    """Operations one execution of ``orders`` orders checkpoints at the least (no retry, no failure)."""
    return EXECUTION_OPERATIONS + orders * (1 + steps)


def simulate_durable(
    workflow: Workflow,
    settings: PlanSettings,
    model: DurableModel | None = None,
    prices: UnitPrices | None = None,
) -> DurableResult:
    """Run ``settings.batches`` durable executions of ``settings.orders`` orders each (module doc).

    Raises OperationsLimitError when one batch needs more operations than an execution may hold: such
    a batch cannot run as one durable execution, and its replays would not be a plan of anything real.
    """
    needed = minimum_operations(settings.orders, len(workflow.forward))
    if needed > OPERATIONS_PER_EXECUTION_LIMIT:
        largest = (OPERATIONS_PER_EXECUTION_LIMIT - EXECUTION_OPERATIONS) // (1 + len(workflow.forward))
        raise OperationsLimitError(
            f"a durable execution of {settings.orders:,} orders checkpoints at least {needed:,} operations, "
            f"over the {OPERATIONS_PER_EXECUTION_LIMIT:,} one execution may hold; plan it as --batches of "
            f"at most {largest:,} orders"
        )
    model = model or DurableModel()
    started = time.perf_counter()
    counters = _DurableRun(workflow, settings, model).run()
    return DurableResult(
        settings=settings,
        model=model,
        counters=counters,
        bound_seconds=durable_lower_bound(workflow, settings),
        max_concurrency=durable_max_concurrency(workflow, settings),
        unit_prices=prices or UnitPrices(),
        wall_seconds=time.perf_counter() - started,
    )


class _DurableRun:
    """One simulation. Orders are global indexes; batch b owns orders [b.N, (b+1).N)."""

    def __init__(self, workflow: Workflow, settings: PlanSettings, model: DurableModel) -> None:
        self.settings = settings
        self.model = model
        self.forward: tuple[TaskStep, ...] = workflow.forward
        cancel = [step for step in workflow.compensation if step.function == "CancelOrderFunction"]
        self.cancel: TaskStep | None = cancel[0] if cancel else (workflow.compensation or (None,))[0]
        self.max_concurrency = durable_max_concurrency(workflow, settings)
        # The durable function runs the state machine's second pass when the template has one.
        self.second_pass = workflow.second_pass_map is not None
        self.second_pass_concurrency = workflow.second_pass_concurrency or self.max_concurrency
        functions = [step.function for step in (*self.forward, *([self.cancel] if self.cancel else []))]
        self.functions = list(dict.fromkeys(functions))
        self.samplers = {
            name: _duration_stream(settings.duration_of(name), settings.seed, index)
            for index, name in enumerate(self.functions)
        }
        self.memory = {step.function: step.memory_mb for step in workflow.steps}
        self.rng = random.Random(settings.seed)
        self.heap: list[tuple[float, int, int, int]] = []
        self.sequence = 0
        # the account
        self.busy = 0
        self.peak = 0
        self.environments = {name: settings.warm_environments for name in (*self.functions, "orchestrator")}
        self.running = {name: 0 for name in (*self.functions, "orchestrator")}
        # per order
        total = settings.orders * settings.batches
        self.step_of = [0] * total
        self.compensating = [False] * total
        self.throttle_retries = [0] * total
        self.service_retries = [0] * total
        self.in_second_pass = [False] * total
        # per batch
        batches = settings.batches
        self.inbox: list[list[tuple[int, int]]] = [[] for _ in range(batches)]
        self.state = ["idle"] * batches
        self.orchestrator_attempts = [0] * batches
        self.operations = [EXECUTION_OPERATIONS] * batches
        self.next_item = [batch * settings.orders for batch in range(batches)]
        self.finished = [0] * batches
        self.ended_at = [0.0] * batches
        self.started_map = [False] * batches
        self.first_pass_open = [0] * batches
        self.set_aside: list[list[int]] = [[] for _ in range(batches)]
        # counters
        self.succeeded = self.compensated = self.failed = self.compensation_failed = self.deferred = 0
        self.task_calls = self.task_throttles = self.waits = self.cold_starts = self.write_units = 0
        self.orchestrator_invocations = self.orchestrator_throttles = 0
        self.longest_throttle_streak = 0
        self.task_gb_seconds = self.orchestrator_seconds = 0.0
        self.done_before: list[int] = [0] * total

    # --- the account quota

    def _capacity(self, now: float) -> int:
        neighbour = self.settings.neighbour
        held = 0
        if (
            neighbour is not None
            and neighbour.start_seconds <= now < neighbour.start_seconds + neighbour.duration_seconds
        ):
            held = neighbour.slots
        return max(0, self.settings.account_concurrency - held)

    def _take_slot(self, now: float, function: str) -> float | None:
        """A slot for one invocation of ``function``: its init time (0 when warm), or None (a 429)."""
        if self.busy >= self._capacity(now):
            return None
        self.busy += 1
        self.peak = max(self.peak, self.busy)
        self.running[function] += 1
        if self.running[function] > self.environments[function]:
            self.environments[function] += 1
            self.cold_starts += 1
            return self.settings.cold_start_seconds
        return 0.0

    def _release_slot(self, function: str) -> None:
        self.busy -= 1
        self.running[function] -= 1

    def _push(self, at: float, kind: int, subject: int) -> None:
        self.sequence += 1
        heapq.heappush(self.heap, (at, self.sequence, kind, subject))

    # --- the orchestrator

    def _wake(self, batch: int, now: float) -> None:
        if self.state[batch] == "idle":
            self.state[batch] = "pending"
            self._push(now, _ORCHESTRATOR_TRY, batch)

    def _try_orchestrator(self, batch: int, now: float) -> None:
        init = self._take_slot(now, "orchestrator")
        if init is None:
            self.orchestrator_throttles += 1
            self.orchestrator_attempts[batch] += 1
            wait = min(
                ORCHESTRATOR_RETRY_CAP_SECONDS,
                ORCHESTRATOR_RETRY_FIRST_SECONDS * 2 ** (self.orchestrator_attempts[batch] - 1),
            )
            self._push(now + wait, _ORCHESTRATOR_TRY, batch)
            return
        self.orchestrator_attempts[batch] = 0
        self.orchestrator_invocations += 1
        self.state[batch] = "running"
        replay = (
            self.model.replay_base_seconds + self.model.replay_per_operation_seconds * self.operations[batch]
        )
        self.orchestrator_seconds += init + replay
        self._push(now + init + replay, _ORCHESTRATOR_END, batch)

    def _end_orchestrator(self, batch: int, now: float) -> None:
        """The replay dispatches what it decided while it still runs (the SDK checkpoints an invoke's START
        synchronously and the service invokes the target at once), then suspends and frees its slot."""
        self.state[batch] = "idle"
        seen, self.inbox[batch] = self.inbox[batch], []
        to_invoke: list[int] = []
        if not self.started_map[batch]:
            self.started_map[batch] = True
            first = batch * self.settings.orders
            count = min(self.settings.orders, self.max_concurrency)
            self.next_item[batch] = first + count
            self.first_pass_open[batch] = count
            for order in range(first, first + count):
                self.operations[batch] += 1  # the order's child context
                to_invoke.append(order)
        for kind, order in seen:
            if kind == _TASK_DONE:
                self._advance(batch, order, to_invoke, now)
            elif kind == _WAIT_DONE:
                to_invoke.append(order)
            else:  # a 429 on the order's invoke
                self._after_throttle(batch, order, to_invoke, now)
        for order in to_invoke:
            self._invoke(batch, order, now)
        self._release_slot("orchestrator")
        if self.inbox[batch]:
            self._wake(batch, now)
        if self.finished[batch] == self.settings.orders:
            self.ended_at[batch] = now

    def _step(self, order: int) -> TaskStep:
        if self.compensating[order]:
            assert self.cancel is not None
            return self.cancel
        return self.forward[self.step_of[order]]

    def _advance(self, batch: int, order: int, to_invoke: list[int], now: float) -> None:
        self.throttle_retries[order] = 0
        if self.compensating[order]:
            self.compensated += 1
            self._finish(batch, order, to_invoke)
            return
        self.step_of[order] += 1
        if self.step_of[order] < len(self.forward):
            to_invoke.append(order)
            return
        self.succeeded += 1
        self._finish(batch, order, to_invoke)

    def _after_throttle(self, batch: int, order: int, to_invoke: list[int], now: float) -> None:
        step = self._step(order)
        policy = step.throttle_retry
        retry = self.throttle_retries[order] + 1
        self.longest_throttle_streak = max(self.longest_throttle_streak, retry)
        if policy is not None and retry <= policy.max_attempts:
            self.throttle_retries[order] = retry
            self.waits += 1
            self.operations[batch] += 1  # the backoff's wait
            self._push(now + policy.wait_seconds(retry, self.rng), _WAIT_DONE, order)
            return
        self.throttle_retries[order] = 0
        if self.second_pass and not self.in_second_pass[order]:
            # Set aside at this step; the second pass runs it again once the batch's first pass is over.
            self.deferred += 1
            self.set_aside[batch].append(order)
            self._leave_first_pass(batch, to_invoke)
            return
        if self.compensating[order] or self.cancel is None:
            self.compensation_failed += self.compensating[order]
            self.failed += not self.compensating[order]
            self._finish(batch, order, to_invoke)
            return
        self.failed += 1
        self.done_before[order] = self.step_of[order]
        self.compensating[order] = True
        to_invoke.append(order)

    def _finish(self, batch: int, order: int, to_invoke: list[int]) -> None:
        """The order's branch is over; the map's freed place goes to the batch's next order."""
        self.finished[batch] += 1
        if self.in_second_pass[order]:
            self._resume_set_aside(batch, to_invoke, 1)
            return
        self._leave_first_pass(batch, to_invoke)

    def _leave_first_pass(self, batch: int, to_invoke: list[int]) -> None:
        self.first_pass_open[batch] -= 1
        following = self.next_item[batch]
        if following < (batch + 1) * self.settings.orders:
            self.next_item[batch] = following + 1
            self.first_pass_open[batch] += 1
            self.operations[batch] += 1
            to_invoke.append(following)
        elif not self.first_pass_open[batch]:
            self._resume_set_aside(batch, to_invoke, self.second_pass_concurrency)

    def _resume_set_aside(self, batch: int, to_invoke: list[int], count: int) -> None:
        """Start up to ``count`` set-aside orders in the second pass, at the step where they stopped."""
        waiting = self.set_aside[batch]
        for order in waiting[:count]:
            self.in_second_pass[order] = True
            self.operations[batch] += 1  # the order's child context in the second map
            to_invoke.append(order)
        del waiting[:count]

    def _invoke(self, batch: int, order: int, now: float, *, new_operation: bool = True) -> None:
        step = self._step(order)
        if new_operation:
            self.operations[batch] += 1  # each try is its own invoke operation
            self.service_retries[order] = 0
        init = self._take_slot(now, step.function)
        if init is None:
            self.task_throttles += 1
            if self.model.service_retries_chained_throttles:
                self.service_retries[order] += 1
                ceiling = min(
                    ORCHESTRATOR_RETRY_CAP_SECONDS,
                    ORCHESTRATOR_RETRY_FIRST_SECONDS * 2 ** (self.service_retries[order] - 1),
                )
                self._push(now + self.rng.random() * ceiling, _SERVICE_RETRY, order)
                return
            self.inbox[batch].append((-1, order))
            self._wake(batch, now)
            return
        self.task_calls += 1
        held = init + next(self.samplers[step.function])
        self.task_gb_seconds += held * self.memory[step.function] / 1024
        self._push(now + held, _TASK_DONE, order)

    def _write_units_of(self, order: int) -> int:
        step = self._step(order)
        units = (
            self.settings.write_units
            if self.settings.write_units is not None
            else writes.WRITE_UNITS_PER_CALL
        )
        total = units.get(step.function, 0)
        if self.compensating[order] and self.settings.write_units is None:
            total += sum(
                writes.UNDO_WRITE_UNITS.get(s.function, 0) for s in self.forward[: self.done_before[order]]
            )
        return total

    def run(self) -> DurableCounters:
        settings = self.settings
        for batch in range(settings.batches):
            self._wake(batch, 0.0)
        heap = self.heap
        while heap:
            now, _, kind, subject = heapq.heappop(heap)
            if kind == _TASK_DONE:
                order = subject
                self._release_slot(self._step(order).function)
                self.write_units += self._write_units_of(order)
                batch = order // settings.orders
                self.inbox[batch].append((_TASK_DONE, order))
                self._wake(batch, now)
            elif kind == _WAIT_DONE:
                batch = subject // settings.orders
                self.inbox[batch].append((_WAIT_DONE, subject))
                self._wake(batch, now)
            elif kind == _SERVICE_RETRY:
                self._invoke(subject // settings.orders, subject, now, new_operation=False)
            elif kind == _ORCHESTRATOR_TRY:
                self._try_orchestrator(subject, now)
            else:
                self._end_orchestrator(subject, now)
        unfinished = settings.orders * settings.batches - sum(self.finished)
        if unfinished:
            raise RuntimeError(f"durable simulation ended with {unfinished} orders unfinished")
        return DurableCounters(
            orders=settings.orders * settings.batches,
            succeeded=self.succeeded,
            compensated=self.compensated,
            failed_throttled=self.failed,
            compensation_failed=self.compensation_failed,
            makespan_seconds=max(self.ended_at),
            longest_throttle_streak=self.longest_throttle_streak,
            task_calls=self.task_calls,
            task_throttles=self.task_throttles,
            task_gb_seconds=self.task_gb_seconds,
            orchestrator_invocations=self.orchestrator_invocations,
            orchestrator_throttles=self.orchestrator_throttles,
            orchestrator_seconds=self.orchestrator_seconds,
            waits=self.waits,
            operations=sum(self.operations),
            max_operations_per_execution=max(self.operations),
            cold_starts=self.cold_starts,
            peak_concurrency=self.peak,
            write_units=self.write_units,
            execution_seconds=list(self.ended_at),
            deferred=self.deferred,
        )
