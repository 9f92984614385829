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
        "--parallel", type=int, default=None, help="batches run at once on the local cloud (default 8)"
    )
    matrix.add_argument("--template", type=Path, default=None, help="SAM template (default ./template.yaml)")
    matrix.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    matrix.set_defaults(func=run_crash_matrix)


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
