"""`orderbatch faults crash-matrix`: crash every task function at every point its AWS calls define.

It starts its own local cloud (one per configuration, on a free port), so nothing else needs to run;
see docs/faults.md, "The crash-point matrix".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from orderbatch.project import default_template


def register(subparsers: argparse._SubParsersAction) -> None:
    faults = subparsers.add_parser("faults", help="fault experiments, each on a local cloud of its own")
    experiments = faults.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    matrix = experiments.add_parser(
        "crash-matrix",
        help="kill each task function's runtime once at every point found by recording its AWS calls, "
        "alone and with a concurrent duplicate, and audit each batch; then the control runs",
    )
    matrix.add_argument("--json", action="store_true", help="print every run as one JSON document")
    matrix.add_argument(
        "--functions",
        nargs="+",
        default=None,
        metavar="FUNCTION",
        help="steps to crash, by name (validate reserve charge confirm cancel summarize, and orchestrator: "
        "the durable function) or logical ID; comma-separated lists work too (default: every step the "
        "orchestrator has)",
    )
    matrix.add_argument(
        "--orchestrator",
        choices=("stepfunctions", "durable"),
        default="stepfunctions",
        help="what runs the batches: the state machine, or the durable function, whose own checkpoint "
        "boundaries are crashed too, alone and with a second start under the same execution name "
        "(default stepfunctions)",
    )
    matrix.add_argument(
        "--no-controls",
        action="store_true",
        help="skip the control runs (idempotency off, effect keys off, both off)",
    )
    matrix.add_argument(
        "--no-failure-modes",
        action="store_true",
        help="skip Powertools idempotency's failure modes (no time left, an in-progress record expired "
        "while its run goes on) and their controls",
    )
    matrix.add_argument(
        "--parallel",
        type=int,
        default=None,
        help="batches run at once on the local cloud, the account's quota growing with them (default 16)",
    )
    matrix.add_argument("--template", type=Path, default=None, help="SAM template (default ./template.yaml)")
    matrix.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    matrix.set_defaults(func=run_crash_matrix)
    register_linearizability(experiments)
    register_fuzz(experiments)


def run_crash_matrix(args: argparse.Namespace) -> int:
    from orderbatch.faults.crash_cases import DURABLE, DURABLE_STEPS, ORCHESTRATOR, STEPS, find_steps
    from orderbatch.faults.crash_matrix import DEFAULT_PARALLEL_BATCHES, run_matrix
    from orderbatch.faults.crash_results import render
    from orderbatch.faults.powertools_modes import render_failure_modes, run_failure_modes

    names = [name for value in args.functions or () for name in value.split(",") if name]
    try:
        default_steps = [*DURABLE_STEPS, ORCHESTRATOR] if args.orchestrator == DURABLE else list(STEPS)
        steps = find_steps(names) if names else default_steps
    except ValueError as error:
        print(f"orderbatch: {error}", file=sys.stderr)
        return 2

    def progress(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    parallel = args.parallel or DEFAULT_PARALLEL_BATCHES
    template = args.template or default_template()
    result = run_matrix(
        steps,
        controls=not args.no_controls,
        parallel=parallel,
        template=template,
        progress=progress,
        orchestrator=args.orchestrator,
    )
    # Powertools' failure modes are the task functions' own, measured under the state machine.
    modes = (
        None
        if args.no_failure_modes or args.orchestrator == DURABLE
        else run_failure_modes(steps, parallel=parallel, template=template, progress=progress)
    )
    if args.json:
        document = result.to_dict()
        if modes is not None:
            document["failure_modes"] = modes.to_dict()
        print(json.dumps(document, indent=2))
    else:
        print(render(result))
        if modes is not None:
            print()
            print(render_failure_modes(modes))
    return 0 if result.ok and (modes is None or modes.ok) else 1


def register_linearizability(experiments: argparse._SubParsersAction) -> None:
    check = experiments.add_parser(
        "linearizability",
        help="race clients on a few hot keys of a local cloud's DynamoDB, record every history and check "
        "that it is linearizable (Wing-Gong-Lowe search); also one winner per contended conditional put "
        "and counters equal to their acknowledged ADDs",
    )
    check.add_argument("--histories", type=int, default=100, help="histories recorded and checked (100)")
    check.add_argument("--operations", type=int, default=200, help="operations per history (200)")
    check.add_argument("--threads", type=int, default=6, help="client threads per process (6)")
    check.add_argument(
        "--processes",
        type=int,
        default=0,
        help="worker processes, each with --threads clients of its own (default 0: threads here only)",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of the random requests (0)")
    check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    check.set_defaults(func=run_linearizability)


def run_linearizability(args: argparse.Namespace) -> int:
    from orderbatch.faults.linearizability_workload import run_on_local_cloud

    if min(args.histories, args.operations, args.threads) < 1 or args.processes < 0:
        print("orderbatch: --histories, --operations and --threads must be positive", file=sys.stderr)
        return 2

    def progress(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    summary = run_on_local_cloud(
        histories=args.histories,
        operations=args.operations,
        threads=args.threads,
        processes=args.processes,
        seed=args.seed,
        progress=progress,
    )
    print(summary.render())
    return 0 if summary.ok else 1


def register_fuzz(experiments: argparse._SubParsersAction) -> None:
    fuzz = experiments.add_parser(
        "fuzz",
        help="send requests generated from botocore's service models (valid, at AWS's limits, and spoiled) "
        "to a local cloud of its own and hold every answer to AWS's codes and statuses (docs/bad-input.md)",
    )
    fuzz.add_argument(
        "--requests", type=int, default=2_000, help="generated requests to send (default 2,000)"
    )
    fuzz.add_argument("--seed", type=int, default=20261206, help="Hypothesis's seed (default 20261206)")
    fuzz.add_argument(
        "--template",
        type=Path,
        default=None,
        help="SAM template to deploy and fuzz (default: the fuzzer's own, one resource of each kind)",
    )
    fuzz.add_argument("--no-shrink", action="store_true", help="report failures as found, without shrinking")
    fuzz.add_argument("--json", action="store_true", help="print the summary as one JSON document")
    fuzz.set_defaults(func=run_fuzz)


def run_fuzz(args: argparse.Namespace) -> int:
    from orderbatch.faults.protocol_fuzz import FUZZ_TEMPLATE, fuzz_local_cloud

    report = fuzz_local_cloud(
        examples=args.requests,
        seed_value=args.seed,
        template=args.template or FUZZ_TEMPLATE,
        shrink=not args.no_shrink,
    )
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.summary())
    return 1 if report.failures else 0
