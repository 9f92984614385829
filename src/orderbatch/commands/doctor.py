"""`orderbatch doctor`: will N batches at once fit in the account's Lambda concurrency?"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# Enough orders per batch for the planner's figures to settle, few enough to answer in well under a second.
DEFAULT_PLAN_ORDERS = 1000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="compare worst-case concurrent Lambda demand with the account's concurrency quota",
        description="Report the worst-case concurrent Lambda invocations of the state machines "
        "(MaxConcurrency x Lambda tasks per iteration x batches) against the account's quota, "
        "with a concrete fix when they do not fit.",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", metavar="NAME", help="a deployed stack to read")
    source.add_argument(
        "--template", type=Path, metavar="FILE", help="a template to read (default: template.yaml)"
    )
    parser.add_argument(
        "--batches", type=int, default=1, metavar="N", help="batches running at once (default 1)"
    )
    parser.add_argument(
        "--account-concurrency",
        type=int,
        metavar="N",
        help="use this account limit instead of calling GetAccountSettings (unreserved = N minus the "
        "template's reservations)",
    )
    parser.add_argument(
        "--plan-orders",
        type=int,
        default=DEFAULT_PLAN_ORDERS,
        metavar="N",
        help="orders per batch the planner simulates at the current and the fitting MaxConcurrency "
        f"(default {DEFAULT_PLAN_ORDERS}; 0 skips the planner)",
    )
    parser.add_argument(
        "--contention",
        metavar="SLOTS@START+DURATION",
        help="another tenant holding SLOTS of the unreserved pool from START for DURATION seconds (e.g. "
        "5@0+60): forecast how often an order spends its throttle retrier under it (needs --plan-orders)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--endpoint", help="AWS endpoint URL (default: $AWS_ENDPOINT_URL, else real AWS)")
    parser.add_argument(
        "--region", help="AWS Region (default: $AWS_REGION / $AWS_DEFAULT_REGION, else us-east-1)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from orderbatch.doctor import (
        AwsClients,
        account_from_limit,
        diagnose,
        endpoint_override,
        format_report,
        read_account_concurrency,
        read_stack,
    )
    from orderbatch.lint.template_model import read_template_file
    from orderbatch.plan.settings import parse_neighbour

    region = (
        args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    )
    clients = AwsClients(endpoint_url=args.endpoint or endpoint_override(), region_name=region)
    try:
        if args.stack:
            model = read_stack(args.stack, clients)
        else:
            model = read_template_file(args.template or Path("template.yaml"))
        if args.account_concurrency is not None:
            account = account_from_limit(args.account_concurrency, model)
        else:
            account = read_account_concurrency(clients("lambda"))
        contention = parse_neighbour(args.contention) if args.contention else None
        report = diagnose(
            model, account, args.batches, plan_orders=max(0, args.plan_orders), contention=contention
        )
    except (BotoCoreError, ClientError, ValueError, OSError) as error:
        print(f"orderbatch doctor: {error}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(report))
    return 0 if report.fits else 3
