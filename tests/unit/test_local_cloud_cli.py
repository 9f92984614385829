"""The local cloud's own command line, `sam-local-cloud up|env`: what `env` prints, usage errors answered
with exit code 2, the configuration `up`'s flags build, and `up` serving a template until a stop signal."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import tomllib
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from sam_local_cloud import DUMMY_CREDENTIALS, FaultPlan, LocalCloudConfig
from sam_local_cloud.cli import HEALTH_PATH, SAM_LOCAL_CLOUD, exposure_warning, main

PACKAGE = Path(__file__).resolve().parents[2] / "packages" / "sam-local-cloud"
# `main` as the console script calls it, in a process of its own: moto's state and the signal handlers
# `up` installs are the process's.
RUN_MAIN = "import sys; from sam_local_cloud.cli import main; sys.exit(main(sys.argv[1:]))"
TINY_TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Notes:
    Type: AWS::Serverless::SimpleTable
    Properties:
      PrimaryKey: {Name: id, Type: String}
"""


@pytest.fixture
def template(tmp_path: Path) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(TINY_TEMPLATE)
    return path


# ------------------------------------------------------------------------------------------------ env


def test_env_prints_the_exports_that_point_at_the_endpoint_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--endpoint", "http://127.0.0.1:5000"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "export AWS_ENDPOINT_URL=http://127.0.0.1:5000",
        "export AWS_ACCESS_KEY_ID=testing",
        "export AWS_SECRET_ACCESS_KEY=testing",
        "export AWS_DEFAULT_REGION=us-east-1",
        "export AWS_DISABLE_HOST_PREFIX_INJECTION=true",
    ]


def test_env_points_at_aws_endpoint_url_else_the_default_port(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    main(["env"])
    default = capsys.readouterr().out.splitlines()[0]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4599")
    main(["env"])
    from_environment = capsys.readouterr().out.splitlines()[0]

    assert default == "export AWS_ENDPOINT_URL=http://127.0.0.1:4566"
    assert from_environment == "export AWS_ENDPOINT_URL=http://127.0.0.1:4599"


# ------------------------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "sam-local-cloud: error: the following arguments are required: COMMAND"),
        (["down"], "sam-local-cloud: error: argument COMMAND: invalid choice: 'down'"),
        (["up", "--port", "high"], "sam-local-cloud up: error: argument --port: invalid int value: 'high'"),
        (
            ["up", "--parameter-overrides", "S"],
            "sam-local-cloud up: error: argument --parameter-overrides: must look like NAME=VALUE, got 'S'",
        ),
        (
            ["up", "--latency", "Fn=slow"],
            "sam-local-cloud up: error: argument --latency: must look like FUNCTION=SECONDS, got 'Fn=slow'",
        ),
        (["up", "--iam-mode", "maybe"], "sam-local-cloud up: error: argument --iam-mode: invalid choice"),
        (["env", "--port", "1"], "sam-local-cloud: error: unrecognized arguments: --port 1"),
    ],
    ids=["no-command", "unknown-command", "port", "parameter-overrides", "latency", "iam-mode", "env-port"],
)
def test_a_usage_error_exits_2_naming_the_command_and_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)

    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("usage: sam-local-cloud")
    assert message in error


# ------------------------------------------------------------------------------ up's configuration


