"""Each function runs on what `sam build` would package for its runtime, with AWS's runtime lifecycle.

Its Runtime's Python with only its requirements.txt and what the Lambda runtime ships (so an import AWS
would refuse fails here too), an init phase on its own clock, unhandled errors reported with AWS's frames,
and `orderbatch local up` taking every runtime process down with it on SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from served_lambda import FIXTURE_FUNCTIONS

from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service import FunctionSpec
from sam_local_cloud.lambda_service import environments as environments_module
from sam_local_cloud.lambda_service.forkserver import read_only_supported
from sam_local_cloud.lambda_service.layers import LayerSpec
from sam_local_cloud.lambda_service.runtimes import (
    BASE_PACKAGES,
    RuntimeCache,
    RuntimeNotCreatableError,
    RuntimeResolver,
    RuntimeUnavailableError,
    find_interpreter,
)
from sam_local_cloud.runtime_stub import WAIT_FOR_EXIT
from sam_local_cloud.stack import TemplateError, load_stack

pytestmark = pytest.mark.e2e

Serve = Callable[..., Any]
FUNCTIONS = Path(__file__).resolve().parent / "runtime_functions"
LAYERS = Path(__file__).resolve().parent / "runtime_layers"
PUBLISHED_LAYER = "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-x86_64:7"
BOTO3_PIN = next(pin for pin in BASE_PACKAGES if pin.startswith("boto3==")).partition("==")[2]


def invoke(served: Any, name: str, event: dict[str, Any] | None = None) -> tuple[str | None, Any]:
    """(FunctionError, decoded payload) as boto3 sees them."""
    response = served.client(read_timeout=60).invoke(FunctionName=name, Payload=json.dumps(event or {}))
    assert response["StatusCode"] == 200
    return response.get("FunctionError"), json.loads(response["Payload"].read())


@pytest.fixture
def code_copy(tmp_path: Path) -> Path:
    """The fixture functions in a folder of their own, whose requirements.txt a test may write."""
    folder = tmp_path / "code"
    shutil.copytree(FUNCTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


# -- the build: requirements.txt and the runtime's packages, nothing else ------------------------------


def test_a_package_missing_from_requirements_fails_to_import_as_on_aws(serve_lambda: Serve) -> None:
    assert importlib.util.find_spec("yaml") is not None  # the tools have it; the function's build does not
    served = serve_lambda([FunctionSpec("NeedsYaml", "needs_yaml.handler", FUNCTIONS)])

    function_error, payload = invoke(served, "NeedsYaml", {"a": 1})

    assert function_error == "Unhandled"
    # AWS's runtime reports a failed init without the invocation's request ID: "requestId" is "".
    assert payload == {
        "errorMessage": "Unable to import module 'needs_yaml': No module named 'yaml'",
        "errorType": "Runtime.ImportModuleError",
        "requestId": "",
        "stackTrace": [],
    }


def test_listing_the_package_in_requirements_makes_it_import(serve_lambda: Serve, code_copy: Path) -> None:
    (code_copy / "requirements.txt").write_text("PyYAML\n")
    served = serve_lambda([FunctionSpec("NeedsYaml", "needs_yaml.handler", code_copy)])

    function_error, payload = invoke(served, "NeedsYaml", {"a": 1})

    assert function_error is None
    assert payload == "a: 1\n"


@pytest.mark.parametrize("runtime", ["python3.9", "python3.12", "python3.13"])
def test_a_function_runs_on_its_runtimes_python_with_only_the_runtimes_packages(
    serve_lambda: Serve, runtime: str
) -> None:
    if find_interpreter(runtime.removeprefix("python")) is None:
        pytest.skip(f"{runtime} is not installed here")
    served = serve_lambda([FunctionSpec("Report", "report_runtime.handler", FUNCTIONS, runtime=runtime)])

    function_error, report = invoke(served, "Report")

    assert function_error is None
    assert ".".join(map(str, report["version"])) == runtime.removeprefix("python")
    assert report["boto3"] == BOTO3_PIN
    assert not report["has_yaml"]
    assert not report["has_powertools"]
    assert not report["executable"].startswith(sys.prefix)
    assert report["path"][0] == str(FUNCTIONS)  # the code first, as /var/task on AWS


def test_builds_are_made_once_and_reused_even_when_two_start_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = FunctionSpec("Report", "report_runtime.handler", FUNCTIONS, runtime="python3.12")
    if find_interpreter("3.12") is None:
        pytest.skip("python3.12 is not installed here")
    builds: list[Any] = []

    def resolve() -> None:
        builds.append(RuntimeResolver(RuntimeCache(tmp_path / "cache")).resolve([spec])["Report"])

    threads = [threading.Thread(target=resolve) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    first_output = capsys.readouterr().err
    started = time.monotonic()
    resolve()
    reuse_seconds = time.monotonic() - started

    assert first_output.count("building the Python 3.12") == 1
    assert len({build.root for build in builds}) == 1
    assert "building" not in capsys.readouterr().err
    assert reuse_seconds < 1.0
    assert sorted(
        path.name for path in (tmp_path / "cache").iterdir() if not path.name.endswith(".lock")
    ) == [builds[0].key]


def test_a_missing_interpreter_stops_the_start_naming_it_and_its_functions(
    serve_lambda: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither python3.13 on PATH ...
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))  # ... nor in pyenv
    functions = [
        FunctionSpec(name, "report_runtime.handler", FUNCTIONS, runtime="python3.13") for name in ("A", "B")
    ]

    with pytest.raises(RuntimeUnavailableError) as refused:
        serve_lambda(functions)

    assert "python3.13 is not installed" in str(refused.value)
    assert "needed by A, B" in str(refused.value)
    assert "--runtime-fallback" in str(refused.value)


def test_the_runtime_fallback_runs_on_the_local_clouds_own_python_and_says_so(
    serve_lambda: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    served = serve_lambda(
        [FunctionSpec("Report", "report_runtime.handler", FUNCTIONS, runtime="python3.13")],
        runtime_fallback=True,
    )
    monkeypatch.undo()

    function_error, report = invoke(served, "Report")

    assert function_error is None
    assert report["version"] == list(sys.version_info[:2])
    assert not report["has_yaml"]  # still only the function's build, not the tools' packages
    assert "python3.13 not found; Report run on Python" in capsys.readouterr().err


# -- which runtimes: Lambda's runtime table ---------------------------------------------------------------


@pytest.mark.slow  # a first run builds five runtime environments (about 20 s each); cached after that
def test_every_runtime_aws_creates_functions_on_runs_on_its_own_python(
    serve_lambda: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    runtimes = [f"python3.{minor}" for minor in range(9, 14)]
    installed = [runtime for runtime in runtimes if find_interpreter(runtime.removeprefix("python"))]
    if installed != runtimes:
        pytest.skip(f"not installed here: {sorted(set(runtimes) - set(installed))}")
    functions = [
        FunctionSpec(
            f"Report{runtime.replace('.', '')}", "report_runtime.handler", FUNCTIONS, runtime=runtime
        )
        for runtime in runtimes
    ]
    served = serve_lambda(functions)

    answers = {spec.runtime: invoke(served, spec.name) for spec in functions}

    for runtime, (function_error, report) in answers.items():
        assert function_error is None, report
        assert f"python{report['version'][0]}.{report['version'][1]}" == runtime
        assert report["boto3"] == BOTO3_PIN
    assert "python3.9 is deprecated on AWS since 2025-12-15" in capsys.readouterr().err


def test_a_supported_runtime_not_installed_here_names_what_to_install(
    serve_lambda: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # python3.14 neither on PATH (this machine has none) ...
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))  # ... nor in pyenv

    with pytest.raises(RuntimeUnavailableError) as refused:
        serve_lambda([FunctionSpec("Newest", "report_runtime.handler", FUNCTIONS, runtime="python3.14")])

    assert not isinstance(refused.value, RuntimeNotCreatableError)
    assert "python3.14 is not installed (not on PATH, not in pyenv); needed by Newest" in str(refused.value)
    assert "`pyenv install 3.14`" in str(refused.value)


def test_a_runtime_aws_no_longer_creates_functions_on_gets_create_functions_error(
    serve_lambda: Serve,
) -> None:
    functions = [
        FunctionSpec(name, "report_runtime.handler", FUNCTIONS, runtime="python3.8") for name in "BA"
    ]

    with pytest.raises(RuntimeNotCreatableError) as refused:
        serve_lambda(functions)

    assert refused.value.code == "InvalidParameterValueException"
    assert (
        "The runtime parameter of python3.8 is no longer supported for creating or updating AWS Lambda "
        "functions. We recommend you use a supported runtime while creating or updating functions."
    ) in str(refused.value)
    assert "CreateFunction of A, B" in str(refused.value)
    assert "--runtime-fallback" in str(refused.value)


def test_with_the_fallback_a_runtime_aws_refuses_runs_on_the_local_clouds_python_and_says_so(
    serve_lambda: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve_lambda(
        [FunctionSpec("Legacy", "report_runtime.handler", FUNCTIONS, runtime="python3.8")],
        runtime_fallback=True,
    )

    function_error, report = invoke(served, "Legacy")

    assert function_error is None
    assert report["version"] == list(sys.version_info[:2])
    assert not report["has_yaml"]
    assert (
        "python3.8 is no longer accepted by AWS's CreateFunction; Legacy run on Python "
        f"{'.'.join(map(str, sys.version_info[:3]))}"
    ) in capsys.readouterr().err


def test_a_name_lambda_has_no_runtime_for_is_refused(serve_lambda: Serve) -> None:
    with pytest.raises(RuntimeUnavailableError) as refused:
        serve_lambda([FunctionSpec("Future", "report_runtime.handler", FUNCTIONS, runtime="python3.99")])

    assert "runtime python3.99 of Future is not a Lambda runtime" in str(refused.value)


# -- layers in /opt ----------------------------------------------------------------------------------------


def _zip_layer(path: Path, files: dict[str, str]) -> Path:
    """A zip of ``files``; those under bin/ executable, as a layer's tools are."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            member = zipfile.ZipInfo(name)
            mode = 0o755 if name.startswith("bin/") else 0o644
            member.external_attr = (stat.S_IFREG | mode) << 16
            archive.writestr(member, text)
    return path


