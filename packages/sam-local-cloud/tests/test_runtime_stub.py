"""The runtime stub writes its request as json.dumps would, with the standard library's heavy modules
left unimported (one stub lives beside every execution environment)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sam_local_cloud import runtime_stub

AWKWARD = [
    "plain",
    "",
    'quote " and back\\slash',
    "tab\tnew\nline\rnull\x00 bell\x07 del\x7f",
    "café naïve ünïcödé",
    "emoji 😀 astral 𝄞",
    "undecodable byte \udcff kept as a lone surrogate",
    "/var/task:/opt/python",
]


@pytest.mark.parametrize("token", [None, "prepared-1", 'tök"en'])
def test_the_request_reads_back_as_what_it_was_built_from(token: str | None) -> None:
    environment = {name: value for name, value in zip(AWKWARD, reversed(AWKWARD), strict=True) if name}
    argv = ["/var/runtime/bootstrap", *AWKWARD]

    document = runtime_stub.request_document(token, argv, AWKWARD[4], environment)

    assert json.loads(document) == {
        "op": "run",
        "token": token,
        "argv": argv,
        "cwd": AWKWARD[4],
        "env": environment,
    }
    # ASCII only, as json.dumps writes by default: undecodable bytes travel as escaped surrogates.
    assert document.isascii()


@pytest.mark.parametrize("text", AWKWARD)
def test_each_string_reads_back_as_itself_in_ascii(text: str) -> None:
    written = runtime_stub.json_string(text)

    assert json.loads(written) == text
    assert written.isascii()


def test_the_stub_imports_nothing_but_the_socket_module() -> None:
    # The stub's module code, run as the emulator runs it (python -I -S), short of main().
    code = (
        "import sys; before = set(sys.modules); "
        f"path = {str(runtime_stub.__file__)!r}; "
        "exec(compile(open(path).read(), path, 'exec'), {'__name__': 'stub'}); "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert set(loaded.stdout.split()) <= {"__future__", "_socket"}
