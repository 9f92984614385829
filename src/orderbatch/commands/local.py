"""`orderbatch local up|env`: run the local cloud until Ctrl-C, or print the exports that point at it.

Both are the local cloud's own `sam-local-cloud up|env` (sam_local_cloud.cli), given what is this app's:
the project's template and ports, the inventory fixture seeded, the order app's event keys and fault flags.
"""

from __future__ import annotations

import argparse
from functools import partial
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
from sam_local_cloud import cli as cloud_cli

# The local docker command shares it: one signal behaviour for every long-running `orderbatch local`.
from sam_local_cloud.cli import stop_on_signals as stop_on_signals

if TYPE_CHECKING:
    from sam_local_cloud import LocalCloudConfig

ORDERBATCH_LOCAL = cloud_cli.CommandNames(
    program="orderbatch",
    up_command="orderbatch local up",
    title="orderbatch local cloud",
    # Kept as it was named before the command moved, so a state folder made by an earlier release is
    # still recognised and cleared; `orderbatch audit` reads the logs `local up` leaves in it.
    state_marker=".orderbatch-local-state",
)
STATE_DIR_MARKER = ORDERBATCH_LOCAL.state_marker


def register(subparsers: argparse._SubParsersAction) -> None:
    local = subparsers.add_parser("local", help="the Docker-free local cloud")
    actions = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = actions.add_parser("up", help=cloud_cli.UP_HELP)
    cloud_cli.add_up_arguments(up, default_port=DEFAULT_LOCAL_PORT, default_state_dir=DEFAULT_STATE_DIR)
    add_fault_arguments(up)
    up.add_argument("--no-seed", action="store_true", help="do not seed tables from fixtures/")
    up.set_defaults(func=run_up)

    env = actions.add_parser("env", help=cloud_cli.ENV_HELP)
    cloud_cli.add_env_arguments(env)
    env.set_defaults(func=run_env)


def run_up(args: argparse.Namespace) -> int:
    return cloud_cli.run_up(args, names=ORDERBATCH_LOCAL, config_from_args=cloud_config_from_args)


def run_env(args: argparse.Namespace) -> int:
    return cloud_cli.run_env(args, default_endpoint=local_cloud_endpoint)


def cloud_config_from_args(args: argparse.Namespace, **overrides: Any) -> LocalCloudConfig:
    """The local cloud the flags describe, built as this app's (see ``order_app_config``)."""
    return cloud_cli.cloud_config_from_args(
        args, default_template=default_template, build=partial(order_app_config, args), **overrides
    )


def order_app_config(args: argparse.Namespace, template: Path, **fields: Any) -> LocalCloudConfig:
    """``fields`` plus what only this app has: its inventory seeded from fixtures/ (unless --no-seed),
    its event keys, and the plan of its fault flags."""
    seeds = {} if args.no_seed else {"InventoryTable": inventory_fixture(template)}
    return local_cloud_config(
        template,
        fault_plan=fault_plan_from_args(args),
        seed_files={name: path for name, path in seeds.items() if path.exists()},
        **fields,
    )


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    return cloud_cli.parse_pairs(pairs, what, ORDERBATCH_LOCAL)


def prepare_state_dir(state_dir: Path) -> Path:
    """Clear the folder of a previous `local up`; refuse a folder that holds anything else."""
    return cloud_cli.prepare_state_dir(state_dir, ORDERBATCH_LOCAL)


def exposure_warning(host: str) -> str | None:
    return cloud_cli.exposure_warning(host, ORDERBATCH_LOCAL)
