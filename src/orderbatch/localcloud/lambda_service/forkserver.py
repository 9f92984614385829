"""The host side of the runtime fork server: start it once, hand its socket to environments, stop it.

See ``orderbatch/localcloud/runtime_forkserver.py`` for why runtimes are forked from a warm Python.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from orderbatch.localcloud import runtime_forkserver, runtime_stub

FORKSERVER_SCRIPT = Path(runtime_forkserver.__file__)
STUB_SCRIPT = Path(runtime_stub.__file__)
SOCKET_VARIABLE = runtime_stub.SOCKET_VARIABLE

# Imported once in the fork server and shared by every runtime: what the Python Lambda functions of this
# field import (boto3 comes with Lambda's Python runtime). A module missing here is skipped, not an error.
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
)


class ForkServerError(RuntimeError):
    """The fork server did not come up."""


class RuntimeForkServer:
    """One fork server process per Python executable of a Lambda service, started on first use."""

    def __init__(
        self, python_executable: str, log_dir: Path, *, startup_timeout_seconds: float = 60.0
    ) -> None:
        self.python_executable = python_executable
        self.log_dir = log_dir
        self.startup_timeout_seconds = startup_timeout_seconds
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None
        self._lock = threading.Lock()

    def socket_path(self) -> str:
        """The server's socket, starting the server first if needed (waits until it has imported)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None and self._folder:
                return os.path.join(self._folder, "forkserver.sock")
            self._stop_locked()
            return self._start_locked()

    def command(self, handler: str) -> list[str]:
        """What the emulator runs as the runtime: the stub, which asks this server for a forked runtime."""
        return [self.python_executable, "-I", "-S", str(STUB_SCRIPT), handler]

    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start_locked(self) -> str:
        # Unix socket paths are limited to about 100 characters: a short folder of its own in /tmp.
        self._folder = tempfile.mkdtemp(prefix="orderbatch-fs-")
        path = os.path.join(self._folder, "forkserver.sock")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "AWS_"))
        }
        with (self.log_dir / "forkserver.log").open("ab") as log:
            self._process = subprocess.Popen(
                [
                    self.python_executable,
                    "-u",
                    str(FORKSERVER_SCRIPT),
                    "--socket",
                    path,
                    "--preload",
                    ",".join(SHARED_MODULES),
                ],
                env={**environment, "PYTHONUNBUFFERED": "1"},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.startup_timeout_seconds
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
            self._stop_locked()

    def _stop_locked(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            # Its children die with it (PR_SET_PDEATHSIG); the group kill covers other platforms.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
