"""A pytest plugin that runs LocalStack's Step Functions tests without LocalStack or AWS, recording them.

Loaded by extract.py (``pytest -p localstack_shim``) inside an export of LocalStack's test tree. Every
``localstack.*`` import is served by stand-ins: the clients and fixtures a test uses record what it does
(state machines created, executions started with which input, Lambda functions and their handler files,
S3 objects put, snapshot keys matched and the transformers added) instead of calling anything. Each
answer the fake Step Functions client gives carries a marker naming its execution, so a snapshot key the
test matched can be traced back to the execution it describes. The test's own code builds the
definitions and inputs, so nothing is copied by hand and parametrised tests expand exactly as they did
when AWS was recorded.

The record is written as JSON to the file named by CONFORMANCE_RECORD_OUT when the session ends.
"""

from __future__ import annotations

import datetime
import importlib.abc
import importlib.machinery
import itertools
import json
import os
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
EXECUTION_MARKER = "__conformance_execution__"
KIND_MARKER = "__conformance_kind__"
OUTPUT_SENTINEL = "__conformance_output_{}__"


class UnsupportedError(Exception):
    """The test needs something the recording cannot give (a callback, a mock config, another service)."""


# ---------------------------------------------------------------------------------------------- records
@dataclass
class ExecutionRecord:
    id: int
    state_machine_name: str
    state_machine_type: str
    definition: str
    input: str
    api: str
    execution_name: str | None = None


@dataclass
class TestRecord:
    nodeid: str
    aws_markers: list[str] = field(default_factory=list)
    executions: list[ExecutionRecord] = field(default_factory=list)
    functions: dict[str, dict[str, Any]] = field(default_factory=dict)
    s3_setup: list[dict[str, Any]] = field(default_factory=list)
    dynamodb_tables: list[dict[str, str]] = field(default_factory=list)
    matches: list[dict[str, Any]] = field(default_factory=list)
    regex_transformers: list[list[str]] = field(default_factory=list)
    jsonpath_transformers: list[dict[str, Any]] = field(default_factory=list)
    parallel_events_normalised: bool = False
    state_machines: dict[str, dict[str, str]] = field(default_factory=dict)
    services: list[str] = field(default_factory=list)
    sfn_calls: list[str] = field(default_factory=list)
    error: str | None = None


class Recorder:
    def __init__(self) -> None:
        self.tests: dict[str, TestRecord] = {}
        self.collection_errors: dict[str, str] = {}
        self.current: TestRecord | None = None
        self._execution_ids = itertools.count(1)
        self.state_machines: dict[str, dict[str, str]] = {}

    def begin(self, nodeid: str, markers: list[str]) -> None:
        self.current = self.tests[nodeid] = TestRecord(nodeid=nodeid, aws_markers=markers)

    @property
    def test(self) -> TestRecord:
        if self.current is None:
            raise UnsupportedError("called outside a test")
        return self.current

    def next_execution_id(self) -> int:
        return next(self._execution_ids)

    def uses_service(self, name: str) -> None:
        if name not in self.test.services:
            self.test.services.append(name)

    def dump(self, path: Path) -> None:
        data = {
            "tests": {nodeid: asdict(record) for nodeid, record in self.tests.items()},
            "collection_errors": self.collection_errors,
        }
        path.write_text(json.dumps(data, indent=1, default=str))


RECORDER = Recorder()
_UIDS = itertools.count(1)


def short_uid() -> str:
    """Deterministic, so a regenerated suite names its functions and buckets the same way."""
    return f"{next(_UIDS):08x}"


def long_uid() -> str:
    return f"{next(_UIDS):032x}"


