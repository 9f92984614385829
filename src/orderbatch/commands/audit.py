"""`orderbatch audit BATCH_ID`: the exactly-once audit of one batch (exit 0 only when every check holds).

Each order's outcome is read where it is: the batch output of a succeeded execution, else the order records
(which reconcile writes); ``--json`` lists every order's outcome and its source.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import boto3

from orderbatch.project import DEFAULT_STATE_DIR, default_template, local_cloud_endpoint
from sam_local_cloud import DUMMY_CREDENTIALS


def register(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser(
        "audit", help="check every order and effect of a batch: none lost, none doubled"
    )
    audit.add_argument("batch_id")
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument(
        "--endpoint", default=None, help="local cloud endpoint (default: AWS_ENDPOINT_URL or :4566)"
    )
    audit.add_argument("--stack", default=None, help="a deployed stack: read table names from its Outputs")
    audit.add_argument("--template", type=Path, default=None, help="template for local table names")
    audit.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="execution environments' log folder, to count body runs "
        f"(default ./{DEFAULT_STATE_DIR / 'logs'} when it exists, as `local up` keeps it)",
    )
    audit.add_argument("--no-logs", action="store_true", help="do not count body runs")
    audit.add_argument("--region", default=None)
    audit.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.app_batches import audit_stack_batch

    session = boto3.Session(region_name=args.region)
    endpoint = None if args.stack else (args.endpoint or local_cloud_endpoint())
    if endpoint and session.get_credentials() is None:
        session = boto3.Session(**DUMMY_CREDENTIALS, region_name=args.region)

    def client(service: str) -> Any:
        region = args.region or session.region_name or "us-east-1"
        return session.client(service, endpoint_url=endpoint, region_name=region)  # type: ignore[call-overload]

    if args.stack:
        stack = client("cloudformation").describe_stacks(StackName=args.stack)["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    else:
        from sam_local_cloud.stack import load_stack

        outputs = load_stack(args.template or default_template()).outputs
    log_dir = None if args.no_logs else (args.logs or _default_log_dir(args))
    report = audit_stack_batch(args.batch_id, outputs, client, log_dir=log_dir)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(
            f"batch {report.batch_id} ({report.execution_status or 'no execution'}): "
            f"{report.orders_in_input} orders in the input, outcomes {report.outcomes}"
        )
        sources = ", ".join(f"{source} {orders}" for source, orders in report.outcome_sources.items())
        if sources:
            print(f"  outcomes read from: {sources}")
        print(
            f"  lost {len(report.lost)}, doubled {len(report.doubled)}, "
            f"body runs beyond one {report.body_runs_beyond_one}"
            + ("" if log_dir else " (not counted: no log folder)")
        )
        for step, histogram in report.body_runs_by_step.items():
            runs = ", ".join(f"{orders} orders ran {times}x" for times, orders in histogram.items())
            print(f"  {step}: {runs}")
        if report.orders_with_repeated_body_runs:
            shown = ", ".join(report.orders_with_repeated_body_runs[:10])
            more = len(report.orders_with_repeated_body_runs) - 10
            print(f"  ran more than once: {shown}" + (f" and {more} more" if more > 0 else ""))
        for violation in report.violations:
            print(f"  VIOLATION [{violation.check}] {violation.detail}")
        print("  OK: every order accounted for, every effect landed once" if report.ok else "  FAILED")
    return 0 if report.ok else 1


def _default_log_dir(args: argparse.Namespace) -> Path | None:
    """The logs of `orderbatch local up` run from this folder; a deployed stack has none locally."""
    candidate = DEFAULT_STATE_DIR / "logs"
    return candidate if not args.stack and candidate.is_dir() else None
