"""A warm Python that forks function runtimes, so environments share its imported pages.

Every execution environment runs its own Python runtime, and each one importing boto3 and Powertools
costs about 50 MB and most of a second of CPU. This server imports those once; the Runtime Interface
Emulator starts ``runtime_stub.py`` as the function's runtime, the stub hands its environment, working
directory and standard streams to this server over a Unix socket, and the server forks a child that
becomes the runtime (``python -m awslambdaric HANDLER``) with exactly that environment. The child's pages
stay shared with this server until written (``gc.freeze`` keeps the collector from writing them).

The stub and the child live and die together, as one runtime process would: when the emulator kills the
stub (a timeout, a reset, the environment reaped), the server kills the child; when the child exits, the
server tells the stub its exit status and the stub exits with it. Children also die with the server.

Run by path (``python -u runtime_forkserver.py --socket PATH --preload a,b``) and standard library only,
so nothing of the local cloud's own code is imported into the runtimes. The socket is bound only once
the preloaded modules are imported: its appearance means ready.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import traceback
from typing import Any

# Length-prefixed JSON request; the stub's stdin, stdout and stderr ride along as SCM_RIGHTS.
HEADER = struct.Struct("!I")
STREAMS = 3
EXIT_PREFIX = b"exit:"
_PR_SET_PDEATHSIG = 1


def _preload(modules: list[str]) -> list[str]:
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # a module the functions do not have installed is simply not shared
            continue
        loaded.append(name)
    return loaded


def _die_with_parent() -> None:
    """Linux: the kernel kills this child when the server dies, so no runtime outlives the local cloud."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _receive_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 65536, STREAMS)
    while len(data) < HEADER.size:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the stub closed before sending its request")
        data += chunk
    (length,) = HEADER.unpack_from(data)
    body = bytearray(data[HEADER.size :])
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the stub closed in the middle of its request")
        body += chunk
    return json.loads(bytes(body)), list(fds)


def _become_runtime(request: dict[str, Any], fds: list[int], base_path: list[str]) -> None:
    """In the forked child: take the stub's streams, environment and directory, then run awslambdaric."""
    exit_code = 1
    try:
        _die_with_parent()
        for number, fd in enumerate(fds[:STREAMS]):
            os.dup2(fd, number)
            os.close(fd)
        environment: dict[str, str] = request["env"]
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(environment)
        # What `python -m awslambdaric` started in this directory with this PYTHONPATH would search.
        python_path = [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[:] = [request["cwd"], *python_path, *base_path]
        importlib.invalidate_caches()
        sys.argv = ["awslambdaric", *request["argv"]]
        runpy.run_module("awslambdaric", run_name="__main__", alter_sys=True)
        exit_code = 0
    except SystemExit as stop:
        exit_code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(exit_code)


class ForkServer:
    def __init__(self, socket_path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(socket_path)
        self.listener.listen(128)
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, socket.socket] = {}
        self.child_of: dict[socket.socket, int] = {}
        self.base_path = [entry for entry in sys.path[1:]]  # without this script's own folder
        wakeup_reader, self.wakeup_writer = socket.socketpair()
        wakeup_reader.setblocking(False)
        self.wakeup_writer.setblocking(False)
        self.wakeup_reader = wakeup_reader
        signal.set_wakeup_fd(self.wakeup_writer.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup byte is what matters
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(wakeup_reader, selectors.EVENT_READ, "signal")

    def serve_forever(self) -> None:
        while True:
            for key, _events in self.selector.select():
                if key.data == "accept":
                    self._accept()
                elif key.data == "signal":
                    with contextlib.suppress(BlockingIOError):
                        while self.wakeup_reader.recv(4096):
                            pass
                    self._reap()
                else:
                    self._stub_closed(key.fileobj)  # type: ignore[arg-type]

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        try:
            request, fds = _receive_request(connection)
        except (OSError, ValueError):
            connection.close()
            return
        pid = os.fork()
        if pid == 0:
            self._close_in_child(connection)
            _become_runtime(request, fds, self.base_path)
        for fd in fds:
            os.close(fd)
        self.children[pid] = connection
        self.child_of[connection] = pid
        self.selector.register(connection, selectors.EVENT_READ, "stub")

    def _close_in_child(self, own_connection: socket.socket) -> None:
        signal.set_wakeup_fd(-1)
        for signal_number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(signal_number, signal.SIG_DFL)
        self.selector.close()
        for resource in (
            self.listener,
            self.wakeup_reader,
            self.wakeup_writer,
            own_connection,
            *self.child_of,
        ):
            resource.close()

    def _stub_closed(self, connection: socket.socket) -> None:
        """The stub sends nothing after its request: readable now means it is gone, so its runtime goes."""
        self.selector.unregister(connection)
        pid = self.child_of.get(connection)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            if connection is None:
                continue
            self.child_of.pop(connection, None)
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                connection.sendall(EXIT_PREFIX + str(code if code >= 0 else 128 - code).encode())
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(connection)
            connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--preload", default="", help="comma-separated modules to import once")
    args = parser.parse_args()
    _preload([name for name in args.preload.split(",") if name])
    gc.collect()
    gc.freeze()
    # The socket appears only now, when everything is imported: the local cloud waits for it.
    ForkServer(args.socket).serve_forever()


if __name__ == "__main__":
    main()