# ---------------------------------------------------------------------------------------------- stand-ins
class Anything:
    """Answers every attribute, call, item and iteration; a decorator when called with one callable."""

    def __init__(self, name: str = "anything") -> None:
        self._name = name

    def __getattr__(self, name: str) -> Anything:
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Anything):
            return args[0]
        return Anything(f"{self._name}()")

    def __getitem__(self, key: Any) -> Anything:
        return Anything(f"{self._name}[{key!r}]")

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __str__(self) -> str:
        return f"<{self._name}>"

    def __or__(self, other: Any) -> Anything:
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _Mark:
    """``markers.aws.validated`` and friends: remembers the marker's name on what it decorates."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> _Mark:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Mark(f"{self._path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            target = args[0]
            marks = list(getattr(target, "_conformance_marks", []))
            target._conformance_marks = [*marks, self._path]
            return target
        return self


class _ApiShapes:
    """``StateMachineType.EXPRESS`` is "EXPRESS", ``Runtime.python3_12`` "python3.12", shapes are dicts."""

    def __init__(self, name: str, runtime_names: bool = False) -> None:
        self._name = name
        self._runtime_names = runtime_names

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        return name.replace("_", ".") if self._runtime_names else name

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(*args, **kwargs)

    def __or__(self, other: Any) -> Any:
        return Anything(self._name)

    __ror__ = __or__


class RegexTransformer:
    def __init__(self, regex: Any, replacement: Any = "", *args: Any, **kwargs: Any) -> None:
        self.regex = regex if isinstance(regex, str) else getattr(regex, "pattern", str(regex))
        self.replacement = str(replacement)


class JsonpathTransformer:
    def __init__(self, jsonpath: str, replacement: str, replace_reference: bool = True, **_: Any) -> None:
        self.jsonpath = jsonpath
        self.replacement = replacement
        self.replace_reference = replace_reference


class _Transforms(Anything):
    """``snapshot.transform``: its ``regex`` is a RegexTransformer worth recording, the rest shape ARNs."""

    def regex(self, regex: Any, replacement: Any) -> RegexTransformer:
        return RegexTransformer(regex, replacement)


class _Snapshot:
    """The ``sfn_snapshot`` fixture: records matched keys and the transformers that give their shape."""

    transform = _Transforms("snapshot.transform")

    def add_transformer(self, transformer: Any, *args: Any, **kwargs: Any) -> None:
        for each in transformer if isinstance(transformer, list) else [transformer]:
            if isinstance(each, RegexTransformer):
                RECORDER.test.regex_transformers.append([each.regex, each.replacement])
            elif isinstance(each, SfnNoneRecursiveParallelTransformer):
                RECORDER.test.parallel_events_normalised = True
            elif isinstance(each, JsonpathTransformer):
                RECORDER.test.jsonpath_transformers.append(
                    {
                        "jsonpath": each.jsonpath,
                        "replacement": each.replacement,
                        "replace_reference": each.replace_reference,
                    }
                )

    def add_transformers_list(self, transformers: Any) -> None:
        self.add_transformer(list(transformers) if not isinstance(transformers, Anything) else [])

    def match(self, key: str, value: Any) -> None:
        RECORDER.test.matches.append({"key": key, "refs": list(_execution_refs(value, []))})


def _execution_refs(value: Any, path: list[Any]) -> Iterator[dict[str, Any]]:
    """Where in a matched value the fake client's answers ended up: (execution, kind, path)."""
    if isinstance(value, dict):
        if EXECUTION_MARKER in value and value.get(KIND_MARKER) != "event":
            yield {"execution": value[EXECUTION_MARKER], "kind": value[KIND_MARKER], "path": path}
            return
        for key, item in value.items():
            yield from _execution_refs(item, [*path, key])
    elif isinstance(value, list | tuple):
        events = [e for e in value if isinstance(e, dict) and e.get(KIND_MARKER) == "event"]
        if events and len(events) == len(value):
            yield {"execution": events[0][EXECUTION_MARKER], "kind": "events", "path": path}
            return
        for index, item in enumerate(value):
            yield from _execution_refs(item, [*path, index])
    elif isinstance(value, str):
        match = re.fullmatch(r'("?)__conformance_output_(\d+)__\1', value)
        if match:
            kind = "output" if match.group(1) else "output_parsed"
            yield {"execution": int(match.group(2)), "kind": kind, "path": path}


# ---------------------------------------------------------------------------------------------- clients
def _execution_arn(state_machine_name: str, execution_name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT_ID}:execution:{state_machine_name}:{execution_name}"


