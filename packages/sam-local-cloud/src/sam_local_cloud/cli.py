"""`sam-local-cloud up|env`: serve a SAM template's AWS services on one endpoint until stopped, or print the
exports that point the AWS CLI and boto3 at it.

An app's own command line can be built on the same functions: ``add_up_arguments`` on its parser,
``cloud_config_from_args`` with a builder that adds what is its own (seed data, event keys), and
``run_up`` with the ``CommandNames`` its messages should carry.

A script that drives ``up`` from outside reads ``HEALTH_PATH`` (200 once deployed), ``API_PATH_PREFIX``
(``<endpoint>/execute-api/<api id>/...``) and ``RUNTIME_NOT_INSTALLED`` (in the message of a start that
lacks a function's Python) from here.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service.runtimes import RUNTIME_NOT_INSTALLED as RUNTIME_NOT_INSTALLED
from sam_local_cloud.served_paths import API_PATH_PREFIX as API_PATH_PREFIX
from sam_local_cloud.served_paths import HEALTH_PATH as HEALTH_PATH
from sam_local_cloud.stack.model import DEFAULT_REGION
from sam_local_cloud.stepfunctions.histories import DEFAULT_MAX_EVENTS_IN_MEMORY

if TYPE_CHECKING:
    from sam_local_cloud.cloud import LocalCloud, LocalCloudConfig
    from sam_local_cloud.lambda_service.faults import FaultPlan
    from sam_local_cloud.stack import LocalStack

# The edge port AWS tooling pointed at a local cloud already expects (LocalStack's).
DEFAULT_PORT = 4566
LOOPBACK_HOST = "127.0.0.1"
DEFAULT_STATE_DIR = Path(".sam-local-cloud")
UP_HELP = "serve the template's services on one loopback endpoint until Ctrl-C"
ENV_HELP = "print the exports that point the AWS CLI and boto3 at the local cloud"
DESCRIPTION = (
    "A Docker-free local AWS cloud for SAM apps: serve a template's services on one endpoint (up), or print "
    "the exports that point the AWS CLI and boto3 at it (env)."
)


@dataclass(frozen=True)
class CommandNames:
    """How a command line built on these functions names itself in what it prints and leaves behind."""

    program: str  # prefixes its error messages
    up_command: str  # named in the state folder it makes, and when it refuses a folder it did not make
    title: str  # "<title> on <endpoint>" once serving
    state_marker: str  # the file that marks a state folder as this command's, and so safe to clear


SAM_LOCAL_CLOUD = CommandNames(
    program="sam-local-cloud",
    up_command="sam-local-cloud up",
    title="sam-local-cloud",
    state_marker=".sam-local-cloud-state",
)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sam-local-cloud", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = commands.add_parser("up", help=UP_HELP)
    add_up_arguments(up)
    # Not among add_up_arguments: an app's command line may bring fault flags of its own, --faults included.
    up.add_argument("--faults", type=Path, default=None, metavar="FILE", help="fault plan file, YAML or JSON")
    up.set_defaults(func=_run_up_with_fault_file)
    env = commands.add_parser("env", help=ENV_HELP)
    add_env_arguments(env)
    env.set_defaults(func=run_env)
    return parser


# ------------------------------------------------------------------------------------------- arguments


def add_up_arguments(
    parser: argparse.ArgumentParser,
    *,
    default_port: int = DEFAULT_PORT,
    default_state_dir: Path = DEFAULT_STATE_DIR,
) -> None:
    """The flags of `up` that any template's local cloud has."""
    _add_stack_arguments(parser, default_port)
    _add_lambda_arguments(parser)
    _add_serving_arguments(parser, default_state_dir)


def _add_stack_arguments(parser: argparse.ArgumentParser, default_port: int) -> None:
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"port (default {default_port}; 0 = free)"
    )
    parser.add_argument("--template", type=Path, default=None, help="SAM template (default ./template.yaml)")
    parser.add_argument(
        "--parameter-overrides",
        type=name_value,
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="template parameter values, as for sam deploy",
    )


