"""`orderbatch local docker` as a user runs it: the lines it prints, TCP beside the socket, SIGTERM."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import docker
import pytest
import requests
from samlocal_support import BIN, SAM_APP, free_port

from orderbatch.project import PROJECT_ROOT

pytestmark = pytest.mark.e2e


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, its_parent in parents.items() if its_parent == parent]
        found += children
        frontier += children
    return found


def invoke(port: int) -> None:
    url = f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"
    with contextlib.suppress(requests.RequestException):
        requests.post(url, json={}, timeout=30)


def test_serves_until_sigterm_then_stops_every_process_it_started(tmp_path: Path) -> None:
    socket_path = Path(tempfile.mkdtemp(prefix="obdk-")) / "docker.sock"
    tcp_port = free_port()
    env_vars = tmp_path / "env.json"
    command = [str(BIN / "orderbatch"), "local", "docker", "--socket", str(socket_path)]
    command += ["--tcp", f"127.0.0.1:{tcp_port}", "--state-dir", str(tmp_path / "state")]
    command += ["--write-env-vars", str(env_vars), "--template", str(PROJECT_ROOT / "template.yaml")]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The unix socket appears before the TCP listener binds: wait for the port this test uses.
        deadline = time.monotonic() + 60
        while not _accepts(tcp_port) and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.05)
        assert server.poll() is None, server.communicate()[1]
        client = docker.DockerClient(base_url=f"tcp://127.0.0.1:{tcp_port}", version="1.35")
        port = free_port()
        container = client.containers.create(
            "public.ecr.aws/lambda/python:3.12",
            entrypoint=["/var/rapid/aws-lambda-rie", "--log-level", "error"],
            volumes={str(SAM_APP / "echo"): {"bind": "/var/task", "mode": "ro"}},
            environment={"AWS_LAMBDA_FUNCTION_HANDLER": "app.slow"},
            ports={"8080": ("127.0.0.1", port)},
        )
        container.start()
        # An invocation in flight, so its runtime (the emulator's child, as in a container) is running too.
        invocation = threading.Thread(target=invoke, args=(port,), daemon=True)
        invocation.start()
        time.sleep(1)
        started = descendants(server.pid)
        assert len(started) >= 2, started  # the emulator and its runtime
        server.send_signal(signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
        invocation.join(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0
    assert f"export DOCKER_HOST=unix://{socket_path}" in output
    assert f"tcp://127.0.0.1:{tcp_port}" in output
    assert not socket_path.exists()
    # The runtime server looks for its parent once a second; on a loaded machine that can take longer.
    # A zombie has ended (only its exit status is left for a parent to collect), so it does not count.
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in started if _running(pid)] == []
    validate_variables = json.loads(env_vars.read_text())["ValidateOrderFunction"]
    assert validate_variables["ORDERS_TABLE_NAME"] == "orderbatch-OrdersTable"
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{tcp_port}/_ping", timeout=5)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
