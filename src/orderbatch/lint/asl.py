"""Amazon States Language, read for throttle safety: Lambda Tasks, Maps, retriers and demand.

Works on JSONPath and JSONata definitions alike; anything it cannot resolve to a number (a
``*Path`` field, a JSONata expression, an unknown substitution) is reported as unknown, never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orderbatch.lint.template_model import (
    LambdaFunction,
    StateMachine,
    function_reference,
)
from sam_local_cloud.aws_limits import (
    DISTRIBUTED_MAP_CONCURRENCY_LIMIT,
    INLINE_MAP_CONCURRENCY_LIMIT,
)

IN_PROGRESS_ERROR = "IdempotencyAlreadyInProgressError"
CATCH_ALL_ERRORS = ("States.ALL", "States.TaskFailed")

# ASL retrier defaults (Developer Guide, "Handling errors").
DEFAULT_INTERVAL_SECONDS = 1.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_RATE = 2.0


_LAMBDA_INVOKE = re.compile(
    r"^arn:(?:aws[a-z-]*|\$\{AWS::Partition\}):states:::lambda:invoke(?P<callback>\.waitForTaskToken)?$"
)
_FUNCTION_ARN = re.compile(r"^arn:[^:]+:lambda:[^:]*:[^:]*:function:")

AslPath = tuple[str | int, ...]


def format_path(path: AslPath) -> str:
    return "/".join(str(part) for part in path)


@dataclass(frozen=True)
class MapState:
    name: str
    path: AslPath
    state: Mapping[str, Any]
    distributed: bool
    max_concurrency: int | None
    """The configured limit; None when unset or 0 (no limit) or when it cannot be known."""
    dynamic: bool
    """MaxConcurrency comes from the input (MaxConcurrencyPath, JSONata) or an unresolvable value."""

    @property
    def unbounded(self) -> bool:
        return self.max_concurrency is None and not self.dynamic

    @property
    def worst_case_concurrency(self) -> int:
        limit = DISTRIBUTED_MAP_CONCURRENCY_LIMIT if self.distributed else INLINE_MAP_CONCURRENCY_LIMIT
        return min(self.max_concurrency, limit) if self.max_concurrency is not None else limit

    @property
    def processor_states(self) -> Mapping[str, Any]:
        processor = self.state.get("ItemProcessor") or self.state.get("Iterator") or {}
        states = processor.get("States") if isinstance(processor, Mapping) else None
        return states if isinstance(states, Mapping) else {}


@dataclass(frozen=True)
class LambdaTask:
    state_machine: StateMachine
    name: str
    path: AslPath
    state: Mapping[str, object]
    function_id: str | None
    """Logical ID of the invoked function when the template defines it."""
    function_expression: str
    waits_for_callback: bool
    enclosing_maps: tuple[MapState, ...] = field(default=())


@dataclass(frozen=True)
class Retrier:
    index: int
    errors: tuple[str, ...]
    interval_seconds: float | None
    max_attempts: int | None
    backoff_rate: float | None
    max_delay_seconds: float | None
    full_jitter: bool

    @property
    def is_catch_all(self) -> bool:
        return any(error in CATCH_ALL_ERRORS for error in self.errors)

    def matches(self, error: str) -> bool:
        if error in self.errors:
            return True
        # States.TaskFailed matches every error except States.Timeout; States.ALL matches all.
        return "States.ALL" in self.errors or (
            "States.TaskFailed" in self.errors and error != "States.Timeout"
        )

    def waits(self) -> list[float] | None:
        """The waits before each retry, without jitter (None when a field is not a known number)."""
        if self.interval_seconds is None or self.max_attempts is None or self.backoff_rate is None:
            return None
        cap = self.max_delay_seconds if self.max_delay_seconds is not None else math.inf
        return [
            min(self.interval_seconds * self.backoff_rate**attempt, cap)
            for attempt in range(self.max_attempts)
        ]

    def total_wait_seconds(self) -> float | None:
        waits = self.waits()
        return sum(waits) if waits is not None else None


def parse_retriers(state: Mapping[str, object], state_machine: StateMachine) -> list[Retrier]:
    retry = state.get("Retry")
    if not isinstance(retry, list):
        return []
    retriers = []
    for index, raw in enumerate(retry):
        if not isinstance(raw, Mapping):
            continue
        errors = raw.get("ErrorEquals")
        retriers.append(
            Retrier(
                index=index,
                errors=tuple(str(error) for error in errors) if isinstance(errors, list) else (),
                interval_seconds=_number_field(
                    raw, "IntervalSeconds", DEFAULT_INTERVAL_SECONDS, state_machine
                ),
                max_attempts=_int_field(raw, "MaxAttempts", DEFAULT_MAX_ATTEMPTS, state_machine),
                backoff_rate=_number_field(raw, "BackoffRate", DEFAULT_BACKOFF_RATE, state_machine),
                max_delay_seconds=_number_field(raw, "MaxDelaySeconds", None, state_machine),
                full_jitter=raw.get("JitterStrategy") == "FULL",
            )
        )
    return retriers


def first_matching_retrier(retriers: Sequence[Retrier], error: str) -> Retrier | None:
    """The retrier Step Functions uses for ``error``: the first whose ErrorEquals matches it."""
    return next((retrier for retrier in retriers if retrier.matches(error)), None)


def _number_field(
    raw: Mapping[str, object], key: str, default: float | None, state_machine: StateMachine
) -> float | None:
    if key not in raw:
        return default
    return state_machine.resolve_number(raw[key])


def _int_field(raw: Mapping[str, object], key: str, default: int, state_machine: StateMachine) -> int | None:
    if key not in raw:
        return default
    return state_machine.resolve_int(raw[key])


# --- walking ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateVisit:
    name: str
    path: AslPath
    state: Mapping[str, object]
    enclosing_maps: tuple[MapState, ...]


def walk_states(state_machine: StateMachine) -> Iterator[StateVisit]:
    """Every state, depth first, including those in Parallel branches and Map processors."""
    definition = state_machine.definition
    if definition is None:
        return
    yield from _walk(definition.get("States"), ("States",), (), state_machine)


def _walk(
    states: object, path: AslPath, maps: tuple[MapState, ...], state_machine: StateMachine
) -> Iterator[StateVisit]:
    if not isinstance(states, Mapping):
        return
    for name, state in states.items():
        if not isinstance(state, Mapping):
            continue
        state_path = (*path, name)
        yield StateVisit(name, state_path, state, maps)
        state_type = state.get("Type")
        if state_type == "Parallel" and isinstance(state.get("Branches"), list):
            for index, branch in enumerate(state["Branches"]):
                if isinstance(branch, Mapping):
                    branch_path = (*state_path, "Branches", index, "States")
                    yield from _walk(branch.get("States"), branch_path, maps, state_machine)
        elif state_type == "Map":
            map_state = read_map(name, state_path, state, state_machine)
            processor_key = "ItemProcessor" if "ItemProcessor" in state else "Iterator"
            yield from _walk(
                map_state.processor_states,
                (*state_path, processor_key, "States"),
                (*maps, map_state),
                state_machine,
            )


def read_map(name: str, path: AslPath, state: Mapping[str, object], state_machine: StateMachine) -> MapState:
    processor = state.get("ItemProcessor")
    config = processor.get("ProcessorConfig") if isinstance(processor, Mapping) else None
    distributed = isinstance(config, Mapping) and config.get("Mode") == "DISTRIBUTED"
    dynamic = "MaxConcurrencyPath" in state
    limit: int | None = None
    if "MaxConcurrency" in state:
        limit = state_machine.resolve_int(state["MaxConcurrency"])
        dynamic = dynamic or limit is None
    if limit == 0:  # 0 means "no limit"
        limit = None
    return MapState(name, path, state, distributed, limit, dynamic)


def lambda_tasks(
    state_machine: StateMachine, functions: Mapping[str, LambdaFunction]
) -> Iterator[LambdaTask]:
    for visit in walk_states(state_machine):
        if visit.state.get("Type") != "Task":
            continue
        task = _as_lambda_task(state_machine, visit, functions)
        if task is not None:
            yield task


def _as_lambda_task(
    state_machine: StateMachine, visit: StateVisit, functions: Mapping[str, LambdaFunction]
) -> LambdaTask | None:
    resource = visit.state.get("Resource")
    substitutions = state_machine.substitutions
    if isinstance(resource, str) and (invoke := _LAMBDA_INVOKE.match(resource)):
        arguments = visit.state.get("Parameters") or visit.state.get("Arguments") or {}
        target: object = None
        if isinstance(arguments, Mapping):
            target = arguments.get("FunctionName", arguments.get("FunctionName.$"))
        return LambdaTask(
            state_machine,
            visit.name,
            visit.path,
            visit.state,
            function_reference(target, substitutions, functions),
            _describe(target),
            waits_for_callback=bool(invoke.group("callback")),
            enclosing_maps=visit.enclosing_maps,
        )
    function_id = function_reference(resource, substitutions, functions)
    if function_id is None and not (isinstance(resource, str) and _FUNCTION_ARN.match(resource)):
        return None  # another service integration, an activity, or a target we cannot see
    return LambdaTask(
        state_machine,
        visit.name,
        visit.path,
        visit.state,
        function_id,
        _describe(resource),
        waits_for_callback=False,
        enclosing_maps=visit.enclosing_maps,
    )


def _describe(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


# --- demand -------------------------------------------------------------------------------------


@dataclass
class Demand:
    """Worst-case concurrent Lambda invocations: in total and per function (logical ID or expression)."""

    total: int = 0
    by_function: dict[str, int] = field(default_factory=dict)

    def scaled(self, factor: int) -> Demand:
        return Demand(self.total * factor, {key: value * factor for key, value in self.by_function.items()})

    def plus(self, other: Demand) -> Demand:
        merged = dict(self.by_function)
        for key, value in other.by_function.items():
            merged[key] = merged.get(key, 0) + value
        return Demand(self.total + other.total, merged)

    def peak(self, other: Demand) -> Demand:
        merged = dict(self.by_function)
        for key, value in other.by_function.items():
            merged[key] = max(merged.get(key, 0), value)
        return Demand(max(self.total, other.total), merged)


CountsInTotal = Callable[[str], bool]


def _every_function(key: str) -> bool:
    return True


def definition_demand(
    state_machine: StateMachine,
    functions: Mapping[str, LambdaFunction],
    counts: CountsInTotal = _every_function,
) -> Demand:
    """Peak concurrent Lambda invocations one execution can cause.

    ``counts`` picks the functions (by logical ID, or expression when unknown) that ``total`` adds up,
    for example only those that draw on the unreserved pool.
    """
    if state_machine.definition is None:
        return Demand()
    return states_demand(state_machine.definition.get("States"), state_machine, functions, counts)


def states_demand(
    states: object,
    state_machine: StateMachine,
    functions: Mapping[str, LambdaFunction],
    counts: CountsInTotal = _every_function,
) -> Demand:
    """States of one list run one at a time, so the list needs the most that any one state needs."""
    demand = Demand()
    if not isinstance(states, Mapping):
        return demand
    for name, state in states.items():
        if isinstance(state, Mapping):
            demand = demand.peak(_state_demand(name, state, state_machine, functions, counts))
    return demand


def _state_demand(
    name: str,
    state: Mapping[str, object],
    state_machine: StateMachine,
    functions: Mapping[str, LambdaFunction],
    counts: CountsInTotal,
) -> Demand:
    state_type = state.get("Type")
    if state_type == "Parallel":
        demand = Demand()
        branches = state.get("Branches")
        for branch in branches if isinstance(branches, list) else []:
            if isinstance(branch, Mapping):
                demand = demand.plus(states_demand(branch.get("States"), state_machine, functions, counts))
        return demand
    if state_type == "Map":
        map_state = read_map(name, (), state, state_machine)
        per_iteration = states_demand(map_state.processor_states, state_machine, functions, counts)
        return per_iteration.scaled(map_state.worst_case_concurrency)
    if state_type == "Task":
        task = _as_lambda_task(state_machine, StateVisit(name, (), state, ()), functions)
        if task is not None:
            key = task.function_id or task.function_expression
            return Demand(1 if counts(key) else 0, {key: 1})
    return Demand()


def map_iteration_demand(
    map_state: MapState,
    state_machine: StateMachine,
    functions: Mapping[str, LambdaFunction],
    counts: CountsInTotal = _every_function,
) -> Demand:
    return states_demand(map_state.processor_states, state_machine, functions, counts)
