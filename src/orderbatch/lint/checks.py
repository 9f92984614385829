"""The throttle-safety checks: what each rule finds in a template model.

Rule IDs use cfn-lint's range for user rules (9xxx), block 95xx. ``docs/lint-rules.md`` explains
each rule with a bad and a fixed snippet.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from orderbatch.lint.asl import (
    IN_PROGRESS_ERROR,
    AslPath,
    LambdaTask,
    MapState,
    Retrier,
    first_matching_retrier,
    format_path,
    lambda_tasks,
    map_iteration_demand,
    parse_retriers,
    read_map,
    walk_states,
)
from orderbatch.lint.durable import THROTTLE_ERROR_NAME, DurableFunction, durable_functions
from orderbatch.lint.persistence_layers import layers_built_per_call
from orderbatch.lint.template_model import LambdaFunction, StateMachine, TemplateModel
from sam_local_cloud.aws_limits import (
    DISTRIBUTED_MAP_CONCURRENCY_LIMIT,
    INLINE_MAP_CONCURRENCY_LIMIT,
    THROTTLE_ERROR,
)

# A throttle clears when running invocations finish and Lambda adds capacity (1,000 environments per
# function every 10 s); ASL's default retrier (1 + 2 + 4 = 7 s) gives up before that.
DEFAULT_MIN_RETRY_BUDGET_SECONDS = 10

# Where each rule is explained (relative to the repository root).
DOCS_PATH = "docs/lint-rules.md"


@dataclass(frozen=True)
class RuleSpec:
    id: str
    name: str
    shortdesc: str
    description: str

    @property
    def severity(self) -> str:
        return {"E": "error", "W": "warning", "I": "informational"}[self.id[0]]


RULES: dict[str, RuleSpec] = {
    spec.id: spec
    for spec in (
        RuleSpec(
            "E9501",
            "LambdaThrottleNotRetried",
            "Lambda Task does not retry throttling",
            "A Lambda Task must retry Lambda.TooManyRequestsException with backoff, full jitter and a cap.",
        ),
        RuleSpec(
            "W9502",
            "LambdaThrottleRetriedByCatchAll",
            "Lambda throttling retried only by a catch-all",
            "A States.ALL or States.TaskFailed retrier also retries errors that will never succeed.",
        ),
        RuleSpec(
            "E9503",
            "ThrottleRetrierNeverRetries",
            "Throttling retrier has MaxAttempts 0",
            "The retrier that matches Lambda.TooManyRequestsException never retries.",
        ),
        RuleSpec(
            "W9504",
            "ThrottleRetrierNoBackoff",
            "Throttling retrier has no exponential backoff",
            "BackoffRate <= 1 retries at a constant pace into a service that is already saturated.",
        ),
        RuleSpec(
            "W9505",
            "ThrottleRetrierNoJitter",
            "Throttling retrier has no full jitter",
            "Without JitterStrategy FULL, every throttled task retries at the same moment.",
        ),
        RuleSpec(
            "W9506",
            "ThrottleRetrierNoCap",
            "Throttling retrier has no MaxDelaySeconds",
            "Exponential backoff without a cap grows to waits far longer than the throttle lasts.",
        ),
        RuleSpec(
            "W9507",
            "ThrottleRetryBudgetTooShort",
            "Throttling retrier gives up too soon",
            "The retrier's waits add up to less than the time a throttling burst needs to clear.",
        ),
        RuleSpec(
            "W9510",
            "TaskTimeoutMissing",
            "Lambda Task has no TimeoutSeconds",
            "Without TimeoutSeconds a Task waits as long as the execution lives (up to a year).",
        ),
        RuleSpec(
            "E9511",
            "TaskTimeoutNotLongerThanFunction",
            "Task TimeoutSeconds not longer than function Timeout",
            "The state gives up while the function still runs, and a retry runs it a second time.",
        ),
        RuleSpec(
            "W9512",
            "TaskTimeoutUncheckable",
            "Task timeout cannot be checked",
            "TimeoutSecondsPath or an expression sets the timeout at run time.",
        ),
        RuleSpec(
            "E9520",
            "DistributedMapUnbounded",
            "Distributed Map has no MaxConcurrency",
            "A Distributed Map without MaxConcurrency runs up to "
            f"{DISTRIBUTED_MAP_CONCURRENCY_LIMIT:,} children at once.",
        ),
        RuleSpec(
            "W9521",
            "InlineMapUnbounded",
            "Inline Map has no MaxConcurrency",
            "An inline Map without MaxConcurrency runs up to "
            f"{INLINE_MAP_CONCURRENCY_LIMIT} iterations at once.",
        ),
        RuleSpec(
            "W9522",
            "MapConcurrencyOverReserved",
            "Map concurrency exceeds a function's reserved concurrency",
            "More iterations than the function's ReservedConcurrentExecutions are throttled.",
        ),
        RuleSpec(
            "W9523",
            "MapDemandOverAccountQuota",
            "Map demand exceeds the account concurrency",
            "Concurrent Lambda invocations the Map can cause exceed the given account concurrency.",
        ),
        RuleSpec(
            "W9524",
            "ThrottleRetrierCanBeSpent",
            "Throttle retrier spent under the contention you state (off by default)",
            "Under another tenant holding part of the quota, the planner sees orders fail from 429s alone: "
            "the Map admits fresh items into the slots that backed-off retries wait for.",
        ),
        RuleSpec(
            "W9530",
            "InProgressRetryTooShort",
            "IdempotencyAlreadyInProgressError retried too briefly",
            "The retries end before the in-flight invocation can have finished or timed out.",
        ),
        RuleSpec(
            "W9540",
            "FunctionNotIdempotent",
            "Function invoked by a Task has no idempotency",
            "Retried Tasks run functions more than once; the function needs idempotency.",
        ),
        RuleSpec(
            "W9541",
            "IdempotencyLayerPerInvocation",
            "Powertools persistence layer built on every invocation",
            "Each persistence layer adds a hook to its boto3 client: built per call, a warm environment "
            "slows down invocation after invocation. Build it once, at module level or in a cached function.",
        ),
        RuleSpec(
            "W9560",
            "DurableMapUnbounded",
            "Durable map/parallel has no max_concurrency",
            "A durable function's context.map or context.parallel without max_concurrency runs every "
            "branch at once.",
        ),
        RuleSpec(
            "W9561",
            "DurableDemandOverAccountQuota",
            "Durable function demand exceeds the account concurrency",
            "Its own invocation plus max_concurrency chained invokes exceed the given account concurrency.",
        ),
        RuleSpec(
            "I9562",
            "DurableConcurrencyUnresolved",
            "Durable max_concurrency cannot be resolved",
            "The source sets max_concurrency from something the linter cannot follow statically.",
        ),
        RuleSpec(
            "E9563",
            "DurableInvokeThrottleNotRetried",
            "Durable chained invoke does not retry throttling",
            "A context.invoke that nothing retries fails its branch on one TooManyRequestsException.",
        ),
        RuleSpec(
            "I9564",
            "DurableInvokeRetryUncertain",
            "Durable chained invoke retry cannot be checked",
            "A catch-all loop retries the invoke, but the linter cannot tell whether throttling is retried.",
        ),
        RuleSpec(
            "E9565",
            "DurableExecutionTimeoutNotLongerThanFunction",
            "DurableConfig ExecutionTimeout not longer than a function Timeout",
            "The execution times out while its own or an invoked function's invocation still runs.",
        ),
        RuleSpec(
            "W9569",
            "DurableSourceUnreadable",
            "Durable function source cannot be read",
            "The handler's source could not be found or parsed, so the durable rules could not check it.",
        ),
        RuleSpec(
            "W9550",
            "DefinitionUnreadable",
            "State machine definition cannot be read",
            "The definition could not be parsed, so the throttle-safety rules could not check it.",
        ),
    )
}


@dataclass(frozen=True)
class Settings:
    min_retry_budget_seconds: float = DEFAULT_MIN_RETRY_BUDGET_SECONDS
    account_concurrency: int | None = None


@dataclass(frozen=True)
class Finding:
    rule_id: str
    path: tuple[str | int, ...]
    """Path in the template: the state machine's definition property followed by the ASL path."""
    message: str