class FakeStepFunctions:
    def __init__(self) -> None:
        self.exceptions = Anything("stepfunctions.exceptions")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            RECORDER.test.sfn_calls.append(name)
            return Anything(f"stepfunctions.{name}()")

        return call

    def create_state_machine(self, name: str, definition: str, roleArn: str = "", **kwargs: Any) -> Any:  # noqa: N803
        arn = f"arn:aws:states:{REGION}:{ACCOUNT_ID}:stateMachine:{name}"
        machine = {"name": name, "definition": definition, "type": str(kwargs.get("type") or "STANDARD")}
        RECORDER.state_machines[arn] = RECORDER.test.state_machines[name] = machine
        return {"stateMachineArn": arn, "creationDate": "datetime"}

    def _start(self, api: str, stateMachineArn: str, input: str | None, name: str | None) -> ExecutionRecord:  # noqa: N803
        if "#" in stateMachineArn:
            raise UnsupportedError("runs a Step Functions Local mock test case")
        machine = RECORDER.state_machines.get(stateMachineArn)
        if machine is None:
            raise UnsupportedError("starts an execution of a state machine version or alias")
        record = ExecutionRecord(
            id=RECORDER.next_execution_id(),
            state_machine_name=machine["name"],
            state_machine_type=machine["type"],
            definition=machine["definition"],
            input=input if input is not None else "{}",
            api=api,
            execution_name=name,
        )
        RECORDER.test.executions.append(record)
        return record

    def start_execution(
        self,
        stateMachineArn: str,  # noqa: N803
        input: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        record = self._start("start_execution", stateMachineArn, input, name)
        arn = _execution_arn(record.state_machine_name, f"{record.id}")
        _ARNS[arn] = record.id
        return {"executionArn": arn, "startDate": "datetime"}

    def start_sync_execution(
        self,
        stateMachineArn: str,  # noqa: N803
        input: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        record = self._start("start_sync_execution", stateMachineArn, input, name)
        arn = _execution_arn(record.state_machine_name, f"{record.id}")
        _ARNS[arn] = record.id
        return {
            EXECUTION_MARKER: record.id,
            KIND_MARKER: "sync",
            "executionArn": arn,
            "status": "SUCCEEDED",
            "output": json.dumps(OUTPUT_SENTINEL.format(record.id)),
        }

    def describe_execution(self, executionArn: str, **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        execution = _execution_of(executionArn)
        return {
            EXECUTION_MARKER: execution,
            KIND_MARKER: "describe",
            "executionArn": executionArn,
            "status": "SUCCEEDED",
            "output": json.dumps(OUTPUT_SENTINEL.format(execution)),
        }

    def get_execution_history(self, executionArn: str, **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        execution = _execution_of(executionArn)
        return {EXECUTION_MARKER: execution, KIND_MARKER: "history", "events": _fake_events(execution)}


_ARNS: dict[str, int] = {}


def _execution_of(execution_arn: str) -> int:
    if execution_arn not in _ARNS:
        raise UnsupportedError("describes an execution it did not start here")
    return _ARNS[execution_arn]


def _fake_events(execution: int) -> list[dict[str, Any]]:
    output = json.dumps(OUTPUT_SENTINEL.format(execution))
    return [
        {
            EXECUTION_MARKER: execution,
            KIND_MARKER: "event",
            "id": 1,
            "previousEventId": 0,
            "type": "ExecutionStarted",
            "executionStartedEventDetails": {"input": "{}"},
        },
        {
            EXECUTION_MARKER: execution,
            KIND_MARKER: "event",
            "id": 2,
            "previousEventId": 1,
            "type": "ExecutionSucceeded",
            "executionSucceededEventDetails": {"output": output},
        },
    ]


class FakeS3:
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything(f"s3.{name}")

    def create_bucket(self, Bucket: str, **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        RECORDER.test.s3_setup.append({"call": "create_bucket", "bucket": Bucket})
        return {"Location": f"/{Bucket}"}

    def put_object(self, Bucket: str, Key: str, Body: Any = b"", **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        body = (
            Body
            if isinstance(Body, str)
            else bytes(Body if isinstance(Body, bytes | bytearray) else Body.read())
        )
        if isinstance(body, bytes):
            body = body.decode()
        RECORDER.test.s3_setup.append({"call": "put_object", "bucket": Bucket, "key": Key, "body": body})
        return {"ETag": '"etag"'}


class _OtherService:
    """A client of a service the recording does not replay: calling it marks the test as needing it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, method: str) -> Any:
        if method.startswith("__"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Anything:
            RECORDER.uses_service(self._name)
            return Anything(f"{self._name}.{method}()")

        return call


class FakeAwsClient:
    def __init__(self) -> None:
        self.stepfunctions = FakeStepFunctions()
        self.s3 = FakeS3()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _OtherService(name)


# ---------------------------------------------------------------------------------------------- helpers
def create_state_machine_with_iam_role(
    target_aws_client: Any,
    create_state_machine_iam_role: Callable[..., str],
    create_state_machine: Callable[..., dict[str, Any]],
    snapshot: Any,
    definition: str,
    logging_configuration: Any = None,
    state_machine_name: str | None = None,
    state_machine_type: str = "STANDARD",
) -> str:
    role_arn = create_state_machine_iam_role(target_aws_client=target_aws_client)
    arguments: dict[str, Any] = {
        "name": state_machine_name or f"statemachine_create_and_record_execution_{short_uid()}",
        "definition": definition,
        "roleArn": role_arn,
        "type": state_machine_type,
    }
    if logging_configuration is not None:
        raise UnsupportedError("records the execution's CloudWatch logs")
    return str(create_state_machine(target_aws_client, **arguments)["stateMachineArn"])


def launch_and_record_execution(
    target_aws_client: Any,
    sfn_snapshot: _Snapshot,
    state_machine_arn: str,
    execution_input: str,
    verify_execution_description: bool = False,
) -> str:
    client = target_aws_client.stepfunctions
    execution_arn = str(
        client.start_execution(stateMachineArn=state_machine_arn, input=execution_input)["executionArn"]
    )
    if verify_execution_description:
        sfn_snapshot.match("describe_execution", client.describe_execution(executionArn=execution_arn))
    sfn_snapshot.match("get_execution_history", client.get_execution_history(executionArn=execution_arn))
    return execution_arn


def create_and_record_execution(
    target_aws_client: Any,
    create_state_machine_iam_role: Callable[..., str],
    create_state_machine: Callable[..., dict[str, Any]],
    sfn_snapshot: _Snapshot,
    definition: str,
    execution_input: str,
    verify_execution_description: bool = False,
) -> str:
    state_machine_arn = create_state_machine_with_iam_role(
        target_aws_client, create_state_machine_iam_role, create_state_machine, sfn_snapshot, definition
    )
    return launch_and_record_execution(
        target_aws_client, sfn_snapshot, state_machine_arn, execution_input, verify_execution_description
    )


def launch_and_record_sync_execution(
    target_aws_client: Any, sfn_snapshot: _Snapshot, state_machine_arn: str, execution_input: str
) -> None:
    response = target_aws_client.stepfunctions.start_sync_execution(
        stateMachineArn=state_machine_arn, input=execution_input
    )
    sfn_snapshot.match("start_execution_sync_response", response)


def create_and_record_express_sync_execution(
    target_aws_client: Any,
    create_state_machine_iam_role: Callable[..., str],
    create_state_machine: Callable[..., dict[str, Any]],
    sfn_snapshot: _Snapshot,
    definition: str,
    execution_input: str,
) -> None:
    role_arn = create_state_machine_iam_role(target_aws_client=target_aws_client)
    response = create_state_machine(
        target_aws_client,
        name=f"express_statemachine_{short_uid()}",
        definition=definition,
        roleArn=role_arn,
        type="EXPRESS",
    )
    launch_and_record_sync_execution(
        target_aws_client, sfn_snapshot, response["stateMachineArn"], execution_input
    )


def _await_history(stepfunctions_client: Any, execution_arn: str, **_: Any) -> list[dict[str, Any]]:
    return list(stepfunctions_client.get_execution_history(executionArn=execution_arn)["events"])


def _unsupported_helper(name: str) -> Callable[..., Any]:
    def helper(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"uses LocalStack's test helper {name}")

    return helper


class SfnNoneRecursiveParallelTransformer:
    """Reorders (and, nested, drops) a Parallel state's events in the snapshot: the runner does the same."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args


def extract_json(path: str, data: Any) -> Any:
    from jsonpath_ng.ext import parse

    found = [match.value for match in parse(path).find(data)]
    if not found:
        return Anything(f"extract_json({path})")
    return found[0] if len(found) == 1 else found


def _stepfunctions_utils_module() -> types.ModuleType:
    module = types.ModuleType("localstack.testing.pytest.stepfunctions.utils")
    module.__dict__.update(
        {
            "create_state_machine_with_iam_role": create_state_machine_with_iam_role,
            "launch_and_record_execution": launch_and_record_execution,
            "create_and_record_execution": create_and_record_execution,
            "launch_and_record_sync_execution": launch_and_record_sync_execution,
            "create_and_record_express_sync_execution": create_and_record_express_sync_execution,
            "await_execution_terminated": _await_history,
            "await_execution_success": _await_history,
            "await_execution_started": _await_history,
            "SfnNoneRecursiveParallelTransformer": SfnNoneRecursiveParallelTransformer,
        }
    )
    module.__getattr__ = lambda name: _unsupported_helper(name)  # type: ignore[method-assign]
    return module


def _module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    module.__path__ = []
    module.__getattr__ = lambda attribute: Anything(f"{name}.{attribute}")  # type: ignore[method-assign]
    return module


def _special_modules() -> dict[str, types.ModuleType]:
    markers = _module("localstack.testing.pytest.markers", aws=_Mark("aws"), snapshot=_Mark("snapshot"))
    return {
        "localstack.testing.pytest": _module("localstack.testing.pytest", markers=markers),
        "localstack.testing.pytest.markers": markers,
        "localstack.testing.pytest.stepfunctions.utils": _stepfunctions_utils_module(),
        "localstack.testing.aws.util": _module("localstack.testing.aws.util", is_aws_cloud=lambda: True),
        "localstack.utils.strings": _module(
            "localstack.utils.strings", short_uid=short_uid, long_uid=long_uid
        ),
        "localstack.services.stepfunctions.asl.utils.json_path": _module(
            "localstack.services.stepfunctions.asl.utils.json_path", extract_json=extract_json
        ),
        "localstack_snapshot.snapshots.transformer": _module(
            "localstack_snapshot.snapshots.transformer",
            RegexTransformer=RegexTransformer,
            JsonpathTransformer=JsonpathTransformer,
        ),
        "localstack.aws.api.lambda_": _shapes_module("localstack.aws.api.lambda_", runtime_names=True),
        "localstack.aws.api.stepfunctions": _shapes_module("localstack.aws.api.stepfunctions"),
    }


def _shapes_module(name: str, runtime_names: bool = False) -> types.ModuleType:
    module = _module(name)
    module.__getattr__ = lambda attribute: _ApiShapes(  # type: ignore[method-assign]
        attribute, runtime_names=runtime_names and attribute == "Runtime"
    )
    return module


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves every module under the stood-in packages: the special ones above, Anything for the rest."""

    PREFIXES = ("localstack", "localstack_snapshot", "rolo", "aws_cdk")

    def __init__(self) -> None:
        self.special = _special_modules()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.PREFIXES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.special.get(spec.name) or _module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        """Stand-ins are complete when created."""


sys.meta_path.insert(0, _StandInFinder())


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture
def aws_client() -> FakeAwsClient:
    return FakeAwsClient()


@pytest.fixture
def aws_client_no_retry(aws_client: FakeAwsClient) -> FakeAwsClient:
    return aws_client


@pytest.fixture
def sfn_snapshot() -> _Snapshot:
    return _Snapshot()


@pytest.fixture
def snapshot() -> _Snapshot:
    """LocalStack's plain snapshot fixture: the same recording, without the Step Functions transformers."""
    return _Snapshot()


@pytest.fixture
def account_id() -> str:
    return ACCOUNT_ID


@pytest.fixture
def region_name() -> str:
    return REGION


@pytest.fixture
def create_state_machine_iam_role() -> Callable[..., str]:
    return lambda target_aws_client=None, **_: f"arn:aws:iam::{ACCOUNT_ID}:role/conformance-sfn-role"


@pytest.fixture
def create_state_machine() -> Callable[..., dict[str, Any]]:
    def create(target_aws_client: FakeAwsClient, **kwargs: Any) -> dict[str, Any]:
        return dict(target_aws_client.stepfunctions.create_state_machine(**kwargs))

    return create


@pytest.fixture
def create_lambda_function() -> Callable[..., dict[str, Any]]:
    def create(func_name: str, handler_file: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if handler_file is None:
            raise UnsupportedError("creates a Lambda function without a handler file")
        path = Path(handler_file)
        is_path = len(handler_file) < 4096 and path.exists()
        RECORDER.test.functions[func_name] = {
            "handler_file": str(path.resolve().relative_to(Path.cwd())) if is_path else None,
            "source": path.read_text() if is_path else handler_file,
            "runtime": str(kwargs.get("runtime") or "python3.12"),
            "handler": str(kwargs.get("handler") or "handler.handler"),
            "timeout": int(kwargs.get("timeout") or 30),
            "environment": dict(kwargs.get("envvars") or {}),
        }
        arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{func_name}"
        response = {"FunctionArn": arn, "FunctionName": func_name}
        return {"CreateFunctionResponse": response, "CreateEventSourceMappingResponse": None}

    return create


@pytest.fixture
def dynamodb_create_table() -> Callable[..., dict[str, Any]]:
    def create(table_name: str | None = None, partition_key: str = "id", **kwargs: Any) -> dict[str, Any]:
        name = table_name or f"test-table-{short_uid()}"
        RECORDER.test.dynamodb_tables.append({"table": name, "partition_key": partition_key})
        return {"TableDescription": {"TableName": name}}

    return create


@pytest.fixture
def s3_create_bucket() -> Callable[..., str]:
    def create(**kwargs: Any) -> str:
        bucket = kwargs.get("Bucket") or f"conformance-bucket-{short_uid()}"
        FakeS3().create_bucket(Bucket=bucket)
        return str(bucket)

    return create


# ---------------------------------------------------------------------------------------------- hooks
def _aws_markers(item: pytest.Item) -> list[str]:
    marks: list[str] = []
    for owner in (getattr(item, "function", None), getattr(item, "cls", None)):
        marks.extend(getattr(owner, "_conformance_marks", []))
    return [mark.removeprefix("aws.") for mark in marks if mark.startswith("aws.")]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    RECORDER.begin(item.nodeid, _aws_markers(item))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    record = RECORDER.tests.get(item.nodeid)
    if record is None or record.error or not report.failed:
        return
    if call.excinfo is not None and call.excinfo.errisinstance(UnsupportedError):
        record.error = str(call.excinfo.value)
    elif "fixture '" in str(report.longrepr):
        fixture = re.search(r"fixture '([^']+)' not found", str(report.longrepr))
        record.error = f"needs the {fixture.group(1) if fixture else 'unknown'} fixture"
    elif call.excinfo is not None:
        record.error = f"{call.excinfo.typename}: {str(call.excinfo.value)[:200]}"
    else:
        record.error = str(report.longrepr)[:200]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        RECORDER.collection_errors[report.nodeid] = str(report.longrepr).strip().splitlines()[-1][:300]


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CONFORMANCE_RECORD_OUT")
    if out:
        RECORDER.dump(Path(out))


# A recorded test that sleeps for AWS's sake (IAM propagation, eventual consistency) need not here.
time.sleep = lambda seconds: None


class _FrozenDateTime(datetime.datetime):
    """Tests that put "now" into an input get a fixed moment: regenerated cases come out the same."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> _FrozenDateTime:
        return cls(2025, 1, 1, tzinfo=tz)


datetime.datetime = _FrozenDateTime  # type: ignore[misc]
