"""The host side of the runtime server: one per runtime environment, started on first use, stopped with
the service. It prepares runtimes (the init phase, ahead of the emulator) and hands its socket to the stubs.

See ``sam_local_cloud/runtime_forkserver.py`` for how runtimes are forked from a warm Python.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from sam_local_cloud import mount_namespace, runtime_forkserver, runtime_shim, runtime_stub
from sam_local_cloud.lambda_service.runtimes import RuntimeBuild
from sam_local_cloud.process_groups import start_session

FORKSERVER_SCRIPT = Path(runtime_forkserver.__file__)
STUB_SCRIPT = Path(runtime_stub.__file__)
SHIM_SCRIPT = Path(runtime_shim.__file__)
SOCKET_VARIABLE = runtime_stub.SOCKET_VARIABLE
TOKEN_VARIABLE = runtime_stub.TOKEN_VARIABLE
READ_ONLY_VARIABLE = runtime_forkserver.READ_ONLY_VARIABLE

# Imported once in the fork server and shared by every runtime: what the Python Lambda functions of this
# field import (boto3 comes with Lambda's Python runtime). Only what the runtime environment has is
# imported; a module missing there is skipped, not an error.
SHARED_MODULES = (
    "boto3",
    "botocore.session",
    "botocore.client",
    "aws_lambda_powertools",
    "aws_lambda_powertools.logging",
    "aws_lambda_powertools.metrics",
    "aws_lambda_powertools.tracing",
    "aws_xray_sdk.core",  # Powertools' Tracer imports it even when tracing is off: 24 MB per runtime
    "wrapt",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.idempotency",
    "aws_lambda_powertools.utilities.parser",
    "pydantic",
    "pydantic.functional_serializers",
    # The runtime interface client every runtime runs, short of two modules each runtime imports itself:
    # ``awslambdaric.bootstrap`` reads the function's AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL when
    # imported, and ``awslambdaric.lambda_runtime_client`` sets up its native client for the Runtime API of
    # the environment it is imported in. 1.3 MB less per runtime.
    "awslambdaric.lambda_context",
    "awslambdaric.lambda_runtime_exception",
    "awslambdaric.lambda_runtime_log_utils",
    "awslambdaric.lambda_runtime_marshaller",
    "awslambdaric.lambda_runtime_hooks_runner",
    "simplejson",
)


class ForkServerError(RuntimeError):
    """The fork server did not come up, or is stopped."""


@functools.cache
def read_only_supported() -> bool:
    """Whether runtimes here can see their task root read-only (root, or unprivileged user namespaces).

    Asked once per process, of a forked child of a fresh interpreter, as the runtimes will do it.
    """
    return mount_namespace.probe_succeeds([sys.executable, "-I", str(FORKSERVER_SCRIPT), "--probe-read-only"])


def read_only_variables(folders: Iterable[Path]) -> dict[str, str]:
    """The variable that has the runtime server show ``folders`` read-only to a runtime (Lambda's
    /var/task and /opt), for the environment of an emulator whose runtime it starts; nothing where that
    cannot be done here. The server takes it out of the function's environment."""
    if not read_only_supported():
        return {}
    return {READ_ONLY_VARIABLE: os.pathsep.join(str(folder) for folder in folders)}