def _layered_template(folder: Path) -> Path:
    """A folder layer (SAM), a zip layer (CloudFormation) listed after it, and a published layer."""
    _zip_layer(
        folder / "zipped.zip",
        {
            "python/lib/python3.12/site-packages/zipped_pkg/__init__.py": 'GREETING = "hello from the zip"\n',
            "python/overridden.py": 'GREETING = "from the second layer"\n',
            "root_module.py": 'GREETING = "at the root of the zip"\n',
            "bin/layer-tool": "#!/bin/sh\necho from a layer\n",
        },
    )
    template = folder / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  SharedLayer:\n"
        "    Type: AWS::Serverless::LayerVersion\n"
        f"    Properties: {{LayerName: shared, ContentUri: {LAYERS / 'shared'}}}\n"
        "  ZippedLayer:\n"
        "    Type: AWS::Lambda::LayerVersion\n"
        "    Properties: {LayerName: zipped, Content: zipped.zip}\n"
        "  UsesLayers:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties:\n"
        "      FunctionName: UsesLayers\n"
        "      Runtime: python3.12\n"
        f"      CodeUri: {FUNCTIONS}\n"
        "      Handler: uses_layers.handler\n"
        f"      Layers: [!Ref SharedLayer, !Ref ZippedLayer, {PUBLISHED_LAYER}]\n"
    )
    return template