def find_problems(model: TemplateModel, settings: Settings | None = None) -> list[Finding]:
    settings = settings or Settings()
    findings: list[Finding] = []
    for state_machine in model.state_machines:
        if state_machine.problem:
            findings.append(
                Finding(
                    "W9550",
                    state_machine.cfn_path,
                    f"State machine {state_machine.logical_id}: {state_machine.problem}. "
                    "Fix the definition so it parses; until then no throttle-safety rule can check it.",
                )
            )
            continue
        tasks = list(lambda_tasks(state_machine, model.functions))
        for task in tasks:
            function = model.functions.get(task.function_id) if task.function_id else None
            findings.extend(_throttle_retry_findings(task, settings))
            findings.extend(_timeout_findings(task, function))
            findings.extend(_in_progress_findings(task, function))
        findings.extend(_idempotency_findings(state_machine, tasks, model.functions))
        findings.extend(_map_findings(state_machine, model.functions, settings))
    for durable in durable_functions(model):
        findings.extend(_durable_findings(durable, model, settings))
    for function in model.functions.values():
        findings.extend(_persistence_layer_findings(function, model))
    return findings


# --- helpers ------------------------------------------------------------------------------------


def _where(state_machine: StateMachine, name: str, asl_path: AslPath) -> str:
    source = f" in {state_machine.source_file.name}" if state_machine.source_file else ""
    return f"State machine {state_machine.logical_id}, state '{name}' ({format_path(asl_path)}{source})"