@pytest.fixture
def signal_handlers_restored() -> Iterator[None]:
    """`up` takes SIGINT and SIGTERM for itself; this test process gets its own handlers back."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


@pytest.fixture
def up_config(
    config_a_command_builds: Callable[[Callable[[], object]], LocalCloudConfig],
    tmp_path: Path,
    signal_handlers_restored: None,
) -> Callable[..., LocalCloudConfig]:
    """The configuration `sam-local-cloud up <flags>` builds, without starting a cloud."""

    def built(*flags: str) -> LocalCloudConfig:
        return config_a_command_builds(lambda: main(["up", "--state-dir", str(tmp_path / "state"), *flags]))

    return built


def test_up_builds_the_configuration_its_flags_describe(
    up_config: Callable[..., LocalCloudConfig], template: Path, tmp_path: Path
) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("functions:\n  Fn:\n    - {kind: error_before_body, attempts: [1]}\n")

    config = up_config(
        *("--template", str(template), "--port", "0", "--account-concurrency", "3"),
        *("--parameter-overrides", "Stage=dev", "Url=http://x?a=b", "--latency", "Fn=0.5"),
        *("--iam-mode", "report", "--runtime-fallback", "--spawn-runtimes", "--faults", str(faults)),
    )

    assert (config.template, config.port, config.host) == (template.resolve(), 0, "127.0.0.1")
    assert config.account_concurrency == 3
    assert config.parameter_overrides == {"Stage": "dev", "Url": "http://x?a=b"}
    assert config.latency == {"Fn": 0.5}
    assert (config.iam_mode, config.enforce_iam, config.verify_signatures) == ("report", True, True)
    assert (config.runtime_fallback, config.fork_runtimes) == (True, False)
    assert config.state_dir == (tmp_path / "state").resolve()
    assert isinstance(config.fault_plan, FaultPlan)
    assert [rule.kind for rule in config.fault_plan.functions["Fn"]] == ["error_before_body"]
    assert config.seed_files == {}  # seed data is an app's, not the command line's


def test_up_defaults_to_loopback_iam_on_and_no_faults(
    up_config: Callable[..., LocalCloudConfig], template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = up_config("--template", str(template))

    assert (config.port, config.host, config.account_concurrency) == (4566, "127.0.0.1", 10)
    assert (config.iam_mode, config.enforce_iam, config.fault_plan) == (None, True, None)
    assert capsys.readouterr().err == ""


def test_up_off_loopback_warns_in_its_own_name(
    up_config: Callable[..., LocalCloudConfig], template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = up_config("--template", str(template), "--host", "0.0.0.0", "--no-iam")

    assert (config.host, config.iam_mode, config.enforce_iam) == ("0.0.0.0", "off", False)
    assert capsys.readouterr().err.startswith("sam-local-cloud: warning: listening on 0.0.0.0, not loopback")
    assert exposure_warning("::1") is None


def test_up_refuses_a_missing_template_a_bad_fault_file_and_a_folder_it_did_not_make(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("not the cloud's")
    bad_faults = tmp_path / "faults.yaml"
    bad_faults.write_text("functions: {Fn: [{kind: explode}]}\n")
    state = str(tmp_path / "state")

    with pytest.raises(SystemExit) as no_template:
        main(["up", "--state-dir", state])
    with pytest.raises(SystemExit) as bad_plan:
        main(["up", "--state-dir", state, "--template", str(template), "--faults", str(bad_faults)])
    with pytest.raises(SystemExit) as not_ours:
        main(["up", "--state-dir", str(foreign), "--template", str(template)])

    missing = (empty / "template.yaml").resolve()
    assert no_template.value.code == f"sam-local-cloud: no SAM template at {missing}; pass --template FILE"
    assert str(bad_plan.value.code).startswith(f"sam-local-cloud: invalid fault plan {bad_faults}:")
    assert not_ours.value.code == (
        f"sam-local-cloud: {foreign.resolve()} is not empty and was not made by `sam-local-cloud up`; "
        "pass another --state-dir"
    )
    assert (foreign / "keep.txt").exists()
    assert (tmp_path / "state" / SAM_LOCAL_CLOUD.state_marker).exists()


def test_the_console_script_is_the_cli_main() -> None:
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]

    assert project["scripts"] == {"sam-local-cloud": "sam_local_cloud.cli:main"}


# ------------------------------------------------------------------------------------- up, served


@pytest.fixture
def serving_up(tmp_path: Path, template: Path) -> Iterator[Callable[[], tuple[subprocess.Popen[str], str]]]:
    """Factory: `sam-local-cloud up` on a free port, serving the tiny template; returns the process and the
    endpoint its banner names. A process left running by a failed test is killed."""
    started: list[subprocess.Popen[str]] = []

    def start() -> tuple[subprocess.Popen[str], str]:
        command = [sys.executable, "-c", RUN_MAIN, "up", "--template", str(template), "--port", "0"]
        command += ["--state-dir", str(tmp_path / "state")]
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        started.append(process)
        assert process.stdout is not None
        for line in process.stdout:
            match = re.match(r"sam-local-cloud on (http://\S+) \(account concurrency 10\)", line)
            if match:
                return process, match[1]
        raise AssertionError(f"sam-local-cloud up exited ({process.wait()}) without serving")

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.e2e
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_up_serves_the_template_until_a_stop_signal(
    serving_up: Callable[[], tuple[subprocess.Popen[str], str]], stop_signal: signal.Signals
) -> None:
    # Given `up` serving the tiny template
    process, endpoint = serving_up()
    assert process.stdout is not None
    rest: list[str] = []
    drain = threading.Thread(target=lambda: rest.extend(process.stdout or []), daemon=True)
    drain.start()

    # Then its health endpoint says deployed and the template's table is there
    with urllib.request.urlopen(endpoint + HEALTH_PATH, timeout=10) as answer:
        health: dict[str, Any] = json.loads(answer.read())
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **DUMMY_CREDENTIALS)
    tables = dynamodb.list_tables()["TableNames"]

    # When it is sent a stop signal
    process.send_signal(stop_signal)

    # Then it exits 0, having listed the table and the exports on the way
    assert process.wait(timeout=60) == 0
    drain.join(timeout=10)
    output = "".join(rest)
    assert health == {"status": "deployed"}
    assert len(tables) == 1
    assert f"  table          {tables[0]}" in output
    assert f"  export AWS_ENDPOINT_URL={endpoint}" in output
    assert "Traceback" not in output
