"""`orderbatch bench`: every scenario on the local cloud, one table, a JSON document and an HTML report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orderbatch.project import default_template

DEFAULT_OUTPUT_DIR = Path(".orderbatch") / "bench"


def register(subparsers: argparse._SubParsersAction) -> None:
    from orderbatch.bench.scenarios import DEFAULT_SCENARIOS, SCENARIOS

    bench = subparsers.add_parser(
        "bench", help="benchmark concurrency and retry policies against the physical limit, with costs"
    )
    bench.add_argument("--orders", type=int, default=200, help="orders per batch, N (default 200)")
    bench.add_argument("--account-concurrency", type=int, default=10, help="account quota, C (default 10)")
    bench.add_argument(
        "--work", type=float, default=0.5, help="seconds each Lambda step works, d (default 0.5)"
    )
    bench.add_argument(
        "--scenarios",
        nargs="+",
        choices=list(SCENARIOS),
        default=list(DEFAULT_SCENARIOS),
        help="scenarios to run, in order (default: all but scale and soak; scale is meant for --orders "
        "10000; soak runs on its own)",
    )
    bench.add_argument(
        "--orchestrators",
        nargs="+",
        choices=["stepfunctions", "durable"],
        default=["stepfunctions", "durable"],
        help="run each scenario's batch through the state machine, the durable function "
        "(DurableOrderBatchFunction), or both, each on a fresh local cloud (default both)",
    )
    bench.add_argument(
        "--minutes",
        type=float,
        default=30.0,
        help="soak only: minutes to keep submitting batches (default 30; fractions allowed)",
    )
    bench.add_argument(
        "--report-every",
        type=float,
        default=60.0,
        help="soak only: seconds between progress lines (default 60)",
    )
    bench.add_argument(
        "--fault-probability",
        type=float,
        default=0.05,
        help="soak only: probability of each fault kind per invocation (default 0.05)",
    )
    bench.add_argument(
        "--baseline-minute",
        type=float,
        default=None,
        help="soak only: the minute whose RSS later minutes are judged against (default 10 for runs of "
        "30 minutes or more, else 5)",
    )
    bench.add_argument(
        "--trace-memory",
        type=Path,
        default=None,
        metavar="FILE",
        help="soak only: trace allocations (tracemalloc) and write the sites that grew since the baseline "
        "minute to FILE at every later report and on SIGUSR2 (also ORDERBATCH_TRACE_MEMORY=FILE)",
    )
    bench.add_argument(
        "--engine-items",
        type=int,
        default=1000,
        help="items of the engine throughput probe; 0 skips it (default 1000)",
    )
    bench.add_argument(
        "--no-warm",
        dest="warm",
        action="store_false",
        help="start each batch on cold execution environments (init time counts in the makespan)",
    )
    bench.add_argument("--timeout", type=float, default=None, help="seconds allowed per batch")
    bench.add_argument(
        "--batches",
        "--repeat",
        type=int,
        default=1,
        help="batches per scenario (a repeat count), back to back on one local cloud; each batch's orders "
        "failed by throttling, longest run of 429s and memory afterwards are reported",
    )
    bench.add_argument(
        "--neighbour-seconds",
        type=float,
        default=None,
        help="seconds the noisy neighbour holds half the quota (default: most of the expected run)",
    )
    bench.add_argument("--template", type=Path, default=None)
    bench.add_argument("--json", type=Path, default=DEFAULT_OUTPUT_DIR / "bench.json", dest="json_path")
    bench.add_argument("--html", type=Path, default=DEFAULT_OUTPUT_DIR / "report.html", dest="html_path")
    bench.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.bench import run_bench
    from orderbatch.bench.report import format_details, format_table, write_html, write_json
    from orderbatch.bench.runner import progress_printer
    from orderbatch.capacity.scenario import BenchSettings
    from orderbatch.plan.scenarios import bench_forecast, durable_bench_forecast

    if args.orders < 1 or args.account_concurrency < 1 or args.work < 0 or args.batches < 1:
        print(
            "--orders, --account-concurrency and --batches must be positive, --work not negative",
            file=sys.stderr,
        )
        return 2
    if args.neighbour_seconds is not None and args.neighbour_seconds <= 0:
        print("--neighbour-seconds must be positive", file=sys.stderr)
        return 2
    if "soak" in args.scenarios:
        return run_soak_command(args)
    settings = BenchSettings(
        template=(args.template or default_template()).resolve(),
        orders=args.orders,
        quota=args.account_concurrency,
        work_seconds=args.work,
        warm=args.warm,
        timeout_seconds=args.timeout,
        batches=args.batches,
        neighbour_seconds=args.neighbour_seconds,
    )
    interactive = sys.stderr.isatty()

    def announce(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        document = run_bench(
            settings,
            args.scenarios,
            engine_items=args.engine_items,
            progress=progress_printer(sys.stderr, interactive=interactive),
            announce=announce,
            forecast=bench_forecast,
            orchestrators=tuple(args.orchestrators),
            durable_forecast=durable_bench_forecast,
        )
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except ValueError as error:
        print(f"orderbatch bench: {error}", file=sys.stderr)
        return 2
    print(format_table(document["scenarios"]))
    print()
    print(format_details(document))
    write_json(document, args.json_path)
    write_html(document, args.html_path)
    print(f"\nJSON: {args.json_path}\nHTML: {args.html_path}")
    return 0


def run_soak_command(args: argparse.Namespace) -> int:
    """Exit 0 when the goal was met (memory not yet judged in a run shorter than its baseline minute)."""
    from orderbatch.bench.report import write_json
    from orderbatch.bench.soak import SoakSettings, run_soak
    from orderbatch.bench.soak_report import format_summary, write_soak_html

    if args.scenarios != ["soak"]:
        print("the soak runs on its own: --scenarios soak", file=sys.stderr)
        return 2
    if args.minutes <= 0 or args.report_every <= 0 or not 0 <= args.fault_probability <= 1:
        print("--minutes and --report-every must be positive, --fault-probability in [0, 1]", file=sys.stderr)
        return 2
    settings = SoakSettings(
        template=(args.template or default_template()).resolve(),
        minutes=args.minutes,
        orders=args.orders,
        quota=args.account_concurrency,
        work_seconds=args.work,
        report_every_seconds=args.report_every,
        fault_probability=args.fault_probability,
        baseline_minute=args.baseline_minute,
        trace_memory=args.trace_memory,
    )
    try:
        document = run_soak(settings, announce=lambda text: print(text, flush=True))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print()
    print(format_summary(document))
    write_json(document, args.json_path)
    write_soak_html(document, args.html_path)
    print(f"\nJSON: {args.json_path}\nHTML: {args.html_path}")
    return 0 if document["soak"]["verdict"]["met"] else 1
