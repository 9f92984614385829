"""Deploy one app with `orderbatch local up` in a process of its own, run it as its README says, compare.

Each app gets its own local cloud process (moto keeps its state per process, and an app that crashes the
cloud must not take the next one with it), on a free loopback port, with a state folder of its own. What
the app's README has you do first (objects in a bucket, items in a table) is done with boto3 as your own
(administrator) credentials; the execution is started as a user would start it and read back with
DescribeExecution (StartSyncExecution for an Express machine).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from orderbatch.compat.manifest import CompatApp, Invocation, ResourceRef
from orderbatch.compat.sources import SourceUnavailableError, export_app
from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.cli import API_PATH_PREFIX, HEALTH_PATH, RUNTIME_NOT_INSTALLED
from sam_local_cloud.executions import execution_history

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef

    from sam_local_cloud.stack import LocalStack, StateMachineSpec

# Apps are run on the quota an AWS account has by default (1,000 concurrent executions), not a new
# account's 10: a README that reserves concurrency for its functions assumes the default.
ACCOUNT_CONCURRENCY = 1000
DEPLOY_TIMEOUT_SECONDS = 300.0  # first use of a runtime builds it (pip install of its requirements)
RUN_TIMEOUT_SECONDS = 180.0
REGION = "us-east-1"


# Stages at which an app was not judged: its clone is missing, or this machine lacks its runtime's Python.
NOT_JUDGED = ("source", "interpreter")


@dataclass
class AppResult:
    id: str
    deployed: bool
    ended_as_readme: bool
    # source | interpreter | deploy | setup | run | compare | passed | aws-refused (refused here as AWS
    # refuses it: the README's outcome cannot happen on AWS either)
    stage: str
    cause: str
    seconds: float
    status: str | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class _AppFailedError(Exception):
    def __init__(self, stage: str, cause: str) -> None:
        super().__init__(cause)
        self.stage = stage
        self.cause = cause


def run_app(
    app: CompatApp,
    *,
    sources: Path | None,
    local_root: Path,
    deploy_timeout: float = DEPLOY_TIMEOUT_SECONDS,
    run_timeout: float = RUN_TIMEOUT_SECONDS,
    extra_up_args: tuple[str, ...] = (),
) -> AppResult:
    started = time.monotonic()
    deployed = False
    status: str | None = None
    with tempfile.TemporaryDirectory(prefix=f"compat-{app.id.replace('/', '-')}-") as scratch:
        workdir = Path(scratch)
        try:
            try:
                app_dir = export_app(app, sources, local_root, workdir)
            except (SourceUnavailableError, OSError) as missing:
                raise _AppFailedError("source", str(missing)) from missing
            cloud = _LocalUp(app_dir / app.template, app, workdir, extra_up_args)
            try:
                cloud.wait_deployed(deploy_timeout)
                deployed = True
                _set_up(app, app_dir, cloud)
                status = _run_and_compare(app, app_dir, cloud, app.timeout_seconds or run_timeout)
            finally:
                cloud.stop()
        except _AppFailedError as failure:
            return _failed(app, failure, deployed, time.monotonic() - started, status)
    if app.aws_refusal is not None:
        cause = f"AWS refuses this app ({app.aws_refusal.why}), yet the local cloud ran it as its README says"
        return AppResult(app.id, True, False, "compare", cause, time.monotonic() - started, status)
    return AppResult(app.id, True, True, "passed", "", time.monotonic() - started, status)


def _failed(
    app: CompatApp, failure: _AppFailedError, deployed: bool, seconds: float, status: str | None
) -> AppResult:
    """A failure where AWS refuses the app too, at the same stage for the same reason, counts apart."""
    refusal = app.aws_refusal
    if refusal is not None and failure.stage == refusal.stage and re.search(refusal.cause, failure.cause):
        cause = f"refused as AWS refuses it: {refusal.why}"
        return AppResult(app.id, deployed, False, "aws-refused", cause, seconds, status)
    if failure.stage == "deploy" and RUNTIME_NOT_INSTALLED in failure.cause:
        return AppResult(app.id, False, False, "interpreter", failure.cause, seconds, status)
    return AppResult(app.id, deployed, False, failure.stage, failure.cause, seconds, status)


class _LocalUp:
    def __init__(self, template: Path, app: CompatApp, workdir: Path, extra_args: tuple[str, ...]) -> None:
        if not template.is_file():
            raise _AppFailedError("source", f"no template at {app.path}/{app.template}")
        self.template = template
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "local-up.log"
        command = [
            sys.executable, "-m", "orderbatch.cli", "local", "up",
            "--template", str(template),
            "--port", str(self.port),
            "--state-dir", str(workdir / "state"),
            "--no-seed",
            "--account-concurrency", str(ACCOUNT_CONCURRENCY),
            *extra_args,
        ]  # fmt: skip
        if app.parameter_overrides:
            command += ["--parameter-overrides", *(f"{k}={v}" for k, v in app.parameter_overrides.items())]
        environment = {**os.environ, "SAM_CLI_TELEMETRY": "0", "PYTHONUNBUFFERED": "1"}
        for variable in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
            environment.pop(variable, None)
        self._log_file = self.log.open("wb")
        self.process = subprocess.Popen(
            command,
            cwd=template.parent,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
        self.stack: LocalStack | None = None

    def wait_deployed(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise _AppFailedError("deploy", _deploy_error(self.log.read_text(errors="replace")))
            try:
                with urllib.request.urlopen(self.endpoint + HEALTH_PATH, timeout=2) as answer:
                    if json.loads(answer.read()).get("status") == "deployed":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.5)
        raise _AppFailedError("deploy", f"not deployed after {timeout:.0f} s")

    def client(self, service: str) -> Any:
        return boto3.client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.endpoint,
            region_name=REGION,
            **DUMMY_CREDENTIALS,
            config=Config(retries={"total_max_attempts": 2, "mode": "standard"}, inject_host_prefix=False),
        )

    def loaded_stack(self, app: CompatApp) -> LocalStack:
        if self.stack is None:
            from sam_local_cloud.stack import load_stack

            self.stack = load_stack(self.template, parameter_overrides=app.parameter_overrides)
        return self.stack

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log_file.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _deploy_error(log: str) -> str:
    """The line that says why `local up` stopped: its last error line, else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line or "Exception" in line or "refused" in line:
            return line[:400]
    return lines[-1][:400] if lines else "local up exited without a word"