def _finding(rule_id: str, task: LambdaTask, suffix: AslPath, message: str) -> Finding:
    path = (*task.state_machine.cfn_path, *task.path, *suffix)
    return Finding(
        rule_id, path, f"{_where(task.state_machine, task.name, (*task.path, *suffix))}: {message}"
    )


def _seconds(value: float) -> str:
    return f"{value:g} s"


_THROTTLE_RETRIER = (
    f'{{"ErrorEquals": ["{THROTTLE_ERROR}"], "IntervalSeconds": 1, "MaxAttempts": 6, '
    '"BackoffRate": 2, "MaxDelaySeconds": 30, "JitterStrategy": "FULL"}'
)


# --- retry on throttling --------------------------------------------------------------------------


def _throttle_retry_findings(task: LambdaTask, settings: Settings) -> Iterator[Finding]:
    retriers = parse_retriers(task.state, task.state_machine)
    retrier = first_matching_retrier(retriers, THROTTLE_ERROR)
    if retrier is None:
        suffix: AslPath = ("Retry",) if "Retry" in task.state else ()
        yield _finding(
            "E9501",
            task,
            suffix,
            f"no retrier matches {THROTTLE_ERROR}, so one throttled invocation fails the task. "
            f"Add a retrier first in Retry: {_THROTTLE_RETRIER}.",
        )
        return
    at: AslPath = ("Retry", retrier.index)
    if retrier.is_catch_all and THROTTLE_ERROR not in retrier.errors:
        yield _finding(
            "W9502",
            task,
            at,
            f"{THROTTLE_ERROR} is retried only by the catch-all retrier {list(retrier.errors)}, which also "
            "retries errors that will fail again and usually has no jitter or cap. "
            f"Add a dedicated retrier before it: {_THROTTLE_RETRIER}.",
        )
    if retrier.max_attempts == 0:
        yield _finding(
            "E9503",
            task,
            at,
            f"the retrier matching {THROTTLE_ERROR} has MaxAttempts 0, so throttling is never retried. "
            "Set MaxAttempts to 6 or more.",
        )
        return
    yield from _retrier_shape_findings(task, retrier, at, settings)


def _retrier_shape_findings(
    task: LambdaTask, retrier: Retrier, at: AslPath, settings: Settings
) -> Iterator[Finding]:
    if retrier.backoff_rate is not None and retrier.backoff_rate <= 1:
        yield _finding(
            "W9504",
            task,
            at,
            f"the throttling retrier has BackoffRate {retrier.backoff_rate:g}, so it retries at a constant "
            "pace into a saturated service. Set BackoffRate to 2.",
        )
    if not retrier.full_jitter:
        yield _finding(
            "W9505",
            task,
            at,
            "the throttling retrier has no JitterStrategy FULL, so every throttled iteration retries at the "
            'same moment and is throttled again. Add "JitterStrategy": "FULL".',
        )
    if retrier.max_delay_seconds is None:
        yield _finding(
            "W9506",
            task,
            at,
            "the throttling retrier has no MaxDelaySeconds, so its waits grow without bound. "
            'Add a cap such as "MaxDelaySeconds": 30.',
        )
    total = retrier.total_wait_seconds()
    if total is not None and total < settings.min_retry_budget_seconds:
        yield _finding(
            "W9507",
            task,
            at,
            f"the throttling retrier waits {_seconds(total)} in total (before jitter) over "
            f"{retrier.max_attempts} attempts, less than the {_seconds(settings.min_retry_budget_seconds)} "
            "a throttling burst needs to clear. Raise MaxAttempts or IntervalSeconds.",
        )


# --- timeouts -----------------------------------------------------------------------------------


