"""`orderbatch conformance`: AWS-recorded Step Functions executions replayed on the local cloud."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

RATE_GROUPS = (("state type", "by_state_type"), ("feature", "by_feature"), ("test area", "by_area"))


def register(subparsers: argparse._SubParsersAction) -> None:
    from orderbatch.conformance.cases import DEFAULT_CASES_DIR
    from orderbatch.conformance.runner import DEFAULT_CASE_TIMEOUT, DEFAULT_WORKERS

    conformance = subparsers.add_parser(
        "conformance",
        help="replay AWS-recorded Step Functions executions on the local cloud and print the pass rate",
    )
    conformance.add_argument("--filter", default=None, help="only cases whose id contains this text")
    conformance.add_argument("--json", action="store_true", help="print the report as one JSON document")
    conformance.add_argument("--cases", type=Path, default=DEFAULT_CASES_DIR, help="folder of case folders")
    conformance.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"executions run at once (default {DEFAULT_WORKERS})",
    )
    conformance.add_argument(
        "--case-timeout",
        type=float,
        default=DEFAULT_CASE_TIMEOUT,
        help=f"seconds before an execution counts as not finishing (default {DEFAULT_CASE_TIMEOUT:.0f})",
    )
    conformance.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.conformance.cases import load_cases
    from orderbatch.conformance.runner import CaseResult, run_cases

    cases = load_cases(args.cases, args.filter)
    if not cases:
        print(f"no cases under {args.cases} match {args.filter!r}", file=sys.stderr)
        return 2
    done = 0

    def progress(result: CaseResult) -> None:
        nonlocal done
        done += 1
        if not args.json and (done % 100 == 0 or done == len(cases)):
            print(f"  {done}/{len(cases)} cases run", file=sys.stderr, flush=True)

    if not args.json:
        print(f"Running {len(cases)} AWS-recorded executions on the local cloud...", file=sys.stderr)
    report = run_cases(cases, workers=args.workers, case_timeout=args.case_timeout, on_result=progress)
    document = report.to_json()
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(format_report(document))
    return 0


def format_report(document: dict[str, Any]) -> str:
    """The pass rate overall and per group, then each failing case with its first difference."""
    overall = document["overall"]
    lines = [
        f"Conformance: {overall['passed']}/{overall['total']} cases pass ({overall['rate']:.1%}) "
        f"in {document['seconds']:.0f} s",
    ]
    for title, key in RATE_GROUPS:
        lines += ["", f"By {title}:"]
        width = max((len(name) for name in document[key]), default=0)
        for name, tally in sorted(document[key].items(), key=lambda item: (-item[1]["total"], item[0])):
            lines.append(f"  {name:<{width}}  {tally['passed']:>4}/{tally['total']:<4} {tally['rate']:>7.1%}")
    failing = [case for case in document["cases"] if not case["passed"]]
    if failing:
        lines += ["", f"Failing cases ({len(failing)}):"]
        lines += [f"  {case['id']}: {case['summary']}" for case in failing]
    return "\n".join(lines)
