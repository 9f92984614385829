"""The runtime stub writes its request as json.dumps would, with the standard library's heavy modules
left unimported (one stub lives beside every execution environment)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def start_stub_against_a_server(tmp_path: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """The stub run as the emulator runs it, and the connection it made to a stand-in runtime server."""
    path = str(tmp_path / "server.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(30)
    stub = subprocess.Popen(
        [sys.executable, "-I", "-S", runtime_stub.__file__, "/var/runtime/bootstrap"],
        env={runtime_stub.SOCKET_VARIABLE: path, "FUNCTION_VARIABLE": "kept"},
        stdin=subprocess.DEVNULL,
    )
    connection, _address = server.accept()
    server.close()
    connection.settimeout(30)
    data, descriptors, _flags, _address = socket.recv_fds(connection, 65536, 3)
    for descriptor in descriptors:
        os.close(descriptor)
    assert len(descriptors) == 3
    assert json.loads(data[4:])["env"]["FUNCTION_VARIABLE"] == "kept"
    return stub, connection


def command_of(pid: int) -> list[str]:
    deadline = time.monotonic() + 10
    while True:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if command[0] == b"sh" or time.monotonic() > deadline:
            return [part.decode() for part in command if part]
        time.sleep(0.01)


@pytest.mark.skipif(not os.access(runtime_stub.WAITING_SHELL, os.X_OK), reason="needs /bin/sh")
@pytest.mark.parametrize(("answer", "status"), [(b"exit:0", 0), (b"exit:7", 7), (b"exit:137", 137), (b"", 1)])
def test_after_handing_off_the_stub_waits_as_a_shell_and_exits_with_the_runtimes_status(
    tmp_path: Path, answer: bytes, status: int
) -> None:
    stub, connection = start_stub_against_a_server(tmp_path)
    with connection:
        # Same process (the emulator's child), now a shell holding the connection.
        assert command_of(stub.pid)[:2] == ["sh", "-c"]
        connection.sendall(answer)
    assert stub.wait(timeout=30) == status


@pytest.mark.skipif(not os.access(runtime_stub.WAITING_SHELL, os.X_OK), reason="needs /bin/sh")
def test_when_the_emulator_kills_the_waiting_stub_the_server_sees_its_connection_close(
    tmp_path: Path,
) -> None:
    stub, connection = start_stub_against_a_server(tmp_path)
    with connection:
        assert command_of(stub.pid)[:2] == ["sh", "-c"]
        stub.kill()
        stub.wait(timeout=30)
        assert connection.recv(1) == b""
