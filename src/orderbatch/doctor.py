"""The quota doctor: worst-case concurrent Lambda demand of a stack's workflows against the account.

Workflows are state machines and Lambda durable functions (``DurableConfig``); a batch runs on one
of them, so each orchestrator's demand is judged against the pool on its own (their sum is shown too).

Reads the state machines and functions from a template (the linter's template model) or a deployed
stack (CloudFormation, Step Functions, Lambda), the account's concurrency from GetAccountSettings,
and says whether ``batches`` executions running at once fit, and what to change when they do not.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from orderbatch.lint.asl import Demand, definition_demand, map_iteration_demand, read_map, walk_states
from orderbatch.lint.durable import DurableFunction, durable_functions
from orderbatch.lint.template_model import (
    LAMBDA_FUNCTION,
    STATE_MACHINE,
    LambdaFunction,
    StateMachine,
    TemplateModel,
)

if TYPE_CHECKING:
    from orderbatch.capacity.model import Neighbour

# Lambda refuses a reservation that leaves fewer than this many executions unreserved.
MINIMUM_UNRESERVED_CONCURRENCY = 100


@dataclass(frozen=True)
class AccountConcurrency:
    limit: int
    unreserved: int


@dataclass(frozen=True)
class MapDemand:
    state_machine: str
    state: str
    path: str
    distributed: bool
    max_concurrency: int | None
    """None when unset (or 0): the Map then runs as many iterations as Step Functions allows."""
    worst_case_iterations: int
    lambda_tasks_per_iteration: int
    unreserved_tasks_per_iteration: int
    """Of those, the tasks whose function draws on the unreserved pool."""
    enclosing_copies: int
    concurrent_invocations: int
    """Per execution: worst-case iterations x Lambda tasks per iteration x enclosing copies."""


@dataclass(frozen=True)
class FunctionDemand:
    function: str
    physical_name: str | None
    reserved_concurrency: int | None
    concurrent_invocations: int
    """With all ``batches`` executions running at once."""

    @property
    def over_reservation(self) -> bool:
        return (
            self.reserved_concurrency is not None and self.concurrent_invocations > self.reserved_concurrency
        )


@dataclass(frozen=True)
class DurableDemand:
    """A durable function's worst case: its own invocation plus its chained invokes in flight."""

    function: str
    max_concurrency: int | None
    """The widest context.map/parallel's max_concurrency; None when unbounded or not resolvable."""
    concurrency_origin: str
    """Where max_concurrency comes from (a literal, an environment variable and its template value)."""
    concurrency_parameter: str | None
    """The template parameter that sets max_concurrency, when one does."""
    invokes_in_flight_per_branch: int
    concurrent_invocations_per_execution: int | None
    """1 (the orchestrator's invocation) + max_concurrency x chained invokes in flight per branch."""
    unreserved_demand: int | None
    """With all ``batches`` executions running at once, what draws on the unreserved pool."""
    problem: str | None = None

    def fits_in(self, pool: int) -> bool:
        """Unknown demand (unbounded or unresolved) never fits: the doctor cannot vouch for it."""
        return self.unreserved_demand is not None and self.unreserved_demand <= pool


@dataclass(frozen=True)
class DoctorReport:
    account: AccountConcurrency
    batches: int
    maps: list[MapDemand]
    functions: list[FunctionDemand]
    unreserved_demand: int
    """Concurrent invocations of the state machines that draw on the unreserved pool, all batches running."""
    fits: bool
    recommendations: list[str] = field(default_factory=list)
    durable: list[DurableDemand] = field(default_factory=list)
    """Durable functions' demand, judged beside the state machines' (a batch runs on one orchestrator)."""
    plan: list[str] = field(default_factory=list)
    """What the planner (orderbatch plan) says of the current MaxConcurrency and of the one that fits."""
    exhaustion: list[str] = field(default_factory=list)
    """Under a stated contention: how often an order spends its throttle retrier (plan/exhaustion.py)."""
    retrier_can_be_spent: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --- analysis -----------------------------------------------------------------------------------


