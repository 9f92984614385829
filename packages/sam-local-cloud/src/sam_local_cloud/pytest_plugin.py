"""pytest fixtures that deploy a SAM app on a local cloud, or read its deployed stack on AWS.

Registered through the ``pytest11`` entry point: installing the package is enough. Configured in the
project's ini file (``pytest.ini``, ``[tool.pytest.ini_options]``)::

    sam_template = template.yaml            # relative to the ini file's folder
    sam_parameters = MapMaxConcurrency=8    # one NAME=VALUE a line, as `sam deploy` takes them
    sam_lambda_concurrency = 10             # the account's Lambda quota (a new account's is 10)
    sam_reset_between_tests = true          # each test starts on the stack as just deployed

Fixtures:

- ``sam_stack``: the deployed stack, ``.outputs`` and ``.physical_id(logical_id)``;
- ``aws_client``: ``aws_client("stepfunctions", retries=False)``, a boto3 client for the stack;
- ``local_cloud``: the ``LocalCloud`` the stack runs on, started on a free port once per xdist worker
  and kept for every test with the same settings; before each test after the first it is ``reset()``
  to the state just after its deploy (milliseconds), unless ``sam_reset_between_tests = false``;
- ``lambda_context``: a Lambda context object as Powertools reads it, for calling a handler directly.

Markers, on the local cloud only: ``@pytest.mark.lambda_concurrency(2)`` (the quota for one test),
``@pytest.mark.lambda_faults({...})`` (a fault plan for one test, as ``--faults`` takes it) and
``@pytest.mark.sam_template("other.yaml", parameters={...}, lambda_concurrency=5)`` (another template for
a test, a class or a module: ``pytestmark``). A worker runs one cloud at a time (each holds its
functions' runtimes and a data plane process): tests with other settings stop it and start their own.

``--sam-target=aws --sam-stack-name NAME`` runs the same tests against a stack deployed with
``sam deploy``: ``sam_stack`` reads its outputs and resources from CloudFormation, ``aws_client`` gives
clients of the default session, and tests that need the local cloud (its fixture or either marker)
are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sam_local_cloud.deployed_stack import DeployedStack

if TYPE_CHECKING:
    from sam_local_cloud.cloud import LocalCloud

LOCAL = "local"
AWS = "aws"
TEMPLATE_MARKER = "sam_template"
QUOTA_MARKER = "lambda_concurrency"
FAULTS_MARKER = "lambda_faults"
ONLY_LOCAL = "needs the local cloud (its quota and faults cannot be set on AWS from a test)"


@dataclass
class LambdaContext:
    """What a Lambda handler's context carries, as Powertools reads it (Logger, Tracer, idempotency)."""

    function_name: str = "test-function"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 128
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "local"
    remaining_time_in_millis: int = 30_000

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_time_in_millis


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sam-local-cloud", "a SAM app on a local cloud (sam-local-cloud)")
    group.addoption(
        "--sam-target",
        choices=(LOCAL, AWS),
        default=None,
        help="run the app's tests on a local cloud (default) or on its stack deployed on AWS",
    )
    group.addoption("--sam-stack-name", default=None, help="the deployed stack, with --sam-target=aws")
    group.addoption("--sam-template", default=None, help="the SAM template (overrides sam_template)")
    parser.addini("sam_template", "the SAM template the local cloud deploys", default="template.yaml")
    parser.addini("sam_parameters", "template parameter overrides, NAME=VALUE, one a line", type="linelist")
    parser.addini("sam_lambda_concurrency", "the account's Lambda concurrency quota", default="10")
    parser.addini(
        "sam_reset_between_tests",
        "reset the local cloud to its just-deployed state before each test that reuses it",
        type="bool",
        default=True,
    )
    parser.addini("sam_target", "local or aws", default=LOCAL)
    parser.addini("sam_stack_name", "the deployed stack's name, for the aws target", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{TEMPLATE_MARKER}(path, parameters={{}}, lambda_concurrency=10): the template these tests deploy "
        "instead of the ini file's (local cloud)",
    )
    config.addinivalue_line(
        "markers", f"{QUOTA_MARKER}(n): the account's Lambda concurrency quota for this test (local cloud)"
    )
    config.addinivalue_line(
        "markers", f"{FAULTS_MARKER}(plan): a fault plan (a mapping or a file) for this test (local cloud)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On AWS, what only the local cloud can do is skipped before any fixture reaches for AWS."""
    if _target(config) != AWS:
        return
    only_local = pytest.mark.skip(reason=ONLY_LOCAL)
    for item in items:
        needs_local = "local_cloud" in getattr(item, "fixturenames", ())
        if needs_local or item.get_closest_marker(QUOTA_MARKER) or item.get_closest_marker(FAULTS_MARKER):
            item.add_marker(only_local)


def _target(config: pytest.Config) -> str:
    target = config.getoption("--sam-target") or config.getini("sam_target")
    if target not in (LOCAL, AWS):
        raise pytest.UsageError(f"sam_target {target!r}: local or aws")
    return str(target)


@dataclass(frozen=True)
class CloudSettings:
    """What a local cloud is started with: the template, its parameter overrides, the account quota."""

    template: Path
    parameters: tuple[tuple[str, str], ...]
    lambda_concurrency: int


def _settings(config: pytest.Config, marker: pytest.Mark | None) -> CloudSettings:
    """The ini file's settings (``--sam-template`` first), or a ``sam_template`` marker's."""
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    if marker is not None:
        parameters = {str(k): str(v) for k, v in (marker.kwargs.get("parameters") or {}).items()}
        concurrency = marker.kwargs.get("lambda_concurrency", config.getini("sam_lambda_concurrency"))
        template = (base / str(marker.args[0])).resolve()
    else:
        parameters = _parameters(config)
        concurrency = config.getini("sam_lambda_concurrency")
        given = config.getoption("--sam-template")
        template = Path(given).resolve() if given else (base / str(config.getini("sam_template"))).resolve()
    return CloudSettings(template, tuple(sorted(parameters.items())), int(concurrency))


def _parameters(config: pytest.Config) -> dict[str, str]:
    parameters = {}
    for line in config.getini("sam_parameters"):
        name, equals, value = str(line).partition("=")
        if not equals or not name.strip():
            raise pytest.UsageError(f"sam_parameters: {line!r} is not NAME=VALUE")
        parameters[name.strip()] = value.strip()
    return parameters


class CloudPool:
    """One local cloud at a time: a test asking for other settings stops the running cloud and starts
    its own, and a test with the same settings gets it reset (or as the last test left it). Tests of one
    module share settings, and xdist's ``--dist loadfile`` keeps a module on one worker, so a worker
    switches rarely."""

    def __init__(self, state_root: Path) -> None:
        self._state_root = state_root
        self._settings: CloudSettings | None = None
        self._cloud: LocalCloud | None = None
        self._running = contextlib.ExitStack()
        self.starts = 0
        self.resets = 0

    def cloud_for(self, settings: CloudSettings, *, reset: bool = True) -> LocalCloud:
        if self._cloud is not None and self._settings == settings:
            if reset:
                self._cloud.reset()
                self.resets += 1
            return self._cloud
        self.close()
        from sam_local_cloud.cloud import LocalCloud, LocalCloudConfig

        self.starts += 1
        config = LocalCloudConfig(
            template=settings.template,
            parameter_overrides=dict(settings.parameters),
            account_concurrency=settings.lambda_concurrency,
            state_dir=self._state_root / f"cloud-{self.starts}",
        )
        # As a `with` block: a start that fails stops what it had started, and SIGTERM stops the runtimes.
        self._cloud = self._running.enter_context(LocalCloud(config))
        self._settings = settings
        return self._cloud

    def close(self) -> None:
        self._running.close()
        self._cloud = self._settings = None


@pytest.fixture(scope="session")
def sam_cloud_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CloudPool]:
    """The worker's local clouds, one at a time (under xdist, each worker is a process of its own)."""
    pool = CloudPool(tmp_path_factory.mktemp("sam-local-cloud"))
    yield pool
    pool.close()