def test_a_functions_layers_are_merged_into_its_opt_in_order_and_import_as_on_aws(
    serve_lambda: Serve, tmp_path: Path
) -> None:
    stack = load_stack(_layered_template(tmp_path))
    served = serve_lambda(stack.functions)
    modules = ["layer_greeting", "zipped_pkg", "overridden", "root_module"]

    function_error, found = invoke(served, "UsesLayers", {"modules": modules, "which": "layer-tool"})

    assert function_error is None
    assert found["layer_greeting"]["greeting"] == "hello from the folder layer"
    assert found["layer_greeting"]["file"].endswith("/opt/python/layer_greeting.py")
    assert found["zipped_pkg"]["greeting"] == "hello from the zip"
    assert found["zipped_pkg"]["file"].endswith(
        "/opt/python/lib/python3.12/site-packages/zipped_pkg/__init__.py"
    )
    assert found["overridden"]["greeting"] == "from the second layer"  # the later layer's file wins
    opt = Path(found["layer_greeting"]["file"]).parent.parent
    assert (opt / "root_module.py").is_file()  # in /opt itself: not on the path, as on AWS
    assert found["root_module"] == {"error": "No module named 'root_module'"}
    assert found["which"] == str(opt / "bin" / "layer-tool")  # /opt/bin ends Lambda's PATH
    configuration = served.client().get_function(FunctionName="UsesLayers")["Configuration"]
    assert [layer["Arn"] for layer in configuration["Layers"]] == [
        "arn:aws:lambda:us-east-1:123456789012:layer:shared:1",
        "arn:aws:lambda:us-east-1:123456789012:layer:zipped:1",
    ]
    assert f"UsesLayers.Layers: {PUBLISHED_LAYER} is not defined in the template; not in its /opt" in (
        stack.not_honoured
    )