def _timeout_findings(task: LambdaTask, function: LambdaFunction | None) -> Iterator[Finding]:
    state = task.state
    if "TimeoutSecondsPath" in state:
        yield _finding(
            "W9512",
            task,
            ("TimeoutSecondsPath",),
            "TimeoutSecondsPath sets the timeout at run time, so it cannot be checked against the function's "
            "Timeout. Use a fixed TimeoutSeconds longer than the function's Timeout.",
        )
        return
    if "TimeoutSeconds" not in state:
        yield _finding(
            "W9510",
            task,
            (),
            "no TimeoutSeconds, so the state waits as long as the execution lives if the invocation hangs. "
            f"Set TimeoutSeconds longer than the function's Timeout{_function_timeout_hint(function)}.",
        )
        return
    task_timeout = task.state_machine.resolve_int(state["TimeoutSeconds"])
    if task_timeout is None:
        yield _finding(
            "W9512",
            task,
            ("TimeoutSeconds",),
            "TimeoutSeconds is not a number the template fixes, so it cannot be checked against the "
            "function's Timeout. Use a literal longer than the function's Timeout.",
        )
        return
    if task.waits_for_callback or function is None:
        return  # a callback task waits for the token, not for the function
    function_timeout = function.timeout_seconds
    if function_timeout is not None and task_timeout <= function_timeout:
        yield _finding(
            "E9511",
            task,
            ("TimeoutSeconds",),
            f"TimeoutSeconds {task_timeout} is not longer than {function.logical_id}'s Timeout "
            f"{function_timeout}, so the state gives up while the function still runs and a retry runs it "
            f"again alongside. Set TimeoutSeconds to at least {function_timeout + 5}.",
        )


def _function_timeout_hint(function: LambdaFunction | None) -> str:
    if function is None or function.timeout_seconds is None:
        return ""
    return f" ({function.logical_id}: {function.timeout_seconds} s)"


# --- idempotency --------------------------------------------------------------------------------


def _in_progress_findings(task: LambdaTask, function: LambdaFunction | None) -> Iterator[Finding]:
    if function is None or function.timeout_seconds is None:
        return
    retrier = first_matching_retrier(parse_retriers(task.state, task.state_machine), IN_PROGRESS_ERROR)
    if retrier is None or IN_PROGRESS_ERROR not in retrier.errors:
        return
    total = retrier.total_wait_seconds()
    if total is None:
        return
    # With full jitter each wait is uniform in [0, nominal]: count the expected half.
    budget = total / 2 if retrier.full_jitter else total
    if budget >= function.timeout_seconds:
        return
    jitter_note = " (half the nominal waits, as JitterStrategy FULL averages)" if retrier.full_jitter else ""
    yield _finding(
        "W9530",
        task,
        ("Retry", retrier.index),
        f"the {IN_PROGRESS_ERROR} retrier waits {_seconds(budget)}{jitter_note} in total, less than "
        f"{function.logical_id}'s Timeout {function.timeout_seconds} s, so the retries can end while the "
        "first invocation still holds the idempotency record. Raise IntervalSeconds or MaxAttempts so the "
        f"waits add up to at least {function.timeout_seconds} s.",
    )


def _idempotency_findings(
    state_machine: StateMachine, tasks: list[LambdaTask], functions: Mapping[str, LambdaFunction]
) -> Iterator[Finding]:
    states_by_function: dict[str, list[str]] = {}
    for task in tasks:
        if task.function_id:
            states_by_function.setdefault(task.function_id, []).append(task.name)
    for function_id, state_names in states_by_function.items():
        function = functions[function_id]
        gap = idempotency_gap(function)
        if gap is None:
            continue
        names = ", ".join(f"'{name}'" for name in state_names)
        yield Finding(
            "W9540",
            function.cfn_path,
            f"Function {function_id}, invoked by state machine {state_machine.logical_id} state {names}: "
            f"{gap}, yet retries run it more than once. Add Powertools idempotency with its table in an "
            "IDEMPOTENCY_TABLE variable, or declare Metadata: {orderbatch: {idempotent: true}} if it is "
            "idempotent by other means.",
        )


def _persistence_layer_findings(function: LambdaFunction, model: TemplateModel) -> Iterator[Finding]:
    for built in layers_built_per_call(function, model.template_path):
        yield Finding(
            "W9541",
            (*function.cfn_path, "Properties", "Handler"),
            f"Function {function.logical_id}: {built.where} builds a Powertools {built.layer} inside "
            f"{built.function}(), on every call. Each layer registers a User-Agent hook on its boto3 client "
            "(or makes a client of its own), so a warm environment's requests slow down invocation after "
            "invocation. Build it once: at module level, or in a function decorated with functools.cache.",
        )