@pytest.fixture
def local_cloud(request: pytest.FixtureRequest, sam_cloud_pool: CloudPool) -> LocalCloud:
    """The local cloud with the test's template deployed (the ini file's, or its ``sam_template``
    marker's), started once and kept for every test with the same settings, reset before each."""
    if _target(request.config) != LOCAL:
        pytest.skip(ONLY_LOCAL)
    return sam_cloud_pool.cloud_for(
        _settings(request.config, request.node.get_closest_marker(TEMPLATE_MARKER)),
        reset=bool(request.config.getini("sam_reset_between_tests")),
    )


@pytest.fixture
def sam_stack(request: pytest.FixtureRequest) -> DeployedStack:
    """The stack the test runs against: its local cloud's, or the one named on AWS."""
    if _target(request.config) == AWS:
        return _deployed_on_aws(_aws_stack_name(request.config))
    cloud: LocalCloud = request.getfixturevalue("local_cloud")
    return DeployedStack.of(cloud.stack)


@pytest.fixture
def aws_client(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``aws_client(service, retries=True)``: a boto3 client for the stack's account. ``retries=False``
    turns the SDK's retries off, so that a test sees each 429 itself."""
    import boto3
    from botocore.config import Config

    def retry_config(retries: bool) -> dict[str, Any]:
        return {"retries": {"mode": "standard"} if retries else {"total_max_attempts": 1}}

    if _target(request.config) == AWS:

        def on_aws(service: str, *, retries: bool = True) -> Any:
            return boto3.client(service, config=Config(**retry_config(retries)))  # type: ignore[call-overload]

        return on_aws
    cloud: LocalCloud = request.getfixturevalue("local_cloud")

    def on_local_cloud(service: str, *, retries: bool = True) -> Any:
        return cloud.client(service, **retry_config(retries))

    return on_local_cloud


@pytest.fixture
def lambda_context() -> LambdaContext:
    """A fresh Lambda context (its own request ID) for calling a handler in the test's process."""
    return LambdaContext()


@pytest.fixture(autouse=True)
def _sam_local_cloud_markers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test's quota and fault plan, set on the session's cloud for the test and undone after it."""
    quota = request.node.get_closest_marker(QUOTA_MARKER)
    faults = request.node.get_closest_marker(FAULTS_MARKER)
    if quota is None and faults is None:
        yield
        return
    cloud: LocalCloud = request.getfixturevalue("local_cloud")
    assert cloud.lambda_service is not None
    quota_before = cloud.lambda_service.accounting.account_limit
    if quota is not None:
        cloud.set_quota(lambda_concurrency=int(quota.args[0]))
    try:
        if faults is not None:
            with cloud.inject(faults.args[0]):
                yield
        else:
            yield
    finally:
        cloud.set_quota(lambda_concurrency=quota_before)


def _aws_stack_name(config: pytest.Config) -> str:
    name = config.getoption("--sam-stack-name") or config.getini("sam_stack_name")
    if not name:
        raise pytest.UsageError("--sam-target=aws needs --sam-stack-name (or sam_stack_name in the ini file)")
    return str(name)


def _deployed_on_aws(stack_name: str) -> DeployedStack:
    import boto3

    cloudformation = boto3.client("cloudformation")
    (stack,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name)
    physical_ids = {
        resource["LogicalResourceId"]: resource["PhysicalResourceId"]
        for page in pages
        for resource in page["StackResourceSummaries"]
        if "PhysicalResourceId" in resource
    }
    return DeployedStack(stack_name, outputs, physical_ids)