def diagnose(
    model: TemplateModel,
    account: AccountConcurrency,
    batches: int = 1,
    *,
    plan_orders: int = 0,
    contention: Neighbour | None = None,
) -> DoctorReport:
    """Compare the worst-case demand of ``batches`` concurrent executions of every state machine.

    With ``plan_orders``, the planner also simulates ``batches`` batches of that many orders at the
    current MaxConcurrency and at the one that fits, and names the setting to change (``report.plan``).
    With ``contention`` too (another tenant holding slots of the pool for a while), it forecasts how
    often an order spends its throttle retrier at the current MaxConcurrency (``report.exhaustion``).
    """
    if batches < 1:
        raise ValueError("batches must be at least 1")

    def unreserved(key: str) -> bool:
        function = model.functions.get(key)
        return function is None or function.reserved_concurrency is None

    maps = [
        item
        for state_machine in model.state_machines
        for item in _map_demands(state_machine, model, unreserved)
    ]
    demand = Demand()
    for state_machine in model.state_machines:
        demand = demand.plus(definition_demand(state_machine, model.functions, unreserved))
    demand = demand.scaled(batches)
    unreserved_demand = demand.total

    functions: list[FunctionDemand] = []
    for key, invocations in sorted(demand.by_function.items()):
        function = model.functions.get(key)
        reserved = function.reserved_concurrency if function else None
        functions.append(
            FunctionDemand(key, function.function_name if function else None, reserved, invocations)
        )
    durable = [_durable_demand(item, model, batches, unreserved) for item in durable_functions(model)]
    fits = (
        unreserved_demand <= account.unreserved
        and not any(item.over_reservation for item in functions)
        and all(item.fits_in(account.unreserved) for item in durable)
    )
    report = DoctorReport(account, batches, maps, functions, unreserved_demand, fits, durable=durable)
    report.recommendations.extend(_recommendations(report))
    report.recommendations.extend(_durable_recommendations(report))
    if plan_orders > 0:
        report.plan.extend(plan_advice(model, report, plan_orders))
        if contention is not None:
            lines, spent = exhaustion_advice(model, report, plan_orders, contention)
            report.exhaustion.extend(lines)
            return dataclasses.replace(report, retrier_can_be_spent=spent)
    return report


def _durable_demand(
    durable: DurableFunction, model: TemplateModel, batches: int, unreserved: Callable[[str], bool]
) -> DurableDemand:
    widest = max(durable.operations, key=lambda operation: operation.concurrency.value or 0, default=None)
    origin = widest.concurrency.origin if widest else "no context.map or context.parallel"
    parameter = widest.concurrency.parameter if widest else None
    unbounded = next((item for item in durable.operations if item.concurrency.value is None), None)
    if unbounded is not None:
        origin = unbounded.concurrency.origin
    per_execution = durable.worst_case_demand if durable.problem is None else None
    unreserved_demand = None
    if per_execution is not None:
        own = 1 if unreserved(durable.function.logical_id) else 0
        chained = per_execution - 1
        # The branches' invokes may reach any function its environment names: they draw on the pool
        # unless every one of them has a reservation of its own.
        if durable.invoked_functions and not any(unreserved(name) for name in durable.invoked_functions):
            chained = 0
        unreserved_demand = (own + chained) * batches
    return DurableDemand(
        function=durable.function.logical_id,
        max_concurrency=durable.worst_case_concurrency if durable.problem is None else None,
        concurrency_origin=origin if durable.problem is None else "source not read",
        concurrency_parameter=parameter,
        invokes_in_flight_per_branch=durable.invokes_in_flight_per_branch,
        concurrent_invocations_per_execution=per_execution,
        unreserved_demand=unreserved_demand,
        problem=durable.problem,
    )


