"""`orderbatch local up|env`: run the local cloud until Ctrl-C, or print the exports that point at it."""

from __future__ import annotations

import argparse
import ipaddress
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orderbatch.app_batches import local_cloud_config
from orderbatch.faults.flags import add_fault_arguments, fault_plan_from_args
from orderbatch.project import (
    DEFAULT_LOCAL_PORT,
    DEFAULT_STATE_DIR,
    default_template,
    inventory_fixture,
    local_cloud_endpoint,
)
from sam_local_cloud.stepfunctions.histories import DEFAULT_MAX_EVENTS_IN_MEMORY

LOOPBACK_HOST = "127.0.0.1"
# Where `local up` keeps its state (the environments' logs); `orderbatch audit` reads the logs from here.
STATE_DIR_MARKER = ".orderbatch-local-state"

if TYPE_CHECKING:
    from sam_local_cloud.cloud import LocalCloud


def register(subparsers: argparse._SubParsersAction) -> None:
    local = subparsers.add_parser("local", help="the Docker-free local cloud")
    actions = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = actions.add_parser("up", help="serve the template's services on one loopback endpoint until Ctrl-C")
    add_cloud_arguments(up, default_port=DEFAULT_LOCAL_PORT)
    up.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"folder for the cloud's state and logs, cleared at start (default ./{DEFAULT_STATE_DIR})",
    )
    up.add_argument(
        "--iam-mode",
        choices=("enforce", "report", "off"),
        default=None,
        help="enforce the template's IAM roles (default), report what they would deny but allow it "
        "(listed at shutdown), or turn IAM off (see docs/iam.md)",
    )
    up.add_argument(
        "--no-iam",
        action="store_true",
        help="do not enforce the template's IAM roles: every call is allowed (--iam-mode off)",
    )
    up.add_argument(
        "--host",
        default=None,
        help="address to listen on (default 127.0.0.1). Anything but loopback lets whoever reaches the "
        "port act as any identity the cloud issues: it does not authenticate like AWS over a network",
    )
    up.add_argument(
        "--no-verify-signatures",
        action="store_true",
        help="take any SigV4 signature (by default, with IAM on, signatures are checked as AWS checks "
        "them; with --iam-mode off they are never checked; see docs/iam.md, 'Signatures')",
    )
    up.add_argument(
        "--mock-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="Step Functions Local mock configuration: StartExecution on <arn>#<TestCase> runs that test "
        "case (default: the SFN_MOCK_CONFIG variable's file; see docs/stepfunctions-local.md)",
    )
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
    add_fault_arguments(parser)
    parser.add_argument(
        "--lambda-endpoint",
        default=None,
        help="hand Lambda invocations to this endpoint (e.g. sam local start-lambda)",
    )
    parser.add_argument("--no-seed", action="store_true", help="do not seed tables from fixtures/")
    parser.add_argument(
        "--environments-per-slot",
        type=float,
        default=2.0,
        metavar="FACTOR",
        help="live execution environments, all functions together, as a multiple of the account "
        "concurrency; past it a cold start stops the least recently used idle one (default 2; 0: no bound)",
    )
    parser.add_argument(
        "--spawn-runtimes",
        action="store_true",
        help="start every runtime as a fresh Python instead of forking it from a warm one (init as slow "
        "as on AWS, about 50 MB more per environment)",
    )
    parser.add_argument(
        "--runtime-fallback",
        action="store_true",
        help="run a function whose runtime's Python (e.g. python3.12) is not installed on this Python "
        "instead of refusing to start (says which functions it substitutes)",
    )
    parser.add_argument(
        "--history-events",
        type=int,
        default=DEFAULT_MAX_EVENTS_IN_MEMORY,
        metavar="N",
        help="finished executions' history events kept in memory; older histories go to the state folder "
        f"(default {DEFAULT_MAX_EVENTS_IN_MEMORY})",
    )


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            raise SystemExit(f"orderbatch: {what} must look like NAME=VALUE, got {pair!r}")
        parsed[name] = value
    return parsed


def prepare_state_dir(state_dir: Path) -> Path:
    """Clear the folder of a previous `local up`; refuse a folder that holds anything else."""
    state_dir = state_dir.resolve()
    if state_dir.exists() and any(state_dir.iterdir()):
        if not (state_dir / STATE_DIR_MARKER).exists():
            raise SystemExit(
                f"orderbatch: {state_dir} is not empty and was not made by `orderbatch local up`; "
                "pass another --state-dir"
            )
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / STATE_DIR_MARKER).write_text("state of `orderbatch local up`; cleared at its next start\n")
    return state_dir


