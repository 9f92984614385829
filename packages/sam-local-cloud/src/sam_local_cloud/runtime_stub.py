"""What the Runtime Interface Emulator starts as a function's runtime.

It asks the runtime server (``runtime_forkserver.py``, at ``SAM_LOCAL_CLOUD_FORKSERVER_SOCKET``) for the
runtime prepared for this environment (``SAM_LOCAL_CLOUD_PREPARED_RUNTIME``, whose init already ran) or, if
there is none, a new one, and hands it this process's arguments, environment, working directory and
standard streams. Then it waits: it exits when that runtime exits, with its status, and when the emulator
kills it, the server kills the runtime. Run by path with ``python -I -S``.

The wait is left to ``/bin/sh``: once its request is sent the stub ``exec``s a shell, in the same process
(the emulator's child, with its pid), that reads the server's answer from the same connection and exits
with its status. A waiting Python holds about 3 MB of its own; a waiting shell, a few hundred KB. Where
there is no shell the stub waits itself.

One of these lives beside every execution environment for as long as it does, so it imports nothing but
what the interpreter has loaded at its start and ``_socket``: no ``json``, ``socket``, ``struct`` or
``os`` (with ``re``, ``enum`` and the rest they bring, 2 MB of every stub's own memory). It writes its one
JSON request itself, as ``json.dumps`` would, and reads the environment as ``os.environ`` does.
"""

from __future__ import annotations

import _socket
import posix
import sys

SOCKET_VARIABLE = "SAM_LOCAL_CLOUD_FORKSERVER_SOCKET"
TOKEN_VARIABLE = "SAM_LOCAL_CLOUD_PREPARED_RUNTIME"
EXIT_PREFIX = b"exit:"
HEADER_BYTES = 4  # the request's length, big-endian, before it
STREAMS = (0, 1, 2)
C_INT_BYTES = 4  # SCM_RIGHTS carries C ints (Linux)
WAITING_SHELL = "/bin/sh"
# Reads the answer (``exit:N``, then the server closes) from the descriptor named by $1 and exits with N;
# a connection closed without an answer is exit status 1, as the stub itself would exit.
WAIT_FOR_EXIT = 'IFS= read -r answer <&"$1"; case $answer in exit:*) exit "${answer#exit:}";; esac; exit 1'


def json_string(text: str) -> str:
    """``text`` as ``json.dumps`` writes a string (``ensure_ascii``: every other character escaped, a lone
    surrogate of an undecodable byte included)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    escaped = []
    for character in text:
        code = ord(character)
        if character in ('"', "\\"):
            escaped.append("\\" + character)
        elif 0x20 <= code < 0x7F:
            escaped.append(character)
        elif code < 0x10000:
            escaped.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
    return '"' + "".join(escaped) + '"'


def request_document(token: str | None, argv: list[str], cwd: str, environment: dict[str, str]) -> bytes:
    """The ``run`` request, as JSON."""
    variables = ",".join(f"{json_string(name)}:{json_string(value)}" for name, value in environment.items())
    return (
        '{"op":"run","token":'
        + ("null" if token is None else json_string(token))
        + ',"argv":['
        + ",".join(json_string(argument) for argument in argv)
        + '],"cwd":'
        + json_string(cwd)
        + ',"env":{'
        + variables
        + "}}"
    ).encode("ascii")


def _environment() -> dict[str, str]:
    # As os.environ decodes the process's environment.
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    return {
        name.decode(encoding, errors): value.decode(encoding, errors) for name, value in posix.environ.items()
    }


def wait_in_a_shell(descriptor: int) -> None:
    """Become a shell that waits for the answer on ``descriptor``; returns only if there is no shell."""
    posix.set_inheritable(descriptor, True)
    try:
        posix.execv(WAITING_SHELL, ["sh", "-c", WAIT_FOR_EXIT, "sh", str(descriptor)])
    except OSError:
        posix.set_inheritable(descriptor, False)


def main() -> int:
    environment = _environment()
    # The function's environment has neither: they are for this stub only.
    socket_path = environment.pop(SOCKET_VARIABLE)
    token = environment.pop(TOKEN_VARIABLE, None)
    request = request_document(token, sys.argv[1:], posix.getcwd(), environment)
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    connection.connect(socket_path)
    message = len(request).to_bytes(HEADER_BYTES, "big") + request
    descriptors = b"".join(fd.to_bytes(C_INT_BYTES, sys.byteorder) for fd in STREAMS)
    sent = connection.sendmsg([message], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])
    while sent < len(message):
        sent += connection.send(message[sent:])
    wait_in_a_shell(connection.fileno())
    answer = b""
    while chunk := connection.recv(64):
        answer += chunk
    if answer.startswith(EXIT_PREFIX):
        return int(answer[len(EXIT_PREFIX) :])
    return 1


if __name__ == "__main__":
    sys.exit(main())