def idempotency_gap(function: LambdaFunction) -> str | None:
    """Why the function does not look idempotent, or None when it does."""
    if function.declares_idempotent:
        return None
    variables = function.environment_variables
    if _truthy(variables.get("POWERTOOLS_IDEMPOTENCY_DISABLED")):
        return "POWERTOOLS_IDEMPOTENCY_DISABLED turns its idempotency off"
    if any("IDEMPOTENCY" in str(name).upper() for name in variables):
        return None
    return "no environment variable names an idempotency table (none contains IDEMPOTENCY)"


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


# --- Map concurrency ----------------------------------------------------------------------------


def _map_findings(
    state_machine: StateMachine, functions: Mapping[str, LambdaFunction], settings: Settings
) -> Iterator[Finding]:
    for visit in walk_states(state_machine):
        if visit.state.get("Type") != "Map":
            continue
        map_state = read_map(visit.name, visit.path, visit.state, state_machine)
        where = _where(state_machine, visit.name, visit.path)
        path = (*state_machine.cfn_path, *visit.path)
        if map_state.unbounded:
            if map_state.distributed:
                yield Finding(
                    "E9520",
                    path,
                    f"{where}: Distributed Map without MaxConcurrency (or 0) runs up to "
                    f"{DISTRIBUTED_MAP_CONCURRENCY_LIMIT:,} child executions at once, ten times the default "
                    "Lambda quota. Set MaxConcurrency below your "
                    "unreserved concurrency (see `orderbatch doctor`).",
                )
            else:
                yield Finding(
                    "W9521",
                    path,
                    f"{where}: inline Map without MaxConcurrency (or 0) runs up to "
                    f"{INLINE_MAP_CONCURRENCY_LIMIT} iterations at once. "
                    "Set MaxConcurrency to what the invoked functions' concurrency allows.",
                )
            continue
        if map_state.max_concurrency is None:
            continue  # set at run time
        yield from _map_demand_findings(state_machine, map_state, visit.enclosing_maps, functions, settings)


