"""What an order goes through, read from a template: a Map state, its Lambda Tasks in order, their retriers.

One ``Workflow`` per Map state that invokes Lambda. Its ``steps`` are the Lambda Tasks of the Map's
item processor: first the forward tasks an order that succeeds passes through (at a Choice, the branch
with the most Lambda Tasks to the end: business outcomes such as "out of stock" are not planned, only
throttles and timeouts), then the tasks its ``Catch`` leads to (the compensation). Every number comes
from the template: parameters (with overrides) and ``DefinitionSubstitutions`` resolved by the linter's
template model, retriers parsed by the linter's ASL reader.

A second pass: when another Map invoking Lambda follows the Map in the top-level chain (Next after Next)
and a Task's Catch for Lambda.TooManyRequestsException by name ends the order without reaching a Lambda
Task (the order is set aside, not compensated), an order whose throttle retrier runs out there is run
again by that later Map, from the same step, after the batch's other orders; there a step still
throttled goes where the Task's other failures go (its Catch for States.TaskFailed). The workflow's
``second_pass_concurrency`` is that Map's MaxConcurrency.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orderbatch.capacity.retriers import (
    DefinitionTransform,
    with_docs_retrier,
    without_second_pass,
    without_throttle_jitter,
)
from orderbatch.lint.asl import (
    LambdaTask,
    MapState,
    first_matching_retrier,
    lambda_tasks,
    parse_retriers,
    read_map,
    walk_states,
)
from orderbatch.lint.template_model import (
    LambdaFunction,
    StateMachine,
    TemplateModel,
    read_template_file,
    resolve_int,
)
from orderbatch.plan.retry import RetryPolicy
from sam_local_cloud.aws_limits import (
    DISTRIBUTED_MAP_CONCURRENCY_LIMIT,
    INLINE_MAP_CONCURRENCY_LIMIT,
    THROTTLE_ERROR,
)

# Lambda's default MemorySize when a function declares none.
DEFAULT_MEMORY_MB = 128
# A Task's own TimeoutSeconds cuts a call off with this error; a function's timeout surfaces as a
# task failure, which a retrier or catcher on States.TaskFailed matches.
TASK_TIMEOUT_ERROR = "States.Timeout"
FUNCTION_TIMEOUT_ERROR = "States.TaskFailed"

# Named retrier variants, the same rewrites as the benchmark's scenarios (orderbatch.capacity.retriers).
RETRIER_TRANSFORMS: Mapping[str, DefinitionTransform | None] = {
    "app": None,
    "docs": with_docs_retrier,
    "no-jitter": without_throttle_jitter,
    "no-second-pass": without_second_pass,
}
RETRIER_DESCRIPTIONS: Mapping[str, str] = {
    "app": "the template's retriers as written",
    "docs": "every Task's Retry replaced by AWS's 'Handle Lambda service exceptions' retrier "
    "(TooManyRequests not listed), without the second pass",
    "no-jitter": "the TooManyRequests retrier with JitterStrategy NONE",
    "no-second-pass": "the template's retriers, an order whose throttle retrier runs out compensated at once "
    "(the design before the second pass)",
}

_WHOLE_PLACEHOLDER = re.compile(r"^\$\{([^}!][^}]*)\}$")


@dataclass(frozen=True)
class Route:
    """Where an order goes after a Task: the next step (None: the order ends) and the states it enters."""

    next_step: int | None
    transitions: int
    """States entered on the way, the next Task's own entry included (each is a billed transition)."""
    caught: bool = True
    """False when a failure has no Catch: the iteration fails (and with it an inline Map)."""


@dataclass(frozen=True)
class TaskStep:
    state_name: str
    function: str
    """The invoked function's logical ID."""
    memory_mb: int
    reserved_concurrency: int | None
    call_timeout_seconds: float
    """A call is cut off after min(the function's Timeout, the Task's TimeoutSeconds)."""
    timeout_error: str
    throttle_retry: RetryPolicy | None
    """The first retrier matching Lambda.TooManyRequestsException; None: a 429 goes straight to Catch."""
    timeout_retry: RetryPolicy | None
    on_success: Route
    on_throttle_failure: Route
    on_timeout_failure: Route
    compensation: bool
    on_throttle_failure_last_pass: Route | None = None
    """In the second pass, where a step still throttled goes; None when the step defers to no later pass."""

    @property
    def defers(self) -> bool:
        """Whether an order whose throttle retrier runs out here waits for the second pass."""
        return self.on_throttle_failure_last_pass is not None


