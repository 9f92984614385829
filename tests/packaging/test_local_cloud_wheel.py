"""The local cloud as a distribution of its own: its wheel builds, installs alone into a fresh venv (none
of the order app comes with it), and runs an app of the compat suite from another directory.

The wheel's dependencies are installed at the dev lock's versions, from the installer's cache that
`make setup` filled; the package index is asked which files exist, as `make setup` asks it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from wheels import built_wheel

REPOSITORY = Path(__file__).resolve().parents[2]
PACKAGE = REPOSITORY / "packages" / "sam-local-cloud"
UV = REPOSITORY / ".cache" / "uv" / "bin" / "uv"
DEV_LOCK = REPOSITORY / "requirements" / "dev.lock"
OVERRIDES = REPOSITORY / "requirements" / "overrides.txt"
APP = REPOSITORY / "tests" / "compat" / "fixtures" / "zip_code_uri"

# Run by the fresh venv's Python, from a folder outside the checkout.
RUN_THE_APP = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    import sam_local_cloud
    from sam_local_cloud import LocalCloud, LocalCloudConfig

    try:
        import orderbatch
    except ModuleNotFoundError:
        app_installed = False
    else:
        app_installed = True
    with LocalCloud(LocalCloudConfig(template=Path(sys.argv[1]), account_concurrency=2)) as cloud:
        stepfunctions = cloud.client("stepfunctions")
        arn = cloud.stack.outputs["GreetArn"]
        execution = stepfunctions.start_execution(stateMachineArn=arn, input=json.dumps({"name": "wheel"}))
        deadline = time.monotonic() + 60
        while (described := stepfunctions.describe_execution(executionArn=execution["executionArn"]))[
            "status"
        ] == "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.2)
    print(json.dumps({
        "package": sam_local_cloud.__file__,
        "app_installed": app_installed,
        "status": described["status"],
        "output": json.loads(described.get("output") or "null"),
    }))
    """
)


def run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_the_wheel_installed_alone_runs_a_compat_app_from_another_directory(tmp_path: Path) -> None:
    if not UV.exists():
        pytest.fail(f"{UV} is missing: `make setup` installs it")
    wheel = built_wheel(PACKAGE, tmp_path, tmp_path / "wheels")
    venv = tmp_path / "venv"
    run(UV, "venv", "--quiet", "--no-python-downloads", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    # The lock's pins as constraints (the versions tested here, already in the cache) and its
    # override of SAM CLI's exact boto3 pin (requirements/overrides.txt says why).
    run(
        UV,
        "pip",
        "install",
        "--quiet",
        "--python",
        python,
        "-c",
        DEV_LOCK,
        "--override",
        OVERRIDES,
        wheel,
    )

    installed = run(UV, "pip", "list", "--python", python, "--format", "json")
    names = {entry["name"] for entry in json.loads(installed)}
    assert "sam-local-cloud" in names
    assert not names & {"orderbatch", "plotly", "numpy", "playwright", "hypothesis"}

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "run_app.py"
    script.write_text(RUN_THE_APP)
    result = json.loads(run(python, script, APP / "template.yaml", cwd=elsewhere).splitlines()[-1])

    assert result["package"].startswith(str(venv)), "the wheel's copy, not the checkout's"
    assert result["app_installed"] is False
    assert result["status"] == "SUCCEEDED"
    assert result["output"] == {"greeting": "hello, wheel"}
