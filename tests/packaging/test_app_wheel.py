"""The order app as an installed product: its wheel (with the local cloud's) installs into a fresh venv and
its commands run on a copy of the project in another directory, with no checkout to lean on.

`orderbatch lint`, `orderbatch plan` and `orderbatch local up --template` are what a team runs on its own
template; the conformance cases and the public apps' manifest ship inside the wheel.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from wheels import REPOSITORY, built_wheel, run, venv_with

LOCAL_CLOUD = REPOSITORY / "packages" / "sam-local-cloud"
# What `sam deploy` reads of the project: the template and what it points at.
PROJECT_FILES = ("template.yaml", "samconfig.toml", "statemachine", "functions", "fixtures")
HEALTH_PATH = "/_sam_local_cloud/health"
WHERE_THE_PACKAGE_IS = (
    "import orderbatch, orderbatch.conformance.cases as cases; "
    "print(orderbatch.__file__); print(cases.DEFAULT_CASES_DIR)"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{HEALTH_PATH}", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_the_installed_app_lints_plans_and_serves_a_project_elsewhere(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    cloud_wheel = built_wheel(LOCAL_CLOUD, tmp_path, wheels)
    app_wheel = built_wheel(REPOSITORY, tmp_path, wheels)
    assert app_wheel.name.startswith("orderbatch-")
    venv = tmp_path / "venv"
    python = venv_with(venv, app_wheel, cloud_wheel)
    command = venv / "bin" / "orderbatch"

    project = tmp_path / "elsewhere" / "app"
    project.mkdir(parents=True)
    for name in PROJECT_FILES:
        copy = shutil.copytree if (REPOSITORY / name).is_dir() else shutil.copy2
        copy(REPOSITORY / name, project / name)

    where = run(python, "-c", WHERE_THE_PACKAGE_IS)
    module, cases = where.split()
    assert module.startswith(str(venv)), "the wheel's copy, not the checkout's"
    assert len(list(Path(cases).iterdir())) > 1000, "the conformance cases ship in the wheel"

    # The project's template passes its own rules (`make lint` holds it to them in the checkout).
    assert json.loads(run(command, "lint", "--format", "json", "template.yaml", cwd=project)) == []

    plan = json.loads(
        run(command, "plan", "--template", "template.yaml", "--orders", "100", "--json", cwd=project)
    )
    (planned,) = plan["runs"]
    assert planned["orders"]["total"] == planned["orders"]["succeeded"] == 100

    port = free_port()
    log = (tmp_path / "local-up.log").open("w")
    serving = subprocess.Popen(
        [str(command), "local", "up", "--template", "template.yaml", "--port", str(port)],
        cwd=project,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not healthy(port):
            assert serving.poll() is None, (tmp_path / "local-up.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "local up did not answer within 120 s"
            time.sleep(0.2)
    finally:
        serving.send_signal(signal.SIGINT)
        try:
            serving.wait(timeout=60)
        except subprocess.TimeoutExpired:
            serving.kill()
        log.close()