@dataclass(frozen=True)
class Workflow:
    state_machine: str
    map_state: str
    distributed: bool
    child_execution_type: str | None
    """STANDARD or EXPRESS for a Distributed Map's children; None for an inline Map."""
    max_concurrency: int | None
    """The Map's MaxConcurrency as resolved; None when unset or 0 (no limit)."""
    max_concurrency_parameter: str | None
    """The template Parameter that feeds MaxConcurrency (through DefinitionSubstitutions), if one does."""
    steps: tuple[TaskStep, ...]
    forward_tasks: int
    """k: the first ``forward_tasks`` steps are the ones every order passes through."""
    entry_transitions: int
    """States an item enters from the processor's StartAt up to its first Task, that Task included."""
    top_level_transitions: int
    """States the batch execution itself enters (around the Map) once per batch."""
    retrier: str
    parameters: Mapping[str, object]
    notes: tuple[str, ...] = ()
    second_pass_map: str | None = None
    """The later Map that runs deferred orders again (module doc), if the workflow has one."""
    second_pass_concurrency: int | None = None
    """Its MaxConcurrency as resolved; None when unset or 0 (no limit)."""

    @property
    def concurrency_limit(self) -> int:
        """What Step Functions allows at once: about 40 for an inline Map, 10,000 for a Distributed one."""
        return DISTRIBUTED_MAP_CONCURRENCY_LIMIT if self.distributed else INLINE_MAP_CONCURRENCY_LIMIT

    def effective_concurrency(self, override: int | None = None) -> int:
        configured = override if override is not None else self.max_concurrency
        if configured is None or configured <= 0:
            return self.concurrency_limit
        return min(configured, self.concurrency_limit)

    @property
    def forward(self) -> tuple[TaskStep, ...]:
        return self.steps[: self.forward_tasks]

    @property
    def compensation(self) -> tuple[TaskStep, ...]:
        return self.steps[self.forward_tasks :]

    @property
    def transitions_per_succeeded_order(self) -> int:
        """States an order that succeeds enters: the way in, and every forward Task's way on."""
        return self.entry_transitions + sum(step.on_success.transitions for step in self.forward)

    @property
    def functions(self) -> tuple[str, ...]:
        """Every invoked function once, in step order."""
        return tuple(dict.fromkeys(step.function for step in self.steps))

    @property
    def kind(self) -> str:
        if not self.distributed:
            return "inline Map"
        return f"Distributed Map, {self.child_execution_type or 'STANDARD'} children"

    def max_concurrency_setting(self) -> str:
        """How a reader changes MaxConcurrency: the template parameter if there is one, else the field."""
        if self.max_concurrency_parameter:
            return self.max_concurrency_parameter
        return f"MaxConcurrency of '{self.map_state}'"


# --- loading ------------------------------------------------------------------------------------


def load_workflow(
    template: str | Path | TemplateModel,
    *,
    parameter_overrides: Mapping[str, object] | None = None,
    retrier: str = "app",
    state_machine: str | None = None,
    map_state: str | None = None,
) -> Workflow:
    """The workflow of one Map of a template.

    Without ``map_state``, the first Distributed Map (the path for batches at scale), else the first Map
    that invokes Lambda. ``retrier`` is ``app``, ``docs`` or ``no-jitter`` (as the benchmark's scenarios).
    """
    model = template if isinstance(template, TemplateModel) else read_template_file(template)
    skipped: list[str] = []
    workflows = extract_workflows(
        model, parameter_overrides=parameter_overrides, retrier=retrier, skipped=skipped
    )
    if state_machine is not None:
        workflows = [item for item in workflows if item.state_machine == state_machine]
    if map_state is not None:
        workflows = [item for item in workflows if item.map_state == map_state]
    if not workflows:
        wanted = " ".join(filter(None, [state_machine, map_state])) or "any"
        why = f"; left out: {'; '.join(skipped)}" if skipped else ""
        raise ValueError(f"no Map state that invokes Lambda found ({wanted}){why}")
    distributed = [item for item in workflows if item.distributed]
    return distributed[0] if distributed and map_state is None else workflows[0]