def _add_lambda_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--account-concurrency",
        type=int,
        default=10,
        help="the account's Lambda concurrency quota (default 10, as on a new account)",
    )
    parser.add_argument(
        "--latency",
        type=function_seconds,
        action="append",
        default=[],
        metavar="FUNCTION=SECONDS",
        help="add time inside every invocation of a function (holds its concurrency)",
    )
    parser.add_argument(
        "--lambda-endpoint",
        default=None,
        help="hand Lambda invocations to this endpoint (e.g. sam local start-lambda)",
    )
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


def _add_serving_arguments(parser: argparse.ArgumentParser, default_state_dir: Path) -> None:
    parser.add_argument(
        "--history-events",
        type=int,
        default=DEFAULT_MAX_EVENTS_IN_MEMORY,
        metavar="N",
        help="finished executions' history events kept in memory; older histories go to the state folder "
        f"(default {DEFAULT_MAX_EVENTS_IN_MEMORY})",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=default_state_dir,
        help=f"folder for the cloud's state and logs, cleared at start (default ./{default_state_dir})",
    )
    parser.add_argument(
        "--iam-mode",
        choices=("enforce", "report", "off"),
        default=None,
        help="enforce the template's IAM roles (default), report what they would deny but allow it "
        "(listed at shutdown), or turn IAM off (see docs/iam.md)",
    )
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="do not enforce the template's IAM roles: every call is allowed (--iam-mode off)",
    )
    parser.add_argument(
        "--host",
        default=LOOPBACK_HOST,
        help=f"address to listen on (default {LOOPBACK_HOST}). Anything but loopback lets whoever reaches "
        "the port act as any identity the cloud issues: it does not authenticate like AWS over a network",
    )
    parser.add_argument(
        "--no-verify-signatures",
        action="store_true",
        help="take any SigV4 signature (by default, with IAM on, signatures are checked as AWS checks "
        "them; with --iam-mode off they are never checked; see docs/iam.md, 'Signatures')",
    )
    parser.add_argument(
        "--mock-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="Step Functions Local mock configuration: StartExecution on <arn>#<TestCase> runs that test "
        "case (default: the SFN_MOCK_CONFIG variable's file; see docs/stepfunctions-local.md)",
    )


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint",
        default=None,
        help=f"local cloud endpoint (default: AWS_ENDPOINT_URL or :{DEFAULT_PORT})",
    )


def name_value(text: str) -> tuple[str, str]:
    """The argparse type of a NAME=VALUE flag: a malformed one is a usage error, exit code 2."""
    name, separator, value = text.partition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"must look like NAME=VALUE, got {text!r}")
    return name, value


def function_seconds(text: str) -> tuple[str, float]:
    """The argparse type of a FUNCTION=SECONDS flag."""
    name, separator, seconds = text.partition("=")
    try:
        if separator and name:
            return name, float(seconds)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"must look like FUNCTION=SECONDS, got {text!r}")


def parse_pairs(pairs: Iterable[str], what: str, names: CommandNames = SAM_LOCAL_CLOUD) -> dict[str, str]:
    """NAME=VALUE strings a parser kept as strings, as a mapping; a malformed one ends the command."""
    try:
        return dict(name_value(pair) for pair in pairs)
    except argparse.ArgumentTypeError as error:
        raise SystemExit(f"{names.program}: {what} {error}") from None


# ------------------------------------------------------------------------------------------- configuration


def template_in_working_dir() -> Path:
    return Path("template.yaml")


def cloud_config_from_args(
    args: argparse.Namespace,
    *,
    default_template: Callable[[], Path] = template_in_working_dir,
    build: Callable[..., LocalCloudConfig] | None = None,
    **overrides: Any,
) -> LocalCloudConfig:
    """The configuration `up`'s flags describe, made by ``build(template, **fields)`` and then given
    ``overrides``. An app passes its own ``build`` to add what only it knows (its seed data, its event
    keys); the default is LocalCloudConfig itself."""
    if build is None:
        from sam_local_cloud.cloud import LocalCloudConfig

        build = LocalCloudConfig
    template = (args.template or default_template()).resolve()
    return replace(build(template, **config_fields(args)), **overrides)


