"""What the Runtime Interface Emulator starts as a function's runtime.

It asks the runtime server (``runtime_forkserver.py``, at ``SAM_LOCAL_CLOUD_FORKSERVER_SOCKET``) for the
runtime prepared for this environment (``SAM_LOCAL_CLOUD_PREPARED_RUNTIME``, whose init already ran) or, if
there is none, a new one, and hands it this process's arguments, environment, working directory and
standard streams. Then it waits: it exits when that runtime exits, with its status, and when the emulator
kills it, the server kills the runtime. Run by path with ``python -I -S``: standard library only, a few
milliseconds and megabytes.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

SOCKET_VARIABLE = "SAM_LOCAL_CLOUD_FORKSERVER_SOCKET"
TOKEN_VARIABLE = "SAM_LOCAL_CLOUD_PREPARED_RUNTIME"
HEADER = struct.Struct("!I")
EXIT_PREFIX = b"exit:"


def main() -> int:
    environment = dict(os.environ)
    # The function's environment has neither: they are for this stub only.
    socket_path = environment.pop(SOCKET_VARIABLE)
    token = environment.pop(TOKEN_VARIABLE, None)
    request = json.dumps(
        {"op": "run", "token": token, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": environment}
    ).encode()
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
