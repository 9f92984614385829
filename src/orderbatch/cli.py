"""The `orderbatch` command line. Argument parsing only: each command lives in its own module.

Each command module exposes `register(subparsers)`, which adds its parser and sets
`func` to a callable taking the parsed arguments and returning the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Imported lazily so that `orderbatch lint` does not pay for moto, and so on.
COMMAND_MODULES = (
    "orderbatch.commands.local",
    "orderbatch.commands.docker",
    "orderbatch.commands.demo",
    "orderbatch.commands.batches",
    "orderbatch.commands.reconcile",
    "orderbatch.commands.seed",
    "orderbatch.commands.audit",
    "orderbatch.commands.lint",
    "orderbatch.commands.doctor",
    "orderbatch.commands.bench",
    "orderbatch.commands.bench_start",
    "orderbatch.commands.plan",
    "orderbatch.commands.conformance",
    "orderbatch.commands.faults",
    "orderbatch.commands.compat",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orderbatch", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue  # a command not built yet
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