def _physical(ref: ResourceRef, cloud: _LocalUp, app: CompatApp, kind: str) -> str:
    if ref.name:
        return ref.name
    stack = cloud.loaded_stack(app)
    if kind == "bucket":
        if ref.ref in stack.buckets:
            return str(stack.buckets[ref.ref])
    elif kind == "table":
        found = [t.name for t in stack.tables if t.logical_id == ref.ref]
        if found:
            return found[0]
    raise _AppFailedError("setup", f"no {kind} {ref.ref!r} in the deployed stack")


def _set_up(app: CompatApp, app_dir: Path, cloud: _LocalUp) -> None:
    try:
        if app.s3_objects:
            s3 = cloud.client("s3")
            # Buckets the README has you create yourself, outside the stack.
            for name in sorted({obj.bucket.name for obj in app.s3_objects if obj.bucket.name}):
                s3.create_bucket(Bucket=name)
            for obj in app.s3_objects:
                body = obj.body
                if body.startswith(b"$file:"):
                    body = (app_dir / body[len(b"$file:") :].decode()).read_bytes()
                s3.put_object(Bucket=_physical(obj.bucket, cloud, app, "bucket"), Key=obj.key, Body=body)
        if app.table_items:
            dynamodb = boto3.resource(
                "dynamodb", endpoint_url=cloud.endpoint, region_name=REGION, **DUMMY_CREDENTIALS
            )
            for entry in app.table_items:
                item = json.loads(json.dumps(entry.item), parse_float=_decimal)
                dynamodb.Table(_physical(entry.table, cloud, app, "table")).put_item(Item=item)
    except _AppFailedError:
        raise
    except Exception as error:  # any client error is the app's setup failing, reported with its text
        raise _AppFailedError("setup", f"{type(error).__name__}: {error}") from error


def _decimal(text: str) -> Decimal:
    return Decimal(text)