def test_an_error_raised_in_a_layer_names_its_file_under_opt(serve_lambda: Serve, tmp_path: Path) -> None:
    served = serve_lambda(load_stack(_layered_template(tmp_path)).functions)

    function_error, payload = invoke(served, "UsesLayers", {"modules": [], "fail_in": "layer_greeting"})

    assert function_error == "Unhandled"
    assert payload["errorMessage"] == "failed inside a layer"
    assert [frame.split(",")[0] for frame in payload["stackTrace"]] == [
        '  File "/var/task/uses_layers.py"',
        '  File "/opt/python/layer_greeting.py"',
    ]


def _layer_template(folder: Path, layer_properties: str, function_layers: str) -> Path:
    template = folder / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  TheLayer:\n"
        "    Type: AWS::Lambda::LayerVersion\n"
        f"    Properties: {layer_properties}\n"
        "  Fn:\n"
        "    Type: AWS::Serverless::Function\n"
        f"    Properties: {{Runtime: python3.12, CodeUri: {FUNCTIONS}, Handler: uses_layers.handler, "
        f"Layers: {function_layers}}}\n"
    )
    return template


@pytest.mark.parametrize(
    ("layer_properties", "function_layers", "refusal"),
    [
        (
            "{Content: {S3Bucket: b, S3Key: k}}",
            "[!Ref TheLayer]",
            "TheLayer: Content .* is in Amazon S3, which AWS would fetch",
        ),
        ("{Content: missing.zip}", "[!Ref TheLayer]", "TheLayer: layer content .*missing.zip does not exist"),
        (
            f"{{Content: {LAYERS / 'shared'}}}",
            "[!Ref TheLayer, !Ref TheLayer, !Ref TheLayer, !Ref TheLayer, !Ref TheLayer, !Ref TheLayer]",
            "Fn: 6 layers; Lambda allows 5",
        ),
    ],
    ids=["in-s3", "missing", "six-layers"],
)
def test_a_layer_the_local_cloud_cannot_lay_out_stops_the_deploy_naming_it(
    tmp_path: Path, layer_properties: str, function_layers: str, refusal: str
) -> None:
    template = _layer_template(tmp_path, layer_properties, function_layers)

    with pytest.raises(TemplateError, match=refusal):
        load_stack(template)


# -- a read-only task root ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fork_runtimes", [True, False], ids=["forked", "spawned"])
def test_the_task_root_and_opt_are_read_only_and_get_no_bytecode_while_tmp_is_writable(
    serve_lambda: Serve, code_copy: Path, fork_runtimes: bool
) -> None:
    if not read_only_supported():
        pytest.skip("neither root nor unprivileged user namespaces here: the task root stays writable")
    layer = LayerSpec("shared", "arn:aws:lambda:us-east-1:123456789012:layer:shared:1", LAYERS / "shared")
    spec = FunctionSpec("Writer", "task_root_writer.handler", code_copy, layers=(layer,))
    served = serve_lambda([spec], fork_runtimes=fork_runtimes)
    opt = served.service.backend.opt_dir_for(spec)  # type: ignore[attr-defined]
    assert opt is not None

    function_error, outcome = invoke(served, "Writer", {"layer_folder": str(opt / "python")})

    assert function_error is None
    assert outcome == {
        "task_root": "EROFS",  # errno 30, as on Lambda
        "tmp": "written",
        "layer_folder": "EROFS",
        "local_cloud_variables": [],  # the read-only folders were the runtime server's to know
    }
    assert not (code_copy / "written-by-handler.txt").exists()
    assert not list(code_copy.rglob("__pycache__"))  # the handler was imported: its bytecode went elsewhere
    # The host still writes there: the read-only view is the runtime's own.
    (code_copy / "from-the-host.txt").write_text("x")


