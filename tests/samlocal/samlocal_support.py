"""Helpers of the sam local tests: the real `sam` binary run against the Docker API served in-process.

Set ORDERBATCH_DOCKER_CALLS to a folder to get, per test, the Docker API calls SAM CLI made (what
docs/sam-local.md lists).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from orderbatch.project import PROJECT_ROOT
from sam_local_cloud.docker_api import Call, DockerApi, DockerApiServer

BIN = Path(sys.executable).parent
SAM = BIN / "sam"
SAM_APP = Path(__file__).resolve().parent / "sam_app"
SAM_TIMEOUT_SECONDS = 180


@dataclass
class ServedDocker:
    api: DockerApi
    server: DockerApiServer

    @property
    def host(self) -> str:
        return self.server.docker_hosts()[0]

    def mark(self) -> int:
        return len(self.api.calls)

    def calls_since(self, mark: int) -> list[Call]:
        return self.api.calls[mark:]


def call_summary(calls: list[Call]) -> list[str]:
    """Routes in order, a run of one route once with its count: ``GET /containers/{id}/json (5 times)``."""
    summary: list[str] = []
    previous, count = "", 0
    for call in [*calls, None]:
        route = f"{call.route} -> {call.status}" if call is not None else ""
        if route == previous:
            count += 1
            continue
        if previous:
            summary.append(previous if count == 1 else f"{previous} ({count} times)")
        previous, count = route, 1
    return summary


def record_calls(request: pytest.FixtureRequest, calls: list[Call]) -> None:
    folder = os.environ.get("ORDERBATCH_DOCKER_CALLS")
    if folder:
        name = re.sub(r"[^\w.-]+", "_", request.node.name)
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.txt").write_text("\n".join(call_summary(calls)) + "\n")


def sam_environment(docker: ServedDocker) -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "DOCKER_")) and key != "SAM_CLI_CONTAINER_CONNECTION_TIMEOUT"
    }
    return {
        **environment,
        "DOCKER_HOST": docker.host,
        "SAM_CLI_TELEMETRY": "0",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }


def run_sam(
    docker: ServedDocker, arguments: list[str], *, cwd: Path = PROJECT_ROOT, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SAM), *arguments],
        cwd=cwd,
        env=sam_environment(docker),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=SAM_TIMEOUT_SECONDS,
        check=False,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class SamService:
    """`sam local start-lambda` or `start-api`, running until stopped."""

    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """Ctrl-C, as a user stops it (SAM CLI then removes its containers)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_sam_service(
    docker: ServedDocker, arguments: list[str], port: int, log_path: Path, *, cwd: Path = PROJECT_ROOT
) -> SamService:
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(SAM), *arguments, "--port", str(port)],
            cwd=cwd,
            env=sam_environment(docker),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    service = SamService(process, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + SAM_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"sam {arguments[:2]} exited ({process.returncode}):\n{service.log()}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return service
        time.sleep(0.2)
    service.stop()
    raise AssertionError(f"sam {arguments[:2]} did not listen on {port}:\n{service.log()}")