def extract_workflows(
    model: TemplateModel,
    *,
    parameter_overrides: Mapping[str, object] | None = None,
    retrier: str = "app",
    skipped: list[str] | None = None,
) -> list[Workflow]:
    """Every Map state of every state machine whose item processor invokes Lambda, in definition order.

    A Map the planner cannot follow (its Lambda Tasks inside a Parallel, a Task whose function is not in
    the template, a retrier field that is not a number) is left out; with ``skipped``, the reason is
    appended there, else it is raised.
    """
    if retrier not in RETRIER_TRANSFORMS:
        raise ValueError(f"unknown retrier {retrier!r}; choose from {', '.join(RETRIER_TRANSFORMS)}")
    model = with_parameters(model, parameter_overrides or {})
    transform = RETRIER_TRANSFORMS[retrier]
    workflows = []
    for machine in model.state_machines:
        if machine.definition is None:
            continue
        if transform is not None:
            definition = transform(machine.logical_id, copy.deepcopy(dict(machine.definition)))
            machine = dataclasses.replace(machine, definition=definition)
        tasks = list(lambda_tasks(machine, model.functions))
        for visit in walk_states(machine):
            if visit.state.get("Type") != "Map":
                continue
            map_state = read_map(visit.name, visit.path, visit.state, machine)
            processor_key = "ItemProcessor" if "ItemProcessor" in visit.state else "Iterator"
            processor_path = (*map_state.path, processor_key, "States")
            # Only Tasks directly in the item processor: one in a Parallel branch is not on an order's path.
            inside = {task.name: task for task in tasks if task.path[:-1] == processor_path}
            nested = any(task.path[: len(processor_path)] == processor_path for task in tasks)
            if not inside:
                if nested and skipped is not None:
                    skipped.append(
                        f"{machine.logical_id} '{map_state.name}': its Lambda Tasks are inside a Parallel "
                        "or a nested Map, which the planner does not follow"
                    )
                continue
            try:
                workflows.append(_WorkflowReader(machine, map_state, inside, model, retrier).read())
            except ValueError as error:
                if skipped is None:
                    raise
                skipped.append(str(error))
    return workflows


def with_parameters(model: TemplateModel, overrides: Mapping[str, object]) -> TemplateModel:
    """The model as deployed with ``--parameter-overrides``: every resolution sees the new values."""
    if not overrides:
        return model
    unknown = sorted(set(overrides) - set(model.parameters))
    if unknown:
        raise ValueError(
            f"not a parameter of the template (with a default): {', '.join(unknown)}; "
            f"known: {', '.join(sorted(model.parameters))}"
        )
    parameters = {**model.parameters, **overrides}
    return TemplateModel(
        model.template_path,
        {
            name: dataclasses.replace(function, parameters=parameters)
            for name, function in model.functions.items()
        },
        tuple(dataclasses.replace(machine, parameters=parameters) for machine in model.state_machines),
        parameters,
    )


def parse_parameter_overrides(items: Sequence[str]) -> dict[str, str]:
    """``Name=Value`` pairs, as ``sam deploy --parameter-overrides`` takes them (several per item allowed)."""
    overrides: dict[str, str] = {}
    for item in items:
        for pair in item.split():
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise ValueError(f"parameter override {pair!r} is not Name=Value")
            overrides[name.strip()] = value.strip().strip("'\"")
    return overrides


# --- reading one Map ----------------------------------------------------------------------------


