"""The `orderbatch` command line. Argument parsing only: each command lives in its own module.

Each command module exposes `register(subparsers)`, which adds its parser and sets
`func` to a callable taking the parsed arguments and returning the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each command and the modules that register it, in the order the full parser registers them (`docker`
# adds its action to `local`). Only the modules of the command being run are imported: `orderbatch
# local up` does not pay for the benchmark, the planner and the linter (a third of its start), and
# `orderbatch lint` does not pay for moto. A test holds this table to what the modules register.
COMMANDS: dict[str, tuple[str, ...]] = {
    "local": ("orderbatch.commands.local", "orderbatch.commands.docker"),
    "demo": ("orderbatch.commands.demo",),
    "submit": ("orderbatch.commands.batches",),
    "status": ("orderbatch.commands.batches",),
    "reconcile": ("orderbatch.commands.reconcile",),
    "redrive": ("orderbatch.commands.reconcile",),
    "seed": ("orderbatch.commands.seed",),
    "audit": ("orderbatch.commands.audit",),
    "lint": ("orderbatch.commands.lint",),
    "doctor": ("orderbatch.commands.doctor",),
    "bench": ("orderbatch.commands.bench",),
    "bench-start": ("orderbatch.commands.bench_start",),
    "plan": ("orderbatch.commands.plan",),
    "conformance": ("orderbatch.commands.conformance",),
    "faults": ("orderbatch.commands.faults",),
    "compat": ("orderbatch.commands.compat",),
}
COMMAND_MODULES = tuple(dict.fromkeys(module for modules in COMMANDS.values() for module in modules))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given a command's name, of that command alone."""
    parser = argparse.ArgumentParser(prog="orderbatch", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.get(command or "", COMMAND_MODULES):
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Help, a mistyped command or none at all get the parser of every command, which lists them.
    command = arguments[0] if arguments else None
    args = build_parser(command).parse_args(arguments)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
