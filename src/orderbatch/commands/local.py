"""`orderbatch local up|env`: run the local cloud until Ctrl-C, or print the exports that point at it."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from orderbatch.project import DEFAULT_LOCAL_PORT, default_endpoint, default_template, inventory_fixture


def register(subparsers: argparse._SubParsersAction) -> None:
    local = subparsers.add_parser("local", help="the Docker-free local cloud")
    actions = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = actions.add_parser("up", help="serve the template's services on one loopback endpoint until Ctrl-C")
    add_cloud_arguments(up, default_port=DEFAULT_LOCAL_PORT)
    up.set_defaults(func=run_up)

    env = actions.add_parser(
        "env", help="print the exports that point the AWS CLI and boto3 at the local cloud"
    )
    env.add_argument(
        "--endpoint", default=None, help="local cloud endpoint (default: AWS_ENDPOINT_URL or :4566)"
    )
    env.set_defaults(func=run_env)


def add_cloud_arguments(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"port (default {default_port}; 0 = free)"
    )
    parser.add_argument(
        "--account-concurrency",
        type=int,
        default=10,
        help="the account's Lambda concurrency quota (default 10, as on a new account)",
    )
    parser.add_argument("--template", type=Path, default=None, help="SAM template (default ./template.yaml)")
    parser.add_argument(
        "--parameter-overrides",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="template parameter values, as for sam deploy",
    )
    parser.add_argument(
        "--latency",
        action="append",
        default=[],
        metavar="FUNCTION=SECONDS",
        help="add time inside every invocation of a function (holds its concurrency)",
    )
    parser.add_argument("--faults", type=Path, default=None, help="fault plan (YAML or JSON)")
    parser.add_argument(
        "--lambda-endpoint",
        default=None,
        help="hand Lambda invocations to this endpoint (e.g. sam local start-lambda)",
    )
    parser.add_argument("--no-seed", action="store_true", help="do not seed tables from fixtures/")


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            raise SystemExit(f"orderbatch: {what} must look like NAME=VALUE, got {pair!r}")
        parsed[name] = value
    return parsed


def cloud_config_from_args(args: argparse.Namespace, **overrides: object):
    from orderbatch.localcloud.cloud import LocalCloudConfig
    from orderbatch.localcloud.lambda_service import FaultPlan

    template = (args.template or default_template()).resolve()
    latency = {name: float(value) for name, value in parse_pairs(args.latency, "--latency").items()}
    seeds = {} if args.no_seed else {"InventoryTable": inventory_fixture(template)}
    config = LocalCloudConfig(
        template=template,
        port=args.port,
        account_concurrency=args.account_concurrency,
        parameter_overrides=parse_pairs(args.parameter_overrides, "--parameter-overrides"),
        latency=latency,
        lambda_endpoint=args.lambda_endpoint,
        fault_plan=FaultPlan.from_file(args.faults) if args.faults else None,
        seed_files={name: path for name, path in seeds.items() if path.exists()},
    )
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def run_up(args: argparse.Namespace) -> int:
    from orderbatch.localcloud.cloud import LocalCloud

    cloud = LocalCloud(cloud_config_from_args(args)).start()
    stopped = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        print(f"orderbatch local cloud on {cloud.endpoint} (account concurrency {args.account_concurrency})")
        for machine in cloud.stack.state_machines:
            print(f"  state machine  {machine.arn}")
        for function in cloud.stack.functions:
            reserved = (
                f", reserved concurrency {function.reserved_concurrency}"
                if function.reserved_concurrency
                else ""
            )
            print(
                f"  function       {function.name} ({function.handler}, "
                f"timeout {function.timeout_seconds}s{reserved})"
            )
        for table in cloud.stack.tables:
            print(f"  table          {table.name}")
        for bucket in cloud.stack.buckets.values():
            print(f"  bucket         {bucket}")
        if cloud.http_api and cloud.http_api.api_ids:
            print(f"  HTTP API       {cloud.api_url}  (SigV4, service execute-api)")
        for line in cloud.stack.not_honoured:
            print(f"  not honoured   {line}")
        print(f"  logs           {cloud.state_dir / 'logs'}")
        print("\nPoint the AWS CLI and boto3 here with:")
        for key, value in cloud.environment().items():
            print(f"  export {key}={value}")
        print("\nCtrl-C to stop.", flush=True)
        stopped.wait()
    finally:
        cloud.stop()
    return 0


def run_env(args: argparse.Namespace) -> int:
    endpoint = args.endpoint or default_endpoint()
    print(f"export AWS_ENDPOINT_URL={endpoint}")
    print("export AWS_ACCESS_KEY_ID=testing")
    print("export AWS_SECRET_ACCESS_KEY=testing")
    print("export AWS_DEFAULT_REGION=us-east-1")
    return 0
