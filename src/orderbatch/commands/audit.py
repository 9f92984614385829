"""`orderbatch audit BATCH_ID`: the exactly-once audit of one batch (exit 0 only when every check holds)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import boto3

from orderbatch.project import default_endpoint, default_template


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
        help="execution environments' log folder (counts body runs; printed by `local up`)",
    )
    audit.add_argument("--region", default=None)
    audit.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.audit import BatchLocations, audit_batch, body_runs_from_logs

    session = boto3.Session(region_name=args.region)
    endpoint = None if args.stack else (args.endpoint or default_endpoint())

    def client(service: str) -> Any:
        region = args.region or session.region_name or "us-east-1"
        return session.client(service, endpoint_url=endpoint, region_name=region)  # type: ignore[call-overload]

    if args.stack:
        stack = client("cloudformation").describe_stacks(StackName=args.stack)["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    else:
        from orderbatch.localcloud.stack import load_stack

        outputs = load_stack(args.template or default_template()).outputs
    report = audit_batch(
        args.batch_id,
        BatchLocations.from_outputs(outputs),
        stepfunctions=client("stepfunctions"),
        dynamodb=client("dynamodb"),
        s3=client("s3"),
        body_runs=body_runs_from_logs(args.logs) if args.logs else None,
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(
            f"batch {report.batch_id}: {report.orders_in_input} orders in the input, "
            f"outcomes {report.outcomes}"
        )
        print(
            f"  lost {len(report.lost)}, doubled {len(report.doubled)}, "
            f"body runs beyond one {report.body_runs_beyond_one}"
        )
        for violation in report.violations:
            print(f"  VIOLATION [{violation.check}] {violation.detail}")
        print("  OK: every order accounted for, every effect landed once" if report.ok else "  FAILED")
    return 0 if report.ok else 1
