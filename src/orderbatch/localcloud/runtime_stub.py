"""What the Runtime Interface Emulator starts as a function's runtime when runtimes are forked.

It asks the fork server (``runtime_forkserver.py``, at ``ORDERBATCH_FORKSERVER_SOCKET``) for a runtime
with this process's arguments, environment, working directory and standard streams, then waits: it exits
when that runtime exits, with its status, and when the emulator kills it, the server kills the runtime.
Run by path with ``python -I -S``: standard library only, a few milliseconds and megabytes.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

SOCKET_VARIABLE = "ORDERBATCH_FORKSERVER_SOCKET"
HEADER = struct.Struct("!I")
EXIT_PREFIX = b"exit:"


def main() -> int:
    environment = dict(os.environ)
    socket_path = environment.pop(SOCKET_VARIABLE)  # the function's environment does not have it
    request = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": environment}).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(socket_path)
    message = HEADER.pack(len(request)) + request
    sent = socket.send_fds(connection, [message], [0, 1, 2])
    connection.sendall(message[sent:])
    answer = b""
    while chunk := connection.recv(64):
        answer += chunk
    if answer.startswith(EXIT_PREFIX):
        return int(answer[len(EXIT_PREFIX) :])
    return 1


if __name__ == "__main__":
    sys.exit(main())
