"""`orderbatch local docker`: serve the Docker Engine API SAM CLI uses, without Docker, until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

DEFAULT_STATE_DIR = Path(".orderbatch") / "docker"


def default_socket_path() -> Path:
    # Unix socket paths are limited to about 100 characters: a short one in the temporary folder.
    return Path(tempfile.gettempdir()) / f"orderbatch-docker-{os.getuid()}.sock"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `docker` to the actions of `orderbatch local` (registered before this module, in cli.py)."""
    local = subparsers.choices["local"]
    actions = next(action for action in local._actions if isinstance(action, argparse._SubParsersAction))
    docker = actions.add_parser(
        "docker",
        help="serve the Docker Engine API for `sam local` with no Docker: containers run as local "
        "Lambda execution environments",
    )
    docker.add_argument(
        "--socket",
        type=Path,
        default=None,
        help=f"unix socket to serve on (default {default_socket_path()})",
    )
    docker.add_argument(
        "--tcp", default=None, metavar="HOST:PORT", help="also serve on TCP (tcp://HOST:PORT)"
    )
    docker.add_argument(
        "--aws-endpoint-url",
        default=None,
        metavar="URL",
        help="AWS_ENDPOINT_URL for every function that does not set its own, e.g. the local cloud's "
        "http://127.0.0.1:4566 (SAM CLI passes only variables the template declares)",
    )
    docker.add_argument(
        "--write-env-vars",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the `sam local --env-vars` file that gives the template's functions the local cloud's "
        "table names, state machine ARNs ... (from --template)",
    )
    docker.add_argument("--template", type=Path, default=None, help="SAM template (default ./template.yaml)")
    docker.add_argument(
        "--parameter-overrides",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="the template parameters the local cloud runs with, for --write-env-vars",
    )
    docker.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"folder for built images' files and containers' output, cleared at start (default "
        f"./{DEFAULT_STATE_DIR})",
    )
    docker.add_argument(
        "--log-calls", action="store_true", help="print every Docker API call as it is answered (stderr)"
    )
    docker.add_argument(
        "--runtime-fallback",
        action="store_true",
        help="run a function whose runtime's Python is not installed on this tool's Python instead",
    )
    docker.set_defaults(func=run_docker)


def parse_tcp(value: str) -> tuple[str, int]:
    host, separator, port = value.removeprefix("tcp://").rpartition(":")
    if not separator or not port.isdigit():
        raise SystemExit(f"orderbatch: --tcp must look like HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def write_env_vars(args: argparse.Namespace) -> None:
    from orderbatch.commands.local import parse_pairs
    from orderbatch.project import default_template
    from sam_local_cloud.docker_api import sam_env_vars

    overrides = parse_pairs(args.parameter_overrides, "--parameter-overrides")
    document = sam_env_vars((args.template or default_template()).resolve(), overrides)
    args.write_env_vars.parent.mkdir(parents=True, exist_ok=True)
    args.write_env_vars.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.write_env_vars}: pass it as `sam local ... --env-vars {args.write_env_vars}`")


def print_call(call: object) -> None:
    print(f"docker api: {call}", file=sys.stderr, flush=True)


def run_docker(args: argparse.Namespace) -> int:
    from orderbatch.commands.local import prepare_state_dir, stop_on_signals
    from sam_local_cloud.docker_api import DockerApi, DockerApiServer, ExecutionEnvironments

    if args.write_env_vars is not None:
        write_env_vars(args)
    state_dir = prepare_state_dir(args.state_dir)
    socket_path = (args.socket or default_socket_path()).resolve()
    environments = ExecutionEnvironments(
        state_dir / "logs",
        aws_endpoint_url=args.aws_endpoint_url,
        runtime_fallback=args.runtime_fallback,
    )
    log_calls = (
        (lambda call: print(f"docker api: {call}", file=sys.stderr, flush=True)) if args.log_calls else None
    )
    api = DockerApi(state_dir, environments, log_calls=log_calls)
    try:
        server = DockerApiServer(api, socket_path=socket_path, tcp=parse_tcp(args.tcp) if args.tcp else None)
    except OSError as error:
        raise SystemExit(f"orderbatch: cannot serve the Docker API: {error}") from None
    stopped, started = threading.Event(), threading.Event()
    stop_on_signals(stopped, started)
    server.start()
    started.set()
    try:
        print("orderbatch Docker API for SAM CLI (no Docker: containers run as local execution environments)")
        for host in server.docker_hosts():
            print(f"  serving        {host}")
        if args.aws_endpoint_url:
            print(f"  functions call {args.aws_endpoint_url} (AWS_ENDPOINT_URL, unless they set their own)")
        print(f"  state          {state_dir}")
        print("\nPoint SAM CLI here with:")
        print(f"  export DOCKER_HOST={server.docker_hosts()[0]}")
        print("\nCtrl-C to stop.", flush=True)
        stopped.wait()
    finally:
        server.close()
    return 0