# -- the init phase --------------------------------------------------------------------------------------


def slow_init(name: str, init_log: Path, *, init_seconds: float, timeout: int) -> FunctionSpec:
    environment = {"INIT_SECONDS": str(init_seconds), "INIT_LOG": str(init_log)}
    return FunctionSpec(
        name, "slow_init.handler", FUNCTIONS, timeout_seconds=timeout, environment=environment
    )


def inits(init_log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in init_log.read_text().splitlines()]


def test_init_has_its_own_clock_before_the_function_timeout(serve_lambda: Serve, tmp_path: Path) -> None:
    init_log = tmp_path / "inits.jsonl"
    served = serve_lambda([slow_init("SlowInit", init_log, init_seconds=4, timeout=3)])

    function_error, payload = invoke(served, "SlowInit")

    assert function_error is None  # a 4 s import against a 3 s timeout: the timeout starts after init
    assert payload["remaining_ms"] > 2000
    assert len(inits(init_log)) == 1


def test_an_init_past_the_limit_is_retried_in_the_invocation_on_the_function_timeout(
    serve_lambda: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environments_module, "INIT_PHASE_SECONDS", 1.0)  # AWS's 10 s, scaled down
    init_log = tmp_path / "inits.jsonl"
    served = serve_lambda(
        [
            slow_init("FitsTimeout", init_log, init_seconds=2, timeout=5),
            slow_init("PastTimeout", tmp_path / "past.jsonl", init_seconds=2, timeout=1),
        ]
    )

    fits_error, fits = invoke(served, "FitsTimeout")
    past_error, past = invoke(served, "PastTimeout")

    assert fits_error is None
    first, retried = inits(init_log)
    assert retried["pid"] == fits["pid"] != first["pid"]  # a fresh runtime, its init inside the invocation
    assert fits["remaining_ms"] < 5000 - 1500  # that init counted against the function timeout
    assert past_error == "Unhandled"
    assert past["errorType"] == "Sandbox.Timedout"
    assert past["errorMessage"].endswith("Task timed out after 1.00 seconds")


# -- unhandled errors ------------------------------------------------------------------------------------


def test_an_unhandled_errors_frames_are_under_var_task_without_the_local_clouds(serve_lambda: Serve) -> None:
    served = serve_lambda([FunctionSpec("Failing", "failing.handler", FUNCTIONS)])
    source = (FUNCTIONS / "failing.py").read_text().splitlines()

    def frame(code: str, function: str) -> str:
        line = next(number for number, text in enumerate(source, 1) if text.strip() == code)
        return f'  File "/var/task/failing.py", line {line}, in {function}\n    {code}\n'

    function_error, payload = invoke(served, "Failing", {"id": 7})

    assert function_error == "Unhandled"
    assert payload["errorType"] == "ValueError"
    assert payload["errorMessage"] == "order 7 has no items"
    assert payload["stackTrace"] == [
        frame("_check(event)", "handler"),
        frame("""raise ValueError(f"order {order.get('id')} has no items")""", "_check"),
    ]


# -- SIGTERM and Ctrl-C ------------------------------------------------------------------------------------