def cloud_config_from_args(args: argparse.Namespace, **overrides: object):
    template = (args.template or default_template()).resolve()
    latency = {name: float(value) for name, value in parse_pairs(args.latency, "--latency").items()}
    seeds = {} if args.no_seed else {"InventoryTable": inventory_fixture(template)}
    config = local_cloud_config(
        template,
        port=args.port,
        account_concurrency=args.account_concurrency,
        parameter_overrides=parse_pairs(args.parameter_overrides, "--parameter-overrides"),
        latency=latency,
        lambda_endpoint=args.lambda_endpoint,
        fault_plan=fault_plan_from_args(args),
        seed_files={name: path for name, path in seeds.items() if path.exists()},
        environments_per_quota_slot=args.environments_per_slot,
        fork_runtimes=not args.spawn_runtimes,
        runtime_fallback=args.runtime_fallback,
        history_events_in_memory=args.history_events,
    )
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def run_up(args: argparse.Namespace) -> int:
    from sam_local_cloud.cloud import LocalCloud

    state_dir = prepare_state_dir(args.state_dir)
    host = args.host or LOOPBACK_HOST
    warning = exposure_warning(host)
    if warning is not None:
        print(warning, file=sys.stderr)
    cloud = LocalCloud(
        cloud_config_from_args(
            args,
            state_dir=state_dir,
            host=host,
            enforce_iam=not args.no_iam,
            iam_mode="off" if args.no_iam else args.iam_mode,
            verify_signatures=not args.no_verify_signatures,
            mock_config=args.mock_config,
        )
    )
    stopped, started = threading.Event(), threading.Event()
    stop_on_signals(stopped, started)
    start_local_cloud(cloud, started)
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
        if cloud.http_api and cloud.stack.routes:
            print(f"  HTTP API       {cloud.api_url}  (SigV4, service execute-api)")
        for method, url, action in cloud.http_api.service_routes(cloud.endpoint) if cloud.http_api else []:
            print(f"  API route      {method} {url} -> states:{action}")
        for reason, resources in group_not_honoured(cloud.stack.not_honoured).items():
            print(f"  not honoured   {reason}: {', '.join(resources)}")
        if cloud.mock_config is not None:
            cases = sum(len(machine) for machine in cloud.mock_config.test_cases.values())
            print(f"  mock config    {cloud.mock_config.source} ({cases} test cases)")
        print(f"  logs           {cloud.state_dir / 'logs'}")
        plan = cloud.lambda_service.fault_plan if cloud.lambda_service else None
        if plan is not None and (plan.functions or plan.noisy_neighbour):
            print(f"  fault plan     {plan.to_dict()}")
        print("\nPoint the AWS CLI and boto3 here with:")
        for key, value in cloud.environment().items():
            print(f"  export {key}={value}")
        print("\nCtrl-C to stop.", flush=True)
        stopped.wait()
    finally:
        cloud.stop()
        report_would_be_denials(cloud)
    return 0


def exposure_warning(host: str) -> str | None:
    """What to tell someone binding the local cloud beyond loopback; None for a loopback address."""
    if _is_loopback(host):
        return None
    return (
        f"orderbatch: warning: listening on {host}, not loopback. The local cloud does not authenticate "
        "as AWS does over a network: anyone who can reach this port can act as any identity it issues "
        "(the operator's keys, every function's and role's)."
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


def report_would_be_denials(cloud: LocalCloud) -> None:
    """In report mode, what IAM would have denied: a real missing permission, or a gap of the emulator."""
    if cloud.iam is None or cloud.iam.report_to is None:
        return
    denials = cloud.iam.would_be_denials()
    print(f"\nIAM report: {len(denials)} call(s) the roles would deny on AWS ({cloud.iam.report_to})")
    for denial in denials:
        print(f"  {denial['principal']} {denial['action']} on {denial['resource']}: {denial['why']}")


def stop_on_signals(stopped: threading.Event, started: threading.Event) -> None:
    """SIGINT (Ctrl-C) and SIGTERM stop the local cloud: every emulator, runtime and runtime server with it.

    Once started, a signal only sets ``stopped`` so the shutdown runs in order and is not interrupted by a
    second one. While starting (building a runtime environment can take a minute), it abandons the start.
    """

    def on_signal(signum: int, frame: object) -> None:
        stopped.set()
        if not started.is_set():
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def start_local_cloud(cloud: Any, started: threading.Event) -> None:
    """Start it, or stop what did start and exit: on a signal, with what is missing to run a function, or
    with the resource the deploy refused."""
    from sam_local_cloud.lambda_service.layers import LayerError
    from sam_local_cloud.lambda_service.runtimes import RuntimeBuildError, RuntimeUnavailableError
    from sam_local_cloud.stack import TemplateError
    from sam_local_cloud.stepfunctions.mock_config import MockConfigError

    try:
        cloud.start()
        started.set()
    except KeyboardInterrupt:
        _stop_lambda_processes(cloud)
        raise SystemExit(130) from None
    # TemplateError: a resource the deploy refused, e.g. a state machine definition AWS would refuse too.
    except (RuntimeUnavailableError, RuntimeBuildError, LayerError, MockConfigError, TemplateError) as error:
        _stop_lambda_processes(cloud)
        raise SystemExit(f"orderbatch: {error}") from None


def _stop_lambda_processes(cloud: Any) -> None:
    # Not cloud.stop(): its HTTP server may not be serving yet, and its shutdown would wait for that.
    if cloud.lambda_service is not None:
        cloud.lambda_service.close()


def group_not_honoured(lines: list[str]) -> dict[str, list[str]]:
    """`Fn.Tracing: X-Ray ...` lines grouped by reason, so seven functions make one line, not seven."""
    grouped: dict[str, list[str]] = {}
    for line in lines:
        resource, _, reason = line.partition(": ")
        grouped.setdefault(reason, []).append(resource)
    return grouped


def run_env(args: argparse.Namespace) -> int:
    endpoint = args.endpoint or local_cloud_endpoint()
    print(f"export AWS_ENDPOINT_URL={endpoint}")
    print("export AWS_ACCESS_KEY_ID=testing")
    print("export AWS_SECRET_ACCESS_KEY=testing")
    print("export AWS_DEFAULT_REGION=us-east-1")
    # TestState's endpoint carries the host prefix "sync-", which no loopback name resolves.
    print("export AWS_DISABLE_HOST_PREFIX_INJECTION=true")
    return 0