class PreparedRuntime:
    """A runtime running its init phase (or done with it), waiting for its emulator to adopt it."""

    def __init__(self, token: str, connection: socket.socket) -> None:
        self.token = token
        self._connection: socket.socket | None = connection
        self._answer = b""

    def wait_ready(self, deadline: float) -> bool:
        """True once its init is done; False when it failed (the runtime exited) or ran past ``deadline``."""
        connection = self._connection
        while connection is not None and not self._answer.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            connection.settimeout(remaining)
            try:
                chunk = connection.recv(64)
            except TimeoutError:
                return False
            except OSError:
                return False
            if not chunk:
                return False
            self._answer += chunk
        return self._answer == runtime_shim.READY

    def close(self) -> None:
        """Let it go: a runtime not adopted yet is stopped by the server."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class RuntimeForkServer:
    """The runtime server of one runtime environment, started on first use with that environment's Python.

    ``spawn`` starts every runtime as a fresh interpreter instead of forking it from the warm server.
    """

    def __init__(
        self,
        build: RuntimeBuild,
        log_dir: Path,
        *,
        spawn: bool = False,
        startup_timeout_seconds: float = 60.0,
    ) -> None:
        self.build = build
        self.log_dir = log_dir
        self.spawn = spawn
        self.startup_timeout_seconds = startup_timeout_seconds
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None
        self._launched_at = 0.0
        self._closed = False
        self._lock = threading.Lock()

    def socket_path(self) -> str:
        """The server's socket, starting the server first if needed (waits until it has imported)."""
        with self._lock:
            if self._closed:
                raise ForkServerError("the runtime server is stopped")
            if not self._running_locked():
                self._stop_locked()
                self._launch_locked()
            return self._wait_started_locked()

    def launch(self) -> None:
        """Starts the server without waiting for it, as Lambda readies a runtime ahead of the first call:
        its shared imports load while the local cloud finishes starting, not during the first Invoke."""
        with self._lock:
            if not self._closed and not self._running_locked():
                self._stop_locked()
                self._launch_locked()

    def _running_locked(self) -> bool:
        return self._process is not None and self._process.poll() is None and self._folder is not None

    def command(self, handler: str) -> list[str]:
        """What the emulator runs as the runtime: the stub, which asks this server for the runtime."""
        return [self.build.python, "-I", "-S", str(STUB_SCRIPT), handler]

    def prepare(
        self, token: str, environment: Mapping[str, str], cwd: Path, handler: str, log_path: Path
    ) -> PreparedRuntime:
        """Start a runtime's init phase now, its output appended to ``log_path``."""
        path = self.socket_path()
        request = json.dumps(
            {
                "op": runtime_forkserver.PREPARE,
                "token": token,
                "env": dict(environment),
                "cwd": str(cwd),
                "handler": handler,
            }
        ).encode()
        message = runtime_forkserver.HEADER.pack(len(request)) + request
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(path)
            with log_path.open("ab") as log:
                sent = socket.send_fds(connection, [message], [log.fileno()])
            connection.sendall(message[sent:])
        except OSError as error:
            connection.close()
            raise ForkServerError(f"the runtime server refused a runtime: {error!r}") from error
        return PreparedRuntime(token, connection)

    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _launch_locked(self) -> None:
        # Unix socket paths are limited to about 100 characters: a short folder of its own in /tmp.
        self._folder = tempfile.mkdtemp(prefix="sam-local-cloud-fs-")
        path = os.path.join(self._folder, "forkserver.sock")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "AWS_"))
        }
        command = [self.build.python, "-I", "-u", str(FORKSERVER_SCRIPT), "--socket", path]
        command += ["--shim", str(SHIM_SCRIPT), "--preload", ",".join(SHARED_MODULES)]
        for folder in self.build.package_dirs:
            command += ["--path", str(folder)]
        if self.spawn:
            command.append("--spawn")
        # Beside the build, kept across runs: never __pycache__ in the (read-only) task root.
        command += ["--pycache-prefix", str(self.build.root / "pycache")]
        with (self.log_dir / f"forkserver-{self.build.key}.log").open("ab") as log:
            self._process = start_session(
                command,
                env={**environment, "PYTHONUNBUFFERED": "1"},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._launched_at = time.monotonic()

    def _wait_started_locked(self) -> str:
        if self._process is None or self._folder is None:
            raise ForkServerError("the runtime fork server was not launched")
        path = os.path.join(self._folder, "forkserver.sock")
        deadline = self._launched_at + self.startup_timeout_seconds
        while not os.path.exists(path):
            if self._process.poll() is not None or time.monotonic() > deadline:
                code = self._process.returncode
                self._stop_locked()
                raise ForkServerError(
                    f"the runtime fork server did not start (exit code {code}); see {self.log_dir}"
                )
            time.sleep(0.01)
        return path

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._stop_locked()

    def _stop_locked(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            # The runtimes are in its process group (and die with it anyway: PR_SET_PDEATHSIG).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