class _WorkflowReader:
    def __init__(
        self,
        machine: StateMachine,
        map_state: MapState,
        tasks: Mapping[str, LambdaTask],
        model: TemplateModel,
        retrier: str,
    ) -> None:
        self.machine = machine
        self.map_state = map_state
        self.states = map_state.processor_states
        self.tasks = tasks
        self.model = model
        self.retrier = retrier
        self.notes: list[str] = []
        self._work: dict[str, int] = {}

    def read(self) -> Workflow:
        processor = self.map_state.state.get("ItemProcessor") or self.map_state.state.get("Iterator") or {}
        start = processor.get("StartAt") if isinstance(processor, Mapping) else None
        if not isinstance(start, str) or start not in self.states:
            raise ValueError(f"{self._where()}: the item processor has no StartAt state")
        entry_path, first = self._continuation(start)
        if first is None:
            raise ValueError(f"{self._where()}: no Lambda Task on the way from {start!r} to the end")
        names = self._forward_chain(first)
        forward_count = len(names)
        second_pass = self._second_pass_map()
        steps: list[TaskStep] = []
        # Reading a step's routes appends the Tasks they lead to (compensation) to ``names``.
        while len(steps) < len(names):
            steps.append(
                self._step(
                    names[len(steps)],
                    names,
                    compensation=len(steps) >= forward_count,
                    second_pass=second_pass is not None,
                )
            )
        if not any(step.defers for step in steps):
            second_pass = None  # a later Map, but no Task sets an order aside for it
        return Workflow(
            state_machine=self.machine.logical_id,
            map_state=self.map_state.name,
            distributed=self.map_state.distributed,
            child_execution_type=self._child_execution_type(),
            max_concurrency=self.map_state.max_concurrency,
            max_concurrency_parameter=self._max_concurrency_parameter(),
            steps=tuple(steps),
            forward_tasks=forward_count,
            entry_transitions=len(entry_path),
            top_level_transitions=self._top_level_transitions(),
            retrier=self.retrier,
            parameters=dict(self.machine.parameters),
            notes=tuple(self.notes),
            second_pass_map=second_pass.name if second_pass else None,
            second_pass_concurrency=second_pass.max_concurrency if second_pass else None,
        )

    def _where(self) -> str:
        return f"{self.machine.logical_id} '{self.map_state.name}'"

    # -- the graph (Next, Choices, Default; Catch edges are followed separately)

    def _successors(self, name: str) -> list[str]:
        state = self.states.get(name)
        if not isinstance(state, Mapping):
            return []
        state_type = state.get("Type")
        if state_type in ("Parallel", "Map") and name not in self.tasks:
            self._note(f"'{name}' ({state_type}) inside the item processor is counted as one transition")
        if state_type == "Choice":
            targets = [
                choice.get("Next") for choice in state.get("Choices") or [] if isinstance(choice, Mapping)
            ]
            targets.append(state.get("Default"))
            return [target for target in targets if isinstance(target, str) and target in self.states]
        following = state.get("Next")
        return [following] if isinstance(following, str) and following in self.states else []

    def _lambda_tasks_to_end(self, name: str, visiting: frozenset[str] = frozenset()) -> int:
        """The most Lambda Tasks on a path from ``name`` to the end (loops are not followed twice)."""
        if name in self._work:
            return self._work[name]
        if name in visiting:
            return 0
        here = 1 if name in self.tasks else 0
        onward = [self._lambda_tasks_to_end(nxt, visiting | {name}) for nxt in self._successors(name)]
        self._work[name] = here + max(onward, default=0)
        return self._work[name]

    def _continuation(self, start: str) -> tuple[list[str], str | None]:
        """States entered from ``start`` up to and including the next Lambda Task (None: the end)."""
        path: list[str] = []
        current: str | None = start
        while current is not None and len(path) <= len(self.states):
            path.append(current)
            if current in self.tasks:
                return path, current
            successors = self._successors(current)
            current = max(successors, key=self._lambda_tasks_to_end) if successors else None
        return path, None

    def _forward_chain(self, first: str) -> list[str]:
        chain = [first]
        while True:
            _path, following = self._next_of(chain[-1])
            if following is None or following in chain:
                return chain
            chain.append(following)

    def _next_of(self, task: str) -> tuple[list[str], str | None]:
        nxt = self.states[task].get("Next")
        if not isinstance(nxt, str) or nxt not in self.states:
            return [], None
        return self._continuation(nxt)

    def _catch_of(self, task: str, error: str) -> tuple[list[str], str | None] | None:
        """The states the first Catch matching ``error`` leads through; None when nothing catches it."""
        for catcher in self.states[task].get("Catch") or []:
            if not isinstance(catcher, Mapping):
                continue
            errors = catcher.get("ErrorEquals") or []
            if _matches(errors, error) and isinstance(catcher.get("Next"), str):
                return self._continuation(catcher["Next"])
        return None

    def _catches_by_name(self, task: str, error: str) -> bool:
        """Whether the first Catch matching ``error`` names it (not States.ALL or States.TaskFailed)."""
        for catcher in self.states[task].get("Catch") or []:
            if isinstance(catcher, Mapping) and _matches(catcher.get("ErrorEquals") or [], error):
                return error in (catcher.get("ErrorEquals") or [])
        return False

    # -- one Task

    def _step(self, name: str, names: list[str], *, compensation: bool, second_pass: bool) -> TaskStep:
        task = self.tasks[name]
        if task.function_id is None:
            raise ValueError(
                f"{self._where()}: Task '{name}' invokes {task.function_expression}, "
                "not a function of the template"
            )
        function = self.model.functions[task.function_id]
        retriers = parse_retriers(task.state, self.machine)
        call_timeout, timeout_error = self._call_timeout(task, function)
        where = f"{self._where()} Task '{name}'"

        def policy(error: str) -> RetryPolicy | None:
            found = first_matching_retrier(retriers, error)
            return RetryPolicy.from_retrier(found, where) if found is not None else None

        def route(found: tuple[list[str], str | None] | None) -> Route:
            if found is None:
                return Route(None, 0, caught=False)
            path, target = found
            if target is not None and target not in names:
                names.append(target)
            return Route(names.index(target) if target is not None else None, len(path))

        on_throttle_failure = route(self._catch_of(name, THROTTLE_ERROR))
        # A Catch for the 429 by name that ends the order without compensating it sets the order aside.
        defers = (
            second_pass
            and self._catches_by_name(name, THROTTLE_ERROR)
            and on_throttle_failure.next_step is None
        )
        return TaskStep(
            state_name=name,
            function=task.function_id,
            memory_mb=resolve_int(function.properties.get("MemorySize"), {}, function.parameters)
            or DEFAULT_MEMORY_MB,
            reserved_concurrency=function.reserved_concurrency,
            call_timeout_seconds=call_timeout,
            timeout_error=timeout_error,
            throttle_retry=policy(THROTTLE_ERROR),
            timeout_retry=policy(timeout_error),
            on_success=route(self._next_of(name)),
            on_throttle_failure=on_throttle_failure,
            on_timeout_failure=route(self._catch_of(name, timeout_error)),
            compensation=compensation,
            on_throttle_failure_last_pass=route(self._catch_of(name, FUNCTION_TIMEOUT_ERROR))
            if defers
            else None,
        )

    def _call_timeout(self, task: LambdaTask, function: LambdaFunction) -> tuple[float, str]:
        function_timeout = function.timeout_seconds
        if function_timeout is None:
            raise ValueError(f"{self._where()}: the Timeout of {function.logical_id} is not a number")
        task_timeout = (
            self.machine.resolve_int(task.state["TimeoutSeconds"]) if "TimeoutSeconds" in task.state else None
        )
        # Without TimeoutSeconds, the Task waits as long as the function runs (ASL sets no default).
        if task_timeout is not None and task_timeout <= function_timeout:
            return float(task_timeout), TASK_TIMEOUT_ERROR
        return float(function_timeout), FUNCTION_TIMEOUT_ERROR

    # -- the Map itself

    def _second_pass_map(self) -> MapState | None:
        """The nearest Map invoking Lambda reachable after this one at the top level (Next, Choices)."""
        definition = self.machine.definition or {}
        states = definition.get("States") or {}
        if self.map_state.path != ("States", self.map_state.name):
            return None
        seen = {self.map_state.name}
        queue = deque([self.map_state.state.get("Next")])
        while queue:
            current = queue.popleft()
            if not isinstance(current, str) or current not in states or current in seen:
                continue
            seen.add(current)
            state = states[current]
            if not isinstance(state, Mapping):
                continue
            if state.get("Type") == "Map":
                later = read_map(current, ("States", current), state, self.machine)
                if any(_invokes_lambda(value) for value in later.processor_states.values()):
                    return later
            queue.extend([state.get("Next"), state.get("Default")])
            queue.extend(rule.get("Next") for rule in state.get("Choices") or [] if isinstance(rule, Mapping))
        return None

    def _child_execution_type(self) -> str | None:
        if not self.map_state.distributed:
            return None
        config = self.map_state.state["ItemProcessor"].get("ProcessorConfig") or {}
        resolved = self._resolve_text(config.get("ExecutionType", "STANDARD"))
        return resolved.upper() if resolved else "STANDARD"

    def _resolve_text(self, value: object) -> str | None:
        if isinstance(value, str):
            whole = _WHOLE_PLACEHOLDER.match(value)
            if not whole:
                return value
            name = whole.group(1)
            value = self.machine.substitutions.get(name, {"Ref": name})
        if isinstance(value, Mapping) and set(value) == {"Ref"}:
            found = self.machine.parameters.get(str(value["Ref"]))
            return found if isinstance(found, str) else None
        return value if isinstance(value, str) else None

    def _max_concurrency_parameter(self) -> str | None:
        raw = self.map_state.state.get("MaxConcurrency")
        if isinstance(raw, Mapping) and set(raw) == {"Ref"}:
            name = str(raw["Ref"])
            return name if name in self.machine.parameters else None
        if not isinstance(raw, str):
            return None
        whole = _WHOLE_PLACEHOLDER.match(raw)
        if not whole:
            return None
        name = whole.group(1)
        substitution = self.machine.substitutions.get(name)
        if isinstance(substitution, Mapping) and set(substitution) == {"Ref"}:
            ref = str(substitution["Ref"])
            return ref if ref in self.machine.parameters else None
        if substitution is None and name in self.machine.parameters:
            return name  # an Fn::Sub variable that is the parameter itself
        return None

    def _top_level_transitions(self) -> int:
        """States the batch execution enters once: the way from StartAt to the Map, the Map, and after it."""
        definition = self.machine.definition or {}
        states = definition.get("States") or {}
        if self.map_state.path != ("States", self.map_state.name):
            self._note("the Map is nested: its enclosing states are counted as one transition per batch")
            return 1
        start = definition.get("StartAt")
        before = _shortest_path_length(states, start, self.map_state.name)
        after = 0
        current = self.map_state.state.get("Next")
        while isinstance(current, str) and current in states and after <= len(states):
            after += 1
            current = states[current].get("Next")
        return (before if before is not None else 1) + after

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _invokes_lambda(state: object) -> bool:
    if not isinstance(state, Mapping) or state.get("Type") != "Task":
        return False
    resource = str(state.get("Resource", ""))
    return resource.startswith("arn:aws:states:::lambda:invoke") or ":lambda:" in resource


def _matches(errors: Sequence[object], error: str) -> bool:
    """ASL error matching: the name itself, States.ALL, or States.TaskFailed for all but States.Timeout."""
    return (
        error in errors
        or "States.ALL" in errors
        or ("States.TaskFailed" in errors and error != TASK_TIMEOUT_ERROR)
    )


def _shortest_path_length(states: Mapping[str, object], start: object, goal: str) -> int | None:
    """States entered from ``start`` to ``goal``, both included (breadth first over Next and Choices)."""
    if not isinstance(start, str):
        return None
    depth = {start: 1}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        if name == goal:
            return depth[name]
        state = states.get(name)
        if not isinstance(state, Mapping):
            continue
        targets = [state.get("Next"), state.get("Default")]
        targets += [
            choice.get("Next") for choice in state.get("Choices") or [] if isinstance(choice, Mapping)
        ]
        for target in targets:
            if isinstance(target, str) and target in states and target not in depth:
                depth[target] = depth[name] + 1
                queue.append(target)
    return None
