"""The command line imports only the modules of the command it runs, and its table of commands says
what the modules register."""

from __future__ import annotations

import argparse
import subprocess
import sys

from orderbatch.cli import COMMANDS, build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (subparsers,) = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return dict(subparsers.choices)


def _usage_tree(parser: argparse.ArgumentParser) -> str:
    return parser.format_help() + "".join(_usage_tree(sub) for sub in _nested(parser))


def _nested(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [
        sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for sub in action.choices.values()
    ]


def test_the_table_names_every_command_the_modules_register() -> None:
    assert sorted(_commands(build_parser())) == sorted(COMMANDS)


def test_a_command_s_own_parser_is_the_one_the_full_parser_holds() -> None:
    full = _commands(build_parser())
    for command in COMMANDS:
        alone = _commands(build_parser(command))
        assert command in alone
        assert _usage_tree(alone[command]) == _usage_tree(full[command]), command


def test_local_up_imports_neither_the_benchmark_nor_the_planner_nor_the_linter() -> None:
    probe = (
        "import sys; from orderbatch.cli import build_parser; "
        "build_parser('local').parse_args(['local', 'up', '--port', '0']); "
        "print(sorted(m for m in sys.modules if m.startswith(('orderbatch.bench', 'orderbatch.plan', "
        "'orderbatch.lint', 'orderbatch.compat', 'orderbatch.conformance'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