def _process_tree(root: int) -> set[int]:
    """``root``'s descendants, found through /proc (new sessions included: parents are parents)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _sleeper_template(folder: Path, runs: Path) -> Path:
    """A template of one function, Sleeper, that records each run in ``runs`` and sleeps as asked."""
    template = folder / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  Sleeper:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties:\n"
        "      FunctionName: Sleeper\n"
        "      Runtime: python3.12\n"
        f"      CodeUri: {FIXTURE_FUNCTIONS}\n"
        "      Handler: probe.handler\n"
        "      Timeout: 120\n"
        "      Environment:\n"
        f"        Variables: {{PROBE_RUN_LOG: {runs}}}\n"
    )
    return template


@pytest.fixture
def local_up(tmp_path: Path) -> Iterator[Callable[[], tuple[subprocess.Popen[str], str, Path]]]:
    """Factory: `orderbatch local up` on a free port serving one sleeping function.

    It returns the process, its endpoint and the file where the function records each run.
    """
    started: list[subprocess.Popen[str]] = []

    def start() -> tuple[subprocess.Popen[str], str, Path]:
        runs = tmp_path / "runs.jsonl"
        template = _sleeper_template(tmp_path, runs)
        command = [str(Path(sys.executable).with_name("orderbatch")), "local", "up", "--port", "0"]
        command += ["--template", str(template), "--no-seed", "--state-dir", str(tmp_path / "state")]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(process)
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"local cloud on (http://\S+)", line)
            if match:
                threading.Thread(target=process.stdout.read, daemon=True).start()  # keep the pipe drained
                return process, match[1], runs
        raise AssertionError(f"local up exited ({process.wait()}) without serving")

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_mid_invocation_leaves_no_runtime_stub_or_server_behind(
    local_up: Callable[[], tuple[subprocess.Popen[str], str, Path]], stop_signal: signal.Signals
) -> None:
    process, endpoint, runs = local_up()
    client = boto3.client(
        "lambda",
        endpoint_url=endpoint,
        region_name="us-east-1",
        **DUMMY_CREDENTIALS,
        config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(client.invoke(FunctionName="Sleeper", Payload=b'{"sleep": 60}'))
        except Exception as error:  # the local cloud goes away mid-call
            outcome.append(error)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    deadline = time.monotonic() + 60
    while not (runs.exists() and runs.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    runtime_pid = json.loads(runs.read_text().splitlines()[0])["pid"]
    tree = _process_tree(process.pid)
    commands = " ".join(_command_line(pid) for pid in tree)
    assert runtime_pid in tree  # the handler running now
    assert "runtime_forkserver.py" in commands
    assert WAIT_FOR_EXIT in commands  # the runtime's stub, waiting as a shell

    os.kill(process.pid, stop_signal)

    assert process.wait(timeout=30) == 0
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in tree if _alive(pid)] == []
    caller.join(timeout=30)
    assert outcome  # the caller got an answer or an error, not a hang


_WITH_LOCAL_CLOUD = """
import sys
from pathlib import Path

from sam_local_cloud.cloud import LocalCloud, LocalCloudConfig

config = LocalCloudConfig(template=Path(sys.argv[1]), state_dir=Path(sys.argv[2]), enforce_iam=False)
with LocalCloud(config) as cloud:
    print("serving", flush=True)
    cloud.client("lambda").invoke(FunctionName="Sleeper", Payload=b'{"sleep": 60}')
