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
        help="scenarios to run, in order (default: all but scale; scale is meant for --orders 10000)",
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
        type=int,
        default=1,
        help="batches per scenario, back to back on one local cloud; memory after each is reported",
    )
    bench.add_argument("--template", type=Path, default=None)
    bench.add_argument("--json", type=Path, default=DEFAULT_OUTPUT_DIR / "bench.json", dest="json_path")
    bench.add_argument("--html", type=Path, default=DEFAULT_OUTPUT_DIR / "report.html", dest="html_path")
    bench.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.bench import BenchSettings, run_bench
    from orderbatch.bench.report import format_details, format_table, write_html, write_json
    from orderbatch.bench.runner import progress_printer

    if args.orders < 1 or args.account_concurrency < 1 or args.work < 0:
        print("--orders and --account-concurrency must be positive, --work not negative", file=sys.stderr)
        return 2
    settings = BenchSettings(
        template=(args.template or default_template()).resolve(),
        orders=args.orders,
        quota=args.account_concurrency,
        work_seconds=args.work,
        warm=args.warm,
        timeout_seconds=args.timeout,
        batches=args.batches,
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
        )
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(format_table(document["scenarios"]))
    print()
    print(format_details(document))
    write_json(document, args.json_path)
    plots = write_html(
        document,
        args.html_path,
        plots_dir=args.html_path.with_suffix("").with_name(args.html_path.stem + "-plots"),
    )
    plots_note = f" (plots also in {plots[0].parent})" if plots else ""
    print(f"\nJSON: {args.json_path}\nHTML: {args.html_path}{plots_note}")
    return 0