def _run_and_compare(app: CompatApp, app_dir: Path, cloud: _LocalUp, timeout: float) -> str:
    if app.http is not None:
        return _run_http(app, cloud, timeout)
    stack = cloud.loaded_stack(app)
    machine = _state_machine(app, stack)
    payload = app.input
    if isinstance(payload, dict) and set(payload) == {"$file"}:
        payload = json.loads((app_dir / payload["$file"]).read_text())
    for dotted, source in app.input_refs.items():
        payload = _with_value(payload, dotted, _stack_value(source, cloud, app))
    sfn = cloud.client("stepfunctions")
    try:
        if machine.type == "EXPRESS":
            if app.after_start or app.expect.entered:
                raise _AppFailedError("run", "after_start and expect.entered need a Standard state machine")
            answer = sfn.start_sync_execution(stateMachineArn=machine.arn, input=json.dumps(payload))
            description = answer
        else:
            deadline = time.monotonic() + timeout
            arn = sfn.start_execution(stateMachineArn=machine.arn, input=json.dumps(payload))["executionArn"]
            for step in app.after_start:
                _invoke_after_start(step, sfn, arn, cloud, app, deadline)
            description = _wait_for_end(sfn, arn, max(deadline - time.monotonic(), 1.0))
    except _AppFailedError:
        raise
    except Exception as error:
        raise _AppFailedError("run", f"{type(error).__name__}: {error}") from error
    _compare(app, description)
    if app.expect.entered:
        _compare_entered(app, _entered_states(sfn, description["executionArn"]))
    return str(description["status"])


def _invoke_after_start(
    step: Invocation, sfn: SFNClient, arn: str, cloud: _LocalUp, app: CompatApp, deadline: float
) -> None:
    """Invoke the function as the README has you do once the execution runs, and wait for its answer."""
    if step.when_entered:
        while step.when_entered not in _entered_states(sfn, arn):
            if sfn.describe_execution(executionArn=arn)["status"] != "RUNNING":
                raise _AppFailedError("run", f"ended before entering {step.when_entered!r}")
            if time.monotonic() > deadline:
                raise _AppFailedError("run", f"never entered {step.when_entered!r}; {_last_events(sfn, arn)}")
            time.sleep(0.5)
    answer = cloud.client("lambda").invoke(
        FunctionName=_function_name(step.function, cloud, app), Payload=json.dumps(step.payload).encode()
    )
    if answer.get("FunctionError"):
        text = answer["Payload"].read().decode(errors="replace")
        raise _AppFailedError("run", f"invoking {step.function} failed: {text[:300]}")


def _function_name(logical_id: str, cloud: _LocalUp, app: CompatApp) -> str:
    """The deployed name of a function: its FunctionName where the template gives one, else its logical ID."""
    stack = cloud.loaded_stack(app)
    deployed = {function.name for function in stack.functions}
    if logical_id in deployed:
        return logical_id
    resource = (stack.template.get("Resources") or {}).get(logical_id) or {}
    named = (resource.get("Properties") or {}).get("FunctionName")
    if isinstance(named, str) and named in deployed:
        return named
    raise _AppFailedError("run", f"no function {logical_id!r} in the deployed stack")


def _entered_states(sfn: SFNClient, arn: str) -> set[str]:
    return {
        event["stateEnteredEventDetails"]["name"]
        for event in execution_history(sfn, arn)
        if event["type"].endswith("StateEntered")
    }


def _compare_entered(app: CompatApp, entered: set[str]) -> None:
    missing = [name for name in app.expect.entered if name not in entered]
    if missing:
        raise _AppFailedError("compare", f"never entered {', '.join(repr(n) for n in missing)}")


def _stack_value(source: dict[str, str], cloud: _LocalUp, app: CompatApp) -> object:
    stack = cloud.loaded_stack(app)
    if "output" in source:
        if source["output"] not in stack.outputs:
            raise _AppFailedError("run", f"the stack has no output {source['output']!r}")
        return stack.outputs[source["output"]]
    ref = ResourceRef(ref=source.get("ref"))
    try:
        return _physical(ref, cloud, app, "bucket")
    except _AppFailedError:
        return _physical(ref, cloud, app, "table")


def _with_value(payload: object, dotted: str, value: object) -> object:
    target = payload
    *parents, last = dotted.split(".")
    for key in parents:
        if not isinstance(target, dict):
            raise _AppFailedError("run", f"the input has no object to set {dotted!r} in")
        target = target.setdefault(key, {})
    if not isinstance(target, dict):
        raise _AppFailedError("run", f"the input has no object to set {dotted!r} in")
    target[last] = value
    return payload