def _durable_recommendations(report: DoctorReport) -> list[str]:
    advice: list[str] = []
    pool, batches = report.account.unreserved, report.batches
    for item in report.durable:
        if item.unreserved_demand is None:
            why = item.problem or item.concurrency_origin
            advice.append(
                f"Durable function {item.function}: worst case unknown ({why}). Give its context.map/"
                "parallel a max_concurrency the template fixes (see `orderbatch lint`)."
            )
            continue
        if item.unreserved_demand <= pool:
            advice.append(
                f"Durable function {item.function} fits: worst case {item.unreserved_demand} concurrent "
                f"invocations for {batches} execution(s) against {pool} unreserved."
            )
            continue
        per_branch = item.invokes_in_flight_per_branch
        fitting = (pool // batches - 1) // per_branch if per_branch else 0
        if fitting >= 1:
            advice.append(
                f"Set max_concurrency of durable function {item.function} to {fitting} (now "
                f"{item.max_concurrency}, {item.concurrency_origin}) so {batches} execution(s) x (1 + "
                f"{fitting} x {per_branch} chained invoke(s)) fit in the {pool} unreserved."
            )
        else:
            advice.append(
                f"Even max_concurrency 1 in durable function {item.function} needs {2 * batches} concurrent "
                f"executions for {batches} execution(s), over the {pool} unreserved: run fewer at once or "
                "request a higher Lambda concurrency quota."
            )
    return advice


def _map_demands(
    state_machine: StateMachine, model: TemplateModel, unreserved: Callable[[str], bool]
) -> list[MapDemand]:
    demands = []
    for visit in walk_states(state_machine):
        if visit.state.get("Type") != "Map":
            continue
        map_state = read_map(visit.name, visit.path, visit.state, state_machine)
        per_iteration = map_iteration_demand(map_state, state_machine, model.functions, unreserved)
        all_tasks = map_iteration_demand(map_state, state_machine, model.functions).total
        outer = 1
        for enclosing in visit.enclosing_maps:
            outer *= enclosing.worst_case_concurrency
        demands.append(
            MapDemand(
                state_machine=state_machine.logical_id,
                state=visit.name,
                path="/".join(str(part) for part in visit.path),
                distributed=map_state.distributed,
                max_concurrency=map_state.max_concurrency,
                worst_case_iterations=map_state.worst_case_concurrency,
                lambda_tasks_per_iteration=all_tasks,
                unreserved_tasks_per_iteration=per_iteration.total,
                enclosing_copies=outer,
                concurrent_invocations=map_state.worst_case_concurrency * all_tasks * outer,
            )
        )
    return demands


def _recommendations(report: DoctorReport) -> list[str]:
    advice: list[str] = []
    pool = report.account.unreserved
    batches = report.batches
    busiest = [item for item in report.maps if item.unreserved_tasks_per_iteration]
    if report.unreserved_demand > pool:
        for item in busiest:
            per_iteration = item.unreserved_tasks_per_iteration * item.enclosing_copies * batches
            fitting = pool // per_iteration
            if fitting >= 1:
                advice.append(
                    f"Set MaxConcurrency of {item.state_machine} '{item.state}' to {fitting} (now "
                    f"{item.max_concurrency or 'unset'}) so {batches} batch(es) x {fitting} iterations x "
                    f"{item.unreserved_tasks_per_iteration * item.enclosing_copies} Lambda task(s) fit in "
                    f"the {pool} unreserved concurrent executions."
                )
            else:
                advice.append(
                    f"Even MaxConcurrency 1 in {item.state_machine} '{item.state}' needs {per_iteration} "
                    f"concurrent executions for {batches} batch(es), over the {pool} unreserved: run fewer "
                    "batches at once or request a higher Lambda concurrency quota."
                )
        no_reservations = (
            f"; at this limit none is possible, as Lambda keeps {MINIMUM_UNRESERVED_CONCURRENCY} unreserved"
            if report.account.limit <= MINIMUM_UNRESERVED_CONCURRENCY
            else ""
        )
        advice.append(
            f"Reserved concurrency only divides the account limit of {report.account.limit}, it adds no "
            f"capacity{no_reservations}. For more, request a higher 'Concurrent executions' quota."
        )
    for function in report.functions:
        if function.over_reservation:
            assert function.reserved_concurrency is not None
            advice.append(
                f"{function.function} is reserved at {function.reserved_concurrency} but {batches} batch(es) "
                f"can run {function.concurrent_invocations} invocations of it at once: lower the "
                "MaxConcurrency of the Map that invokes it, or raise its ReservedConcurrentExecutions to "
                f"{function.concurrent_invocations}."
            )
    if not advice:
        most = _most_batches(report)
        headroom = f"; up to {most} batches fit at once" if most is not None else ""
        advice.append(
            f"Fits: worst case {report.unreserved_demand} concurrent invocations for {batches} batch(es) "
            f"against {pool} unreserved{headroom}."
        )
    for item in report.maps:
        if item.max_concurrency is None and item.lambda_tasks_per_iteration:
            kind = "Distributed" if item.distributed else "inline"
            advice.append(
                f"{item.state_machine} '{item.state}' is an {kind} Map without MaxConcurrency: the figures "
                f"assume {item.worst_case_iterations} iterations at once. Set MaxConcurrency."
            )
    return advice


def _most_batches(report: DoctorReport) -> int | None:
    """How many batches fit at once: the tightest of the unreserved pool and each reservation."""
    limits = []
    if report.unreserved_demand:
        limits.append(report.account.unreserved // (report.unreserved_demand // report.batches))
    for function in report.functions:
        if function.reserved_concurrency is not None and function.concurrent_invocations:
            limits.append(
                function.reserved_concurrency // (function.concurrent_invocations // report.batches)
            )
    return min(limits) if limits else None


# --- the planner's view -------------------------------------------------------------------------


def plan_advice(model: TemplateModel, report: DoctorReport, orders: int) -> list[str]:
    """Simulated makespan and 429s of each Map at its MaxConcurrency and at the largest that fits.

    Two lines per Map that the planner can follow (Maps of one kind, inline or Distributed, fed by the
    same template parameter are planned once), naming the template Parameter that feeds MaxConcurrency
    through DefinitionSubstitutions.
    """
    from orderbatch.capacity.model import Neighbour
    from orderbatch.plan import PlanSettings, extract_workflows, simulate
    from orderbatch.plan.sweep import choose_best

    skipped: list[str] = []
    workflows = extract_workflows(model, skipped=skipped)
    account, batches = report.account, report.batches
    template_reserved = sum(function.reserved_concurrency or 0 for function in model.functions.values())
    # Reservations of other functions in the account shrink the pool as a neighbour that never leaves would.
    others = max(0, account.limit - template_reserved - account.unreserved)
    neighbour = Neighbour(others, 0.0, float("inf")) if others else None
    lines: list[str] = []
    planned: set[tuple[str, str, bool]] = set()
    for workflow in workflows:
        key = (
            workflow.state_machine,
            workflow.max_concurrency_parameter or workflow.map_state,
            workflow.distributed,
        )
        if key in planned:
            continue
        planned.add(key)
        current = workflow.effective_concurrency()
        candidates = [current]
        fitting = _fitting_concurrency(report, workflow.state_machine, workflow.map_state)
        if fitting is not None and fitting != current:
            candidates.append(min(fitting, workflow.concurrency_limit))
        setting = workflow.max_concurrency_setting()
        results = []
        for value in candidates:
            settings = PlanSettings(
                orders=orders,
                batches=batches,
                account_concurrency=account.limit,
                max_concurrency=value,
                neighbour=neighbour,
            )
            results.append(simulate(workflow, settings).labelled(f"{setting}={value}"))
        best, _reason = choose_best(results)
        figures = "; ".join(
            f"{setting} {value}{' (now)' if value == current else ''}: "
            f"makespan {result.makespan_seconds:,.1f} s, "
            f"{result.throttles_per_order:.2f} 429s per order, {result.failed_orders} failed orders"
            for value, result in zip(candidates, results, strict=True)
        )
        first = results[0].settings
        lines.append(
            f"Planned {workflow.state_machine} '{workflow.map_state}' with {batches} batch(es) of {orders:,} "
            f"orders at quota {account.limit} ({first.work_seconds:g} s per Lambda task, cold starts "
            f"{first.cold_start_seconds:g} s): {figures}."
        )
        chosen = candidates[results.index(best)]
        lines.append(
            _change(
                workflow.state_machine,
                workflow.map_state,
                workflow.max_concurrency_parameter,
                chosen,
                current,
            )
            + _shared_with_durable(report, workflow.max_concurrency_parameter, chosen, current)
        )
    lines.extend(f"Not planned: {reason}." for reason in skipped)
    return lines


def exhaustion_advice(
    model: TemplateModel, report: DoctorReport, orders: int, contention: Neighbour
) -> tuple[list[str], bool]:
    """For each Map the planner follows, at its current MaxConcurrency under ``contention``: whether an
    order can spend its throttle retrier, with the forecast's figures; and whether any Map can."""
    from orderbatch.plan import PlanSettings, extract_workflows
    from orderbatch.plan.exhaustion import distinct_maps, forecast_state_machine

    lines: list[str] = []
    spent_anywhere = False
    for workflow in distinct_maps(extract_workflows(model, skipped=[])):
        settings = PlanSettings(
            orders=orders,
            batches=report.batches,
            account_concurrency=report.account.limit,
            neighbour=contention,
        )
        forecast = forecast_state_machine(workflow, settings)
        batch = forecast.batch_failure
        where = (
            f"{workflow.state_machine} '{workflow.map_state}' at {workflow.max_concurrency_setting()} "
            f"{workflow.effective_concurrency()}"
        )
        if forecast.failed_orders:
            spent_anywhere = True
            lines.append(
                f"WARNING: {where}: the throttle retrier can be spent. In {forecast.runs} simulated batches "
                f"{forecast.runs_with_failure} failed orders from 429s alone ({forecast.failed_orders} in "
                f"all); P(a batch fails one or more) {batch.estimate:.3f} (95% CI {batch.low:.3f}-"
                f"{batch.high:.3f}). Fresh Map items take the slots its backed-off retries wait for: set "
                "such orders aside for a second pass after the batch (docs/throttling.md), or lower "
                "MaxConcurrency to the capacity left."
            )
        elif forecast.deferred_orders:
            lines.append(
                f"{where}: in {forecast.runs} simulated batches {forecast.deferred_orders} orders spent "
                "their throttle retrier in the batch and were set aside; the second pass ran them again "
                f"and none failed (P(a batch fails one or more) at most {batch.high:.3f}, 95%)."
            )
        else:
            lines.append(
                f"{where}: no order spent its throttle retrier in {forecast.runs} simulated batches "
                f"(P(a batch fails one or more) at most {batch.high:.3f}, 95%)."
            )
    return lines, spent_anywhere


def _fitting_concurrency(report: DoctorReport, state_machine: str, map_state: str) -> int | None:
    """The largest MaxConcurrency whose worst case fits the unreserved pool with all batches running."""
    for item in report.maps:
        if (item.state_machine, item.state) == (state_machine, map_state):
            per_iteration = item.unreserved_tasks_per_iteration * item.enclosing_copies * report.batches
            if per_iteration == 0:
                return None
            return max(1, report.account.unreserved // per_iteration)
    return None


def _shared_with_durable(report: DoctorReport, parameter: str | None, chosen: int, current: int) -> str:
    """A parameter that also feeds a durable function's max_concurrency changes that demand too."""
    if parameter is None or chosen == current:
        return ""
    notes = []
    for item in report.durable:
        if item.concurrency_parameter != parameter or item.unreserved_demand is None:
            continue
        per_branch = item.invokes_in_flight_per_branch
        demand = (1 + chosen * per_branch) * report.batches
        verdict = "fits" if demand <= report.account.unreserved else "does NOT fit"
        notes.append(
            f" {parameter} also sets durable function {item.function}'s max_concurrency: at {chosen} its "
            f"worst case is {demand} of {report.account.unreserved} unreserved, which {verdict}."
        )
    return "".join(notes)


def _change(state_machine: str, map_state: str, parameter: str | None, chosen: int, current: int) -> str:
    if chosen == current:
        where = f"template parameter {parameter}" if parameter else f"MaxConcurrency of '{map_state}'"
        return f"Keep {where} at {current}: the planner finds no better setting among those it tried."
    if parameter:
        return (
            f"Set the template parameter {parameter} to {chosen} (now {current}; it feeds MaxConcurrency of "
            f"{state_machine} '{map_state}' through DefinitionSubstitutions): "
            f"sam deploy --parameter-overrides {parameter}={chosen}."
        )
    return f"Set MaxConcurrency of {state_machine} '{map_state}' to {chosen} (now {current})."


# --- reading AWS --------------------------------------------------------------------------------


class AwsClients:
    """boto3 clients created on first use, all with the same endpoint and Region."""

    def __init__(
        self,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        clients: Mapping[str, Any] | None = None,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.region_name = region_name
        self._clients: dict[str, Any] = dict(clients or {})

    def __call__(self, service: str) -> Any:
        if service not in self._clients:
            import boto3

            create_client: Any = boto3.client  # any service by name, so not the typed overloads
            self._clients[service] = create_client(
                service, endpoint_url=self.endpoint_url, region_name=self.region_name
            )
        return self._clients[service]


def endpoint_override() -> str | None:
    """AWS_ENDPOINT_URL when set (a local cloud), else real AWS."""
    return os.environ.get("AWS_ENDPOINT_URL") or None


def read_account_concurrency(lambda_client: Any) -> AccountConcurrency:
    settings = lambda_client.get_account_settings()["AccountLimit"]
    return AccountConcurrency(
        limit=int(settings["ConcurrentExecutions"]),
        unreserved=int(settings["UnreservedConcurrentExecutions"]),
    )


def account_from_limit(limit: int, model: TemplateModel) -> AccountConcurrency:
    """An account with ``limit`` executions where this template's reservations are the only ones."""
    reserved = sum(function.reserved_concurrency or 0 for function in model.functions.values())
    return AccountConcurrency(limit=limit, unreserved=max(limit - reserved, 0))


def read_stack(stack_name: str, clients: AwsClients) -> TemplateModel:
    """The deployed stack's functions (with their reserved concurrency) and state machine definitions."""
    cloudformation = clients("cloudformation")
    resources: list[Mapping[str, Any]] = []
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        resources.extend(page["StackResourceSummaries"])

    functions: dict[str, LambdaFunction] = {}
    state_machines: list[StateMachine] = []
    for resource in resources:
        logical_id = resource["LogicalResourceId"]
        physical_id = resource.get("PhysicalResourceId")
        if not physical_id:
            continue
        if resource["ResourceType"] == LAMBDA_FUNCTION:
            concurrency = clients("lambda").get_function_concurrency(FunctionName=physical_id)
            properties: dict[str, Any] = {"FunctionName": physical_id}
            if "ReservedConcurrentExecutions" in concurrency:
                properties["ReservedConcurrentExecutions"] = concurrency["ReservedConcurrentExecutions"]
            functions[logical_id] = LambdaFunction(logical_id, LAMBDA_FUNCTION, properties, {}, {})
        elif resource["ResourceType"] == STATE_MACHINE:
            described = clients("stepfunctions").describe_state_machine(stateMachineArn=physical_id)
            definition = json.loads(described["definition"])
            state_machines.append(StateMachine(logical_id, STATE_MACHINE, "Definition", definition, {}))
    return TemplateModel(None, functions, tuple(state_machines), {})


# --- presenting ---------------------------------------------------------------------------------


def format_report(report: DoctorReport) -> str:
    account = report.account
    lines = [
        f"Account: {account.limit} concurrent executions, {account.unreserved} unreserved.",
        f"Worst case with {report.batches} batch(es) running at once:",
    ]
    for item in report.maps:
        limit = (
            item.max_concurrency
            if item.max_concurrency is not None
            else f"unset (~{item.worst_case_iterations})"
        )
        copies = f" x {item.enclosing_copies} enclosing" if item.enclosing_copies > 1 else ""
        lines.append(
            f"  Map {item.state_machine} '{item.state}': MaxConcurrency {limit} x "
            f"{item.lambda_tasks_per_iteration} Lambda task(s) per iteration{copies} = "
            f"{item.concurrent_invocations} per batch"
        )
    for function in report.functions:
        reserved = (
            f"reserved {function.reserved_concurrency}"
            if function.reserved_concurrency is not None
            else "unreserved"
        )
        flag = "  OVER" if function.over_reservation else ""
        lines.append(f"  {function.function}: {function.concurrent_invocations} at once ({reserved}){flag}")
    machines_fit = report.unreserved_demand <= account.unreserved
    lines.append(
        f"Unreserved demand {report.unreserved_demand} of {account.unreserved}: "
        f"{'fits' if machines_fit else 'DOES NOT FIT'}."
    )
    for durable in report.durable:
        per_execution = durable.concurrent_invocations_per_execution
        if per_execution is None or durable.unreserved_demand is None:
            lines.append(
                f"  Durable function {durable.function}: "
                f"unknown ({durable.problem or durable.concurrency_origin})"
            )
            continue
        verdict = "fits" if durable.unreserved_demand <= account.unreserved else "DOES NOT FIT"
        lines.append(
            f"  Durable function {durable.function}: 1 invocation + "
            f"max_concurrency {durable.max_concurrency} ({durable.concurrency_origin}) x "
            f"{durable.invokes_in_flight_per_branch} chained invoke(s) in flight = {per_execution} per "
            f"execution; unreserved demand {durable.unreserved_demand} of "
            f"{account.unreserved}: {verdict}."
        )
    if report.durable and report.maps:
        known = [item.unreserved_demand for item in report.durable if item.unreserved_demand is not None]
        if len(known) == len(report.durable):
            lines.append(
                f"  Both orchestrators running {report.batches} batch(es) at once: "
                f"{report.unreserved_demand + sum(known)} of {account.unreserved}."
            )
    lines.append(f"Overall: {'fits' if report.fits else 'DOES NOT FIT'}.")
    lines.extend(f"- {advice}" for advice in report.recommendations)
    if report.plan:
        lines.append("Planner (orderbatch plan, virtual time on AWS's quotas):")
        lines.extend(f"- {line}" for line in report.plan)
    if report.exhaustion:
        lines.append("Throttle retriers under the stated contention (orderbatch plan, repeated over seeds):")
        lines.extend(f"- {line}" for line in report.exhaustion)
    return "\n".join(lines)