print("unreachable: the invocation sleeps past the signal", flush=True)
"""


def test_sigterm_to_a_program_inside_with_local_cloud_stops_every_environment(tmp_path: Path) -> None:
    # Given a program (as the demo, the bench and the soak are) running a local cloud in a `with` block,
    # its one function mid-invocation
    runs = tmp_path / "runs.jsonl"
    template = _sleeper_template(tmp_path, runs)
    program = subprocess.Popen(
        [sys.executable, "-c", _WITH_LOCAL_CLOUD, str(template), str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (runs.exists() and runs.read_text()) and time.monotonic() < deadline:
            assert program.poll() is None, program.stdout.read() if program.stdout else ""
            time.sleep(0.05)
        runtime_pid = json.loads(runs.read_text().splitlines()[0])["pid"]
        tree = _process_tree(program.pid)
        assert runtime_pid in tree
        assert WAIT_FOR_EXIT in " ".join(_command_line(pid) for pid in tree)

        # When it gets SIGTERM (what `kill`, systemd or a CI runner's timeout sends)
        program.send_signal(signal.SIGTERM)

        # Then it exits with 128 + 15 after stopping the local cloud: no stub, runtime or server is left
        output = program.communicate(timeout=60)[0]
        assert program.returncode == 128 + signal.SIGTERM, output
        assert "unreachable" not in output
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [_command_line(pid) for pid in tree if _alive(pid)] == []
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()


def test_the_runtime_client_reads_each_functions_log_format_as_on_aws(
    serve_lambda: Serve, tmp_path: Path
) -> None:
    # awslambdaric reads AWS_LAMBDA_LOG_FORMAT when its bootstrap is imported: runtimes forked from a warm
    # interpreter must import it with their own function's environment, not the server's.
    (tmp_path / "logs.py").write_text(
        "import logging\n\ndef handler(event, context):\n    logging.getLogger().warning('order 42 held')\n"
        "    return 'logged'\n"
    )
    served = serve_lambda(
        [
            FunctionSpec("JsonLogs", "logs.handler", tmp_path, environment={"AWS_LAMBDA_LOG_FORMAT": "JSON"}),
            FunctionSpec("TextLogs", "logs.handler", tmp_path),
        ]
    )

    def logged_line(name: str) -> str:
        response = served.client().invoke(FunctionName=name, LogType="Tail", Payload=b"{}")
        tail = base64.b64decode(response["LogResult"]).decode()
        return next(line for line in tail.splitlines() if "order 42 held" in line)

    assert json.loads(logged_line("JsonLogs"))["message"] == "order 42 held"
    assert logged_line("TextLogs").startswith("[WARNING]")


# -- the Runtime API the service serves: what the handler's context and the log stream show ---------


def test_the_handler_sees_the_invokes_request_id_and_its_functions_arn_and_the_log_has_lambdas_lines(
    serve_lambda: Serve, tmp_path: Path
) -> None:
    (tmp_path / "context.py").write_text(
        "import os\n\ndef handler(event, context):\n    print('handling', context.aws_request_id)\n"
        "    return {'request_id': context.aws_request_id, 'arn': context.invoked_function_arn,\n"
        "            'remaining_ms': context.get_remaining_time_in_millis(),\n"
        "            'handler': os.environ['_HANDLER'], 'api': os.environ['AWS_LAMBDA_RUNTIME_API']}\n"
    )
    served = serve_lambda([FunctionSpec("Context", "context.handler", tmp_path, timeout_seconds=7)])

    tails, answers = [], []
    for _ in range(2):
        response = served.client().invoke(FunctionName="Context", LogType="Tail", Payload=b"{}")
        answers.append((response["ResponseMetadata"]["RequestId"], json.loads(response["Payload"].read())))
        tails.append(base64.b64decode(response["LogResult"]).decode().splitlines())

    for (request_id, seen), tail in zip(answers, tails, strict=True):
        assert seen["request_id"] == request_id  # one ID, as on AWS: the Invoke's is the context's
        assert seen["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:Context"
        assert 6000 < seen["remaining_ms"] <= 7000
        assert seen["handler"] == "context.handler"
        assert seen["api"].startswith("127.0.0.1:")
        assert tail[0] == f"START RequestId: {request_id} Version: $LATEST"
        assert tail[1] == f"handling {request_id}"
        assert tail[2] == f"END RequestId: {request_id}"
        assert re.fullmatch(
            rf"REPORT RequestId: {request_id}\tDuration: \d+\.\d\d ms\tBilled Duration: \d+ ms\t"
            r"Memory Size: 128 MB\tMax Memory Used: 128 MB\t(Init Duration: \d+\.\d\d ms\t)?",
            tail[3],
        )
    # Lambda reports the init phase once, with the environment's first invocation.
    assert "Init Duration: " in tails[0][3]
    assert "Init Duration: " not in tails[1][3]


def test_a_timeout_is_logged_as_lambda_logs_it(serve_lambda: Serve, tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text("import time\n\ndef handler(event, context):\n    time.sleep(30)\n")
    served = serve_lambda([FunctionSpec("Slow", "slow.handler", tmp_path, timeout_seconds=1)])

    response = served.client().invoke(FunctionName="Slow", LogType="Tail", Payload=b"{}")
    request_id = response["ResponseMetadata"]["RequestId"]
    tail = base64.b64decode(response["LogResult"]).decode().splitlines()

    assert json.loads(response["Payload"].read()) == {
        "errorType": "Sandbox.Timedout",
        "errorMessage": f"RequestId: {request_id} Error: Task timed out after 1.00 seconds",
    }
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{3}}Z {request_id} Task timed out after 1.00 seconds", tail[1]
    )
    assert tail[2] == f"END RequestId: {request_id}"
    assert tail[3].startswith(f"REPORT RequestId: {request_id}\tDuration: 100")
    assert tail[3].endswith("Status: timeout\t")
