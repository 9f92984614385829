"""`orderbatch bench-start`: a local cloud's start and its reset between tests, in figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orderbatch.project import default_template


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench-start",
        help="time a local cloud's start, in a fresh and a warm process, and its reset after a batch",
    )
    bench.add_argument("--template", type=Path, default=None, help="SAM template (default the project's)")
    bench.add_argument("--starts", type=int, default=3, help="starts in the warm process (default 3)")
    bench.add_argument(
        "--resets", type=int, default=10, help="batches, each followed by a reset (default 10)"
    )
    bench.add_argument("--orders", type=int, default=20, help="orders per batch (default 20)")
    bench.add_argument(
        "--command-starts",
        type=int,
        default=3,
        help="times `orderbatch local up` is launched as a process and timed to its first answered "
        "StartExecution (default 3; 0 skips it)",
    )
    bench.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.bench.startup import measure_startup

    if args.starts < 1 or args.resets < 1 or args.orders < 1 or args.command_starts < 0:
        print(
            "--starts, --resets and --orders must be positive, --command-starts not negative", file=sys.stderr
        )
        return 2
    figures = measure_startup(
        (args.template or default_template()).resolve(),
        starts=args.starts,
        resets=args.resets,
        orders=args.orders,
        command_starts=args.command_starts,
    )
    print("\n".join(figures.lines()))
    return 0