def config_fields(args: argparse.Namespace) -> dict[str, Any]:
    """LocalCloudConfig's fields as `up`'s flags set them, the template aside."""
    return {
        "port": args.port,
        "host": args.host,
        "account_concurrency": args.account_concurrency,
        "parameter_overrides": dict(args.parameter_overrides),
        "latency": dict(args.latency),
        "lambda_endpoint": args.lambda_endpoint,
        "environments_per_quota_slot": args.environments_per_slot,
        "fork_runtimes": not args.spawn_runtimes,
        "runtime_fallback": args.runtime_fallback,
        "history_events_in_memory": args.history_events,
        "state_dir": args.state_dir.resolve(),
        "enforce_iam": not args.no_iam,
        "iam_mode": "off" if args.no_iam else args.iam_mode,
        "verify_signatures": not args.no_verify_signatures,
        "mock_config": args.mock_config,
    }


def _run_up_with_fault_file(args: argparse.Namespace) -> int:
    return run_up(args, config_from_args=_config_with_fault_file)


def _config_with_fault_file(args: argparse.Namespace) -> LocalCloudConfig:
    return cloud_config_from_args(args, fault_plan=load_fault_plan(args.faults))


def load_fault_plan(path: Path | None, names: CommandNames = SAM_LOCAL_CLOUD) -> FaultPlan | None:
    import yaml

    from sam_local_cloud.lambda_service.faults import FaultPlan

    if path is None:
        return None
    try:
        return FaultPlan.from_file(path)
    except (OSError, ValueError, TypeError, yaml.YAMLError) as error:
        raise SystemExit(f"{names.program}: invalid fault plan {path}: {error}") from None


def prepare_state_dir(state_dir: Path, names: CommandNames = SAM_LOCAL_CLOUD) -> Path:
    """Clear the folder of a previous `up`; refuse a folder that holds anything else."""
    state_dir = state_dir.resolve()
    marker = state_dir / names.state_marker
    if state_dir.exists() and any(state_dir.iterdir()):
        if not marker.exists():
            raise SystemExit(
                f"{names.program}: {state_dir} is not empty and was not made by `{names.up_command}`; "
                "pass another --state-dir"
            )
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"state of `{names.up_command}`; cleared at its next start\n")
    return state_dir


