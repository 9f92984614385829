"""`orderbatch lint`: the throttle-safety rules over SAM/CloudFormation templates."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check state machines for throttle safety (retries, timeouts, concurrency, idempotency)",
        description="Run the orderbatch cfn-lint rules (E/W95xx, see docs/lint-rules.md) over templates.",
    )
    parser.add_argument(
        "templates",
        nargs="*",
        type=Path,
        default=[Path("template.yaml")],
        metavar="TEMPLATE",
        help="templates to lint (default: template.yaml)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--account-concurrency",
        type=int,
        metavar="N",
        help="the account's Lambda concurrency quota; enables W9523",
    )
    parser.add_argument(
        "--min-retry-budget",
        type=int,
        metavar="SECONDS",
        help="shortest acceptable sum of throttle-retry waits (W9507, default 10)",
    )
    parser.add_argument(
        "--contention",
        metavar="SLOTS@START+DURATION",
        help="another tenant holding SLOTS of the quota from START for DURATION seconds (e.g. 5@0+60): "
        "W9524 simulates each Map's batches under it (needs --account-concurrency)",
    )
    parser.add_argument(
        "--contention-orders",
        type=int,
        default=200,
        metavar="N",
        help="orders per simulated batch for W9524 (default 200)",
    )
    parser.add_argument("--standard-rules", action="store_true", help="also run cfn-lint's own rules")
    parser.add_argument(
        "--fail-on",
        "--non-zero-exit-code",
        dest="fail_on",
        choices=("error", "warning", "informational", "none"),
        default="error",
        help=(
            "lowest severity that makes the exit code non-zero (default: error). As cfn-lint's, the code has "
            "bit 2 for errors, 4 for warnings and 8 for informational findings at or above it: 6 = both"
        ),
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.lint import exit_code, lint_templates

    extra_rules = []
    if args.contention:
        from orderbatch.plan.lint_rule import ThrottleRetrierCanBeSpent
        from orderbatch.plan.settings import parse_neighbour

        if not args.account_concurrency:
            print("orderbatch lint: --contention needs --account-concurrency", file=sys.stderr)
            return 2
        try:
            contention = parse_neighbour(args.contention)
        except ValueError as error:
            print(f"orderbatch lint: {error}", file=sys.stderr)
            return 2
        extra_rules.append(
            ThrottleRetrierCanBeSpent(contention, args.account_concurrency, args.contention_orders)
        )
    problems = lint_templates(
        args.templates,
        extra_rules=extra_rules,
        account_concurrency=args.account_concurrency,
        min_retry_budget_seconds=args.min_retry_budget,
        standard_rules=args.standard_rules,
    )
    if args.format == "json":
        json.dump([problem.to_json() for problem in problems], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for problem in problems:
            print(
                f"{problem.filename}:{problem.line}:{problem.column}: {problem.rule_id} [{problem.severity}] "
                f"{problem.message}"
            )
        counts = {
            severity: sum(problem.severity == severity for problem in problems)
            for severity in ("error", "warning", "informational")
        }
        print(
            f"{len(problems)} problem(s): {counts['error']} error(s), {counts['warning']} warning(s), "
            f"{counts['informational']} informational in {len(args.templates)} template(s)"
        )
    return exit_code(problems, args.fail_on)
