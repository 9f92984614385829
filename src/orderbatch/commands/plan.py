"""`orderbatch plan`: the template on AWS's quotas in virtual time, at any number of orders."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orderbatch.project import default_template

if TYPE_CHECKING:
    from orderbatch.plan.durable import DurableModel, DurableResult
    from orderbatch.plan.exhaustion import ExhaustionForecast
    from orderbatch.plan.settings import PlanSettings
    from orderbatch.plan.sweep import PlanRequest

ORCHESTRATORS = ("stepfunctions", "durable")


def register(subparsers: argparse._SubParsersAction) -> None:
    from orderbatch.plan import durable as durable_defaults
    from orderbatch.plan import settings as defaults
    from orderbatch.plan.workflow import RETRIER_TRANSFORMS

    plan = subparsers.add_parser(
        "plan",
        help="simulate the template's batches on Lambda and Step Functions quotas (virtual time, no AWS)",
        description="Simulate N orders per batch through the template's Map on AWS's quotas (account and "
        "reserved concurrency, 429s and the Task retriers, cold starts, scaling rate, state-transition and "
        "StartExecution buckets) and report the makespan against the bound, 429s and retries per order, "
        "failed orders, billed transitions, Lambda GB-s, DynamoDB writes and the cost per million orders. "
        "See docs/plan.md.",
    )
    plan.add_argument(
        "--template", type=Path, default=None, help="SAM/CloudFormation template (default: the app's)"
    )
    plan.add_argument(
        "--parameter-overrides",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="template parameters, as sam deploy takes them (e.g. MapMaxConcurrency=16)",
    )
    plan.add_argument(
        "--state-machine", metavar="LOGICAL_ID", help="which state machine (default: the first)"
    )
    plan.add_argument(
        "--map",
        dest="map_state",
        metavar="STATE",
        help="which Map state (default: the first Distributed Map)",
    )
    plan.add_argument("--orders", type=int, default=10_000, help="orders per batch, N (default 10,000)")
    plan.add_argument("--batches", type=int, default=1, help="batches started at once (default 1)")
    plan.add_argument(
        "--account-concurrency",
        type=int,
        default=defaults.DEFAULT_ACCOUNT_CONCURRENCY,
        help=f"account concurrency quota, C (default {defaults.DEFAULT_ACCOUNT_CONCURRENCY})",
    )
    plan.add_argument(
        "--reserved", action="append", default=[], metavar="FN=N", help="reserved concurrency of a function"
    )
    plan.add_argument(
        "--work",
        type=float,
        default=defaults.DEFAULT_MEAN_SECONDS,
        help="mean seconds of every function without --duration, d "
        f"(default {defaults.DEFAULT_MEAN_SECONDS})",
    )
    plan.add_argument(
        "--duration",
        action="append",
        default=[],
        metavar="FN=MEAN[,P99]",
        help="one function's duration in seconds: a lognormal with this mean and p99 "
        "(default p99 = 2 x mean)",
    )
    plan.add_argument(
        "--fixed-durations",
        action="store_true",
        help="functions without --duration run exactly --work seconds",
    )
    plan.add_argument(
        "--cold-start",
        type=float,
        default=defaults.DEFAULT_COLD_START_SECONDS,
        metavar="SECONDS",
        help="init time of a new execution environment "
        f"(default {defaults.DEFAULT_COLD_START_SECONDS}, assumed)",
    )
    plan.add_argument(
        "--warm",
        type=int,
        default=0,
        metavar="N",
        help="warm environments per function at the start (default 0)",
    )
    plan.add_argument(
        "--neighbour",
        metavar="SLOTS@START+DURATION",
        help="another tenant holding SLOTS of the unreserved pool from START for DURATION seconds "
        "(e.g. 5@0+120)",
    )
    plan.add_argument(
        "--transitions-per-second",
        type=float,
        default=defaults.DEFAULT_TRANSITIONS_PER_SECOND,
        help="Standard state-transition refill rate (default 5000; 800 in smaller Regions)",
    )
    plan.add_argument(
        "--transitions-burst",
        type=float,
        default=defaults.DEFAULT_TRANSITIONS_BURST,
        help="state-transition bucket size (default 5000)",
    )
    plan.add_argument(
        "--start-executions-per-second",
        type=float,
        default=defaults.DEFAULT_START_EXECUTIONS_PER_SECOND,
        help="StartExecution rate for Distributed Map children (default 300; 150 in smaller Regions)",
    )
    plan.add_argument(
        "--step-overhead",
        type=float,
        default=defaults.DEFAULT_STEP_OVERHEAD_SECONDS,
        metavar="SECONDS",
        help=f"Step Functions' time between a Task's end and the next call "
        f"(default {defaults.DEFAULT_STEP_OVERHEAD_SECONDS}, assumed)",
    )
    plan.add_argument("--retrier", choices=list(RETRIER_TRANSFORMS), default="app", help="retrier variant")
    plan.add_argument(
        "--orchestrators",
        nargs="+",
        choices=ORCHESTRATORS,
        default=list(ORCHESTRATORS),
        help="plan the batch on the state machine, the durable function (DurableOrderBatchFunction), or "
        "both side by side (default both; a --sweep plans the state machine only)",
    )
    plan.add_argument(
        "--chained-throttles",
        choices=["orchestrator", "service"],
        default="orchestrator",
        help="durable: a 429 on a chained invoke fails the invoke and the orchestrator's retrier waits "
        "(orchestrator, what the app is written for), or the service retries it unseen (service, as the "
        "local cloud does); default orchestrator",
    )
    plan.add_argument(
        "--replay",
        metavar="BASE[,PER_OPERATION]",
        help="seconds one durable replay takes, and more per checkpointed operation in the execution's "
        f"history (default {durable_defaults.DEFAULT_REPLAY_BASE_SECONDS:g},"
        f"{durable_defaults.DEFAULT_REPLAY_PER_OPERATION_SECONDS:g}, assumed)",
    )
    plan.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same plan")
    plan.add_argument(
        "--forecast-runs",
        type=int,
        default=None,
        metavar="RUNS",
        help="repeat the plan over RUNS seeds to forecast how often an order spends its throttle retrier "
        "(default: enough runs for about 200,000 simulated orders, 20 to 400; 0 skips it)",
    )
    plan.add_argument(
        "--sweep",
        metavar="KEY=V1,V2,...",
        help="vary a template parameter (MapMaxConcurrency=4,8,16), MaxConcurrency, "
        "or retrier=app,docs,no-jitter",
    )
    plan.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the JSON document to FILE (to stdout without FILE, instead of the text)",
    )
    plan.add_argument(
        "--html", type=Path, metavar="FILE", help="write a self-contained HTML report with plots"
    )
    plan.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.lint.template_model import read_template_file
    from orderbatch.plan.durable import OperationsLimitError
    from orderbatch.plan.report import (
        TABLE_LEGEND,
        document,
        format_durable_summary,
        format_side_by_side,
        format_summary,
        format_table,
        write_html,
        write_json,
    )
    from orderbatch.plan.sweep import PlanRequest, Sweep, choose_best, run_sweep

    try:
        request = PlanRequest(
            model=read_template_file((args.template or default_template()).resolve()),
            settings=_settings(args),
            parameter_overrides=_parameter_overrides(args.parameter_overrides),
            retrier=args.retrier,
            state_machine=args.state_machine,
            map_state=args.map_state,
        )
        sweep = Sweep.parse(args.sweep) if args.sweep else None
        results = run_sweep(request, sweep) if sweep else [request.run()]
        durable = []
        if "durable" in args.orchestrators and not sweep:
            try:
                durable = [request.run_durable(_durable_model(args.replay, args.chained_throttles))]
            except OperationsLimitError as error:
                if "stepfunctions" not in args.orchestrators:
                    raise
                print(f"orderbatch plan: durable function not planned: {error}", file=sys.stderr)
    except (ValueError, OSError) as error:
        print(f"orderbatch plan: {error}", file=sys.stderr)
        return 2
    best = choose_best(results) if sweep else None
    doc = document(results, best, durable)
    forecasts = [] if sweep or args.forecast_runs == 0 else _exhaustion_forecasts(request, args, durable)
    if forecasts:
        doc["throttle_exhaustion"] = {name: forecast.to_json() for name, forecast in forecasts}
    if args.json == "-":
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if sweep:
            print(format_table(results))
            print(TABLE_LEGEND)
            assert best is not None
            print(f"Best: {best[1]}")
        elif durable and "stepfunctions" not in args.orchestrators:
            print(format_durable_summary(durable[0]))
        else:
            print(format_summary(results[0]))
            if durable:
                print()
                print(format_durable_summary(durable[0]))
                print()
                print(format_side_by_side(results[0], durable[0]))
        print("".join(f"\n{name}: {forecast.describe()}\n" for name, forecast in forecasts), end="")
        if args.json:
            write_json(doc, Path(args.json))
            print(f"JSON: {args.json}", file=sys.stderr)
    if args.html:
        write_html(results, args.html, best)
        print(f"HTML report: {args.html}", file=sys.stderr)
    return 0


def _exhaustion_forecasts(
    request: PlanRequest, args: argparse.Namespace, durable: list[DurableResult]
) -> list[tuple[str, ExhaustionForecast]]:
    """The plan repeated over seeds: how often an order spends its throttle retrier (plan/exhaustion.py)."""
    from orderbatch.plan.exhaustion import forecast_durable, forecast_state_machine

    runs = args.forecast_runs
    workflow = request.workflow()
    forecasts = []
    if "stepfunctions" in args.orchestrators:
        forecasts.append(("stepfunctions", forecast_state_machine(workflow, request.settings, runs)))
    if durable:
        model = _durable_model(args.replay, args.chained_throttles)
        forecasts.append(("durable", forecast_durable(workflow, request.settings, model, runs)))
    return forecasts


def _settings(args: argparse.Namespace) -> PlanSettings:
    from orderbatch.plan.durations import Duration
    from orderbatch.plan.settings import PlanSettings, parse_assignments, parse_neighbour

    reserved = {
        name: _whole(value, "--reserved")
        for name, value in parse_assignments(args.reserved, "--reserved").items()
    }
    durations = {
        name: Duration.parse(value) for name, value in parse_assignments(args.duration, "--duration").items()
    }
    return PlanSettings(
        orders=args.orders,
        batches=args.batches,
        account_concurrency=args.account_concurrency,
        work_seconds=args.work,
        durations=durations,
        fixed_durations=args.fixed_durations,
        reserved=reserved,
        cold_start_seconds=args.cold_start,
        warm_environments=args.warm,
        neighbour=parse_neighbour(args.neighbour) if args.neighbour else None,
        transitions_per_second=args.transitions_per_second,
        transitions_burst=args.transitions_burst,
        start_executions_per_second=args.start_executions_per_second,
        start_executions_burst=args.start_executions_per_second,
        step_overhead_seconds=args.step_overhead,
        seed=args.seed,
    )


def _durable_model(text: str | None, chained_throttles: str) -> DurableModel:
    from orderbatch.plan.durable import DurableModel

    service = chained_throttles == "service"
    if text is None:
        return DurableModel(service_retries_chained_throttles=service)
    parts = [part.strip() for part in text.split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"--replay {text!r} is not BASE[,PER_OPERATION] in seconds") from None
    if len(numbers) not in (1, 2):
        raise ValueError(f"--replay {text!r} is not BASE[,PER_OPERATION] in seconds")
    return DurableModel(
        replay_base_seconds=numbers[0],
        replay_per_operation_seconds=numbers[1]
        if len(numbers) == 2
        else DurableModel.replay_per_operation_seconds,
        service_retries_chained_throttles=service,
    )


def _parameter_overrides(items: list[str]) -> dict[str, str]:
    from orderbatch.plan.workflow import parse_parameter_overrides

    return parse_parameter_overrides(items)


def _whole(value: str, option: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{option} {value!r} is not a whole number") from None