def exposure_warning(host: str, names: CommandNames = SAM_LOCAL_CLOUD) -> str | None:
    """What to tell someone binding the local cloud beyond loopback; None for a loopback address."""
    if _is_loopback(host):
        return None
    return (
        f"{names.program}: warning: listening on {host}, not loopback. The local cloud does not "
        "authenticate as AWS does over a network: anyone who can reach this port can act as any identity "
        "it issues (the operator's keys, every function's and role's)."
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


# ------------------------------------------------------------------------------------------------- up


def run_up(
    args: argparse.Namespace,
    *,
    names: CommandNames = SAM_LOCAL_CLOUD,
    config_from_args: Callable[[argparse.Namespace], LocalCloudConfig] = cloud_config_from_args,
) -> int:
    """`up`: serve the configuration ``config_from_args(args)`` builds until SIGINT or SIGTERM."""
    prepare_state_dir(args.state_dir, names)
    warning = exposure_warning(args.host, names)
    if warning is not None:
        print(warning, file=sys.stderr)
    config = config_from_args(args)
    if config.template is None or not config.template.is_file():
        raise SystemExit(f"{names.program}: no SAM template at {config.template}; pass --template FILE")
    return serve_until_stopped(config, names)


def serve_until_stopped(config: LocalCloudConfig, names: CommandNames = SAM_LOCAL_CLOUD) -> int:
    # Looked up when called, not imported with this module: it brings moto, which `--help` does not need.
    from sam_local_cloud.cloud import LocalCloud

    cloud = LocalCloud(config)
    stopped, started = threading.Event(), threading.Event()
    stop_on_signals(stopped, started)
    start_local_cloud(cloud, started, names)
    try:
        print(f"{names.title} on {cloud.endpoint} (account concurrency {config.account_concurrency})")
        for line in serving_lines(cloud):
            print(f"  {line}")
        print("\nPoint the AWS CLI and boto3 here with:")
        for key, value in cloud.environment().items():
            print(f"  export {key}={value}")
        print("\nCtrl-C to stop.", flush=True)
        stopped.wait()
    finally:
        cloud.stop()
        report_would_be_denials(cloud)
    return 0


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


def start_local_cloud(cloud: Any, started: threading.Event, names: CommandNames = SAM_LOCAL_CLOUD) -> None:
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
        raise SystemExit(f"{names.program}: {error}") from None


def _stop_lambda_processes(cloud: Any) -> None:
    # Not cloud.stop(): its HTTP server may not be serving yet, and its shutdown would wait for that.
    if cloud.lambda_service is not None:
        cloud.lambda_service.close()


def serving_lines(cloud: LocalCloud) -> Iterator[str]:
    """What the running cloud serves, one line each, as `up` lists it under the endpoint."""
    yield from _stack_lines(cloud.stack)
    yield from _api_lines(cloud)
    for reason, resources in group_not_honoured(cloud.stack.not_honoured).items():
        yield f"not honoured   {reason}: {', '.join(resources)}"
    if cloud.mock_config is not None:
        cases = sum(len(machine) for machine in cloud.mock_config.test_cases.values())
        yield f"mock config    {cloud.mock_config.source} ({cases} test cases)"
    yield f"logs           {cloud.state_dir / 'logs'}"
    plan = cloud.lambda_service.fault_plan if cloud.lambda_service else None
    if plan is not None and (plan.functions or plan.noisy_neighbour):
        yield f"fault plan     {plan.to_dict()}"


def _stack_lines(stack: LocalStack) -> Iterator[str]:
    for machine in stack.state_machines:
        yield f"state machine  {machine.arn}"
    for function in stack.functions:
        reserved = (
            f", reserved concurrency {function.reserved_concurrency}" if function.reserved_concurrency else ""
        )
        timeout = f"timeout {function.timeout_seconds}s{reserved}"
        yield f"function       {function.name} ({function.handler}, {timeout})"
    for table in stack.tables:
        yield f"table          {table.name}"
    for bucket in stack.buckets.values():
        yield f"bucket         {bucket}"


def _api_lines(cloud: LocalCloud) -> Iterator[str]:
    if not cloud.http_api:
        return
    if cloud.stack.routes:
        yield f"HTTP API       {cloud.api_url}  (SigV4, service execute-api)"
    for method, url, action in cloud.http_api.service_routes(cloud.endpoint):
        yield f"API route      {method} {url} -> states:{action}"


def group_not_honoured(lines: list[str]) -> dict[str, list[str]]:
    """`Fn.Tracing: X-Ray ...` lines grouped by reason, so seven functions make one line, not seven."""
    grouped: dict[str, list[str]] = {}
    for line in lines:
        resource, _, reason = line.partition(": ")
        grouped.setdefault(reason, []).append(resource)
    return grouped


def report_would_be_denials(cloud: LocalCloud) -> None:
    """In report mode, what IAM would have denied: a real missing permission, or a gap of the emulator."""
    if cloud.iam is None or cloud.iam.report_to is None:
        return
    denials = cloud.iam.would_be_denials()
    print(f"\nIAM report: {len(denials)} call(s) the roles would deny on AWS ({cloud.iam.report_to})")
    for denial in denials:
        print(f"  {denial['principal']} {denial['action']} on {denial['resource']}: {denial['why']}")


# ------------------------------------------------------------------------------------------------ env


def run_env(args: argparse.Namespace, *, default_endpoint: Callable[[], str] | None = None) -> int:
    """`env`: the exports, for `eval "$(sam-local-cloud env)"`."""
    endpoint = args.endpoint or (default_endpoint or endpoint_from_environment)()
    for key, value in environment_exports(endpoint).items():
        print(f"export {key}={value}")
    return 0


def endpoint_from_environment() -> str:
    return os.environ.get("AWS_ENDPOINT_URL") or f"http://{LOOPBACK_HOST}:{DEFAULT_PORT}"


def environment_exports(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
        "AWS_DEFAULT_REGION": DEFAULT_REGION,
        # TestState's endpoint carries the host prefix "sync-", which no loopback name resolves.
        "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
    }