def _state_machine(app: CompatApp, stack: LocalStack) -> StateMachineSpec:
    if app.state_machine:
        found = [sm for sm in stack.state_machines if sm.logical_id == app.state_machine]
        if found:
            return found[0]
        raise _AppFailedError("run", f"no state machine {app.state_machine!r} in the stack")
    arn = stack.outputs.get(app.state_machine_output or "")
    found = [sm for sm in stack.state_machines if sm.arn == arn]
    if not found:
        raise _AppFailedError(
            "run", f"output {app.state_machine_output!r} names no state machine of the stack"
        )
    return found[0]


def _wait_for_end(sfn: SFNClient, arn: str, timeout: float) -> DescribeExecutionOutputTypeDef:
    deadline = time.monotonic() + timeout
    while True:
        description = sfn.describe_execution(executionArn=arn)
        if description["status"] != "RUNNING":
            return description
        if time.monotonic() > deadline:
            raise _AppFailedError("run", f"still RUNNING after {timeout:.0f} s; {_last_events(sfn, arn)}")
        time.sleep(0.5)


def _last_events(sfn: SFNClient, arn: str) -> str:
    """The newest history events, which say where a stuck execution waits."""
    try:
        events = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=3)["events"]
    except Exception as error:  # the history is a diagnosis only; its absence must not hide the failure
        return f"history unavailable ({type(error).__name__})"
    described = []
    for event in events:
        details: Mapping[str, object] = next(
            (v for k, v in event.items() if k.endswith("EventDetails") and isinstance(v, Mapping)), {}
        )
        name = details.get("name") or details.get("resource") or ""
        described.append(f"{event['type']} {name}".strip())
    return "last events: " + ", ".join(described)


def _compare(app: CompatApp, description: Mapping[str, object]) -> None:
    expected = app.expect
    status = description.get("status")
    if status != expected.status:
        detail = ""
        if status in ("FAILED", "TIMED_OUT", "ABORTED"):
            detail = f": {description.get('error')}: {str(description.get('cause') or '')[:1000]}"
        raise _AppFailedError("compare", f"ended {status}, README says {expected.status}{detail}")
    if expected.error and description.get("error") != expected.error:
        raise _AppFailedError(
            "compare", f"error {description.get('error')!r}, README says {expected.error!r}"
        )
    if expected.output is not None:
        output = json.loads(str(description.get("output") or "null"))
        missing = _not_contained(expected.output, output)
        if missing:
            raise _AppFailedError("compare", f"output differs at {missing}: {json.dumps(output)[:300]}")


def _not_contained(expected: object, actual: object, path: str = "$") -> str | None:
    """The first path where ``expected`` is not part of ``actual`` (dicts by subset, the rest equal)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return path
        for key, value in expected.items():
            if key not in actual:
                return f"{path}.{key}"
            found = _not_contained(value, actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    return None if expected == actual else path


def _run_http(app: CompatApp, cloud: _LocalUp, timeout: float) -> str:
    assert app.http is not None
    stack = cloud.loaded_stack(app)
    api_ids = sorted(
        {route.api_logical_id.lower() for route in stack.routes}
        | {route.api_logical_id.lower() for route in stack.service_routes}
    )
    if app.http.api:
        api_ids = [app.http.api.lower()]
    if not api_ids:
        raise _AppFailedError("run", "the stack has no API route the local cloud serves")
    url = f"{cloud.endpoint}{API_PATH_PREFIX}{api_ids[0]}{app.http.path}"
    body = None if app.http.body is None else json.dumps(app.http.body).encode()
    request = AWSRequest(
        method=app.http.method, url=url, data=body, headers={"Content-Type": "application/json"}
    )
    credentials = Credentials(
        DUMMY_CREDENTIALS["aws_access_key_id"], DUMMY_CREDENTIALS["aws_secret_access_key"]
    )
    SigV4Auth(credentials, "execute-api", REGION).add_auth(request)
    prepared = urllib.request.Request(url, data=body, method=app.http.method, headers=dict(request.headers))
    try:
        with urllib.request.urlopen(prepared, timeout=timeout) as answer:
            status, text = answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read().decode(errors="replace")
    except OSError as error:
        raise _AppFailedError("run", f"HTTP {app.http.method} {app.http.path}: {error}") from error
    wanted = app.expect.http_status or 200
    if status != wanted:
        raise _AppFailedError("compare", f"HTTP {status}, README says {wanted}: {text[:300]}")
    if app.expect.output is not None:
        missing = _not_contained(app.expect.output, json.loads(text or "null"))
        if missing:
            raise _AppFailedError("compare", f"response differs at {missing}: {text[:300]}")
    return f"HTTP {status}"
