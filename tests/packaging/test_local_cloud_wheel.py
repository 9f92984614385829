"""The local cloud as a distribution of its own: its wheel builds, installs alone into a fresh venv (none
of the order app comes with it), and runs an app of the compat suite from another directory.

The wheel's dependencies are installed at the dev lock's versions, from the installer's cache that
`make setup` filled; the package index is asked which files exist, as `make setup` asks it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from wheels import REPOSITORY, UV, built_wheel, run, venv_with

PACKAGE = REPOSITORY / "packages" / "sam-local-cloud"
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


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_the_wheel_installed_alone_runs_a_compat_app_from_another_directory(tmp_path: Path) -> None:
    wheel = built_wheel(PACKAGE, tmp_path, tmp_path / "wheels")
    venv = tmp_path / "venv"
    python = venv_with(venv, wheel)

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