def _map_demand_findings(
    state_machine: StateMachine,
    map_state: MapState,
    enclosing_maps: tuple[MapState, ...],
    functions: Mapping[str, LambdaFunction],
    settings: Settings,
) -> Iterator[Finding]:
    assert map_state.max_concurrency is not None
    outer = 1
    for enclosing in enclosing_maps:
        outer *= enclosing.worst_case_concurrency
    limit = map_state.worst_case_concurrency
    per_iteration = map_iteration_demand(map_state, state_machine, functions)
    where = _where(state_machine, map_state.name, map_state.path)
    path = (*state_machine.cfn_path, *map_state.path, "MaxConcurrency")
    outer_note = f" x {outer} copies of the enclosing Map" if outer > 1 else ""
    for function_id, per_iteration_count in per_iteration.by_function.items():
        function = functions.get(function_id)
        reserved = function.reserved_concurrency if function else None
        if reserved is None:
            continue
        demand = limit * per_iteration_count * outer
        if demand > reserved:
            fitting = max(reserved // (per_iteration_count * outer), 1)
            yield Finding(
                "W9522",
                path,
                f"{where}: MaxConcurrency {map_state.max_concurrency}{outer_note} can run {demand} "
                f"invocations of {function_id} at once, over its ReservedConcurrentExecutions {reserved}; "
                "the rest are throttled. "
                f"Set MaxConcurrency to {fitting} or raise the reservation.",
            )
    account = settings.account_concurrency
    demand_total = limit * per_iteration.total * outer
    if account and per_iteration.total and demand_total > account:
        fitting = max(account // (per_iteration.total * outer), 1)
        yield Finding(
            "W9523",
            path,
            f"{where}: MaxConcurrency {map_state.max_concurrency} x {per_iteration.total} concurrent Lambda "
            f"task(s) per iteration{outer_note} = {demand_total} concurrent invocations, over the account "
            f"concurrency {account}. Set MaxConcurrency to {fitting} (fewer if other work shares the quota).",
        )


# --- durable functions --------------------------------------------------------------------------


def _durable_findings(
    durable: DurableFunction, model: TemplateModel, settings: Settings
) -> Iterator[Finding]:
    function = durable.function
    path = (*function.cfn_path, "Properties")
    name = f"Durable function {function.logical_id}"
    if durable.problem:
        yield Finding(
            "W9569",
            (*path, "Handler"),
            f"{name}: {durable.problem}, so its map concurrency, chained invokes and retries cannot be "
            "checked. Point CodeUri and Handler at the Python source, as sam build reads them.",
        )
    yield from _durable_timeout_findings(durable, model, path, name)
    if durable.problem:
        return
    for operation in durable.operations:
        where = f"{name}, context.{operation.kind} at {operation.where}"
        concurrency = operation.concurrency
        if concurrency.unbounded:
            yield Finding(
                "W9560",
                (*path, "Handler"),
                f"{where}: {concurrency.origin}, so every branch runs at once and each chained invoke "
                f"competes for the account's concurrency. Pass {_config_class(operation.kind)}"
                "(max_concurrency=N) with N below your unreserved concurrency (see `orderbatch doctor`).",
            )
        elif concurrency.value is None:
            yield Finding(
                "I9562",
                (*path, "Handler"),
                f"{where}: max_concurrency cannot be resolved statically ({concurrency.origin}), so its "
                "demand against the account concurrency is not checked. Feed it from an environment "
                "variable that the template sets from a literal or a parameter.",
            )
    account = settings.account_concurrency
    demand = durable.worst_case_demand
    if account and demand is not None and demand > account and durable.invokes:
        widest = max(durable.operations, key=lambda operation: operation.concurrency.value or 0, default=None)
        origin = f" ({widest.concurrency.origin}, context.{widest.kind} at {widest.where})" if widest else ""
        fitting = max(account - 1, 1)
        yield Finding(
            "W9561",
            (*path, "Handler"),
            f"{name}: max_concurrency {durable.worst_case_concurrency}{origin} x "
            f"{durable.invokes_in_flight_per_branch} chained invoke in flight per branch + 1 for its own "
            f"invocation = {demand} concurrent invocations, over the account concurrency {account}. "
            f"Set max_concurrency to {fitting} (fewer if other work shares the quota).",
        )
    for invoke in durable.invokes:
        where = f"{name}, context.invoke at {invoke.where}"
        if invoke.retry is None:
            yield Finding(
                "E9563",
                (*path, "Handler"),
                f"{where}: nothing retries it (no loop around a try catching InvokeError, here or in a "
                f"caller), so one {THROTTLE_ERROR_NAME} fails the branch. Retry InvokeError whose error_type "
                "is TooManyRequestsException in a loop, waiting with context.wait between attempts "
                "(exponential backoff, full jitter, a cap, e.g. the SDK's create_retry_strategy).",
            )
        elif invoke.retry_uncertain:
            yield Finding(
                "I9564",
                (*path, "Handler"),
                f"{where}: {invoke.retry_uncertain}; the linter cannot tell whether throttling is retried "
                "with backoff. Catch InvokeError and retry TooManyRequestsException explicitly.",
            )


def _config_class(kind: str) -> str:
    return "MapConfig" if kind == "map" else "ParallelConfig"


def _durable_timeout_findings(
    durable: DurableFunction, model: TemplateModel, path: tuple[str | int, ...], name: str
) -> Iterator[Finding]:
    execution_timeout = durable.execution_timeout_seconds
    if execution_timeout is None:
        return
    at = (*path, "DurableConfig", "ExecutionTimeout")
    own = durable.function.timeout_seconds
    if own is not None and execution_timeout <= own:
        yield Finding(
            "E9565",
            at,
            f"{name}: DurableConfig.ExecutionTimeout {execution_timeout} is not longer than its own Timeout "
            f"{own}, so the execution can time out while an invocation still runs and replays. Set "
            f"ExecutionTimeout well above {own}.",
        )
    if durable.problem is None and not durable.invokes:
        return
    for function_id in durable.invoked_functions:
        invoked_timeout = model.functions[function_id].timeout_seconds
        if invoked_timeout is not None and execution_timeout <= invoked_timeout:
            yield Finding(
                "E9565",
                at,
                f"{name}: DurableConfig.ExecutionTimeout {execution_timeout} is not longer than the Timeout "
                f"{invoked_timeout} of {function_id}, which its environment names for a chained invoke; "
                "context.invoke has no timeout of its own and waits until the execution ends, so the "
                "execution times out while the invoked function still runs. Set ExecutionTimeout above "
                f"{invoked_timeout} plus the time its retries take.",
            )
