"""`sam local invoke` with no Docker engine: the app's functions on its events, against a local cloud.

The functions' AWS calls go to the local cloud: AWS_ENDPOINT_URL from the Docker API
(``--aws-endpoint-url``), and the table names the local cloud deployed through ``--env-vars`` (the file
``orderbatch local docker --write-env-vars`` writes).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from samlocal_support import SAM, ServedDocker, record_calls, run_sam, sam_environment

from orderbatch.app_batches import local_cloud_config
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import LocalCloud
from sam_local_cloud.docker_api.execution import is_built
from sam_local_cloud.docker_api.sam_env import sam_env_vars
from sam_local_cloud.lambda_service.runtimes import find_interpreter

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"
EVENTS = PROJECT_ROOT / "events"
# events/<file> -> the function it is the sample event of, and what the function answers to it, in an
# order where each step finds what the one before it wrote (validate, reserve, charge, confirm ...).
# batch_small.json is a batch, not a function's event: test_sam_local_services.py submits it.
EVENT_FUNCTIONS = {
    "validate_order.json": "ValidateOrderFunction",
    "reserve_inventory.json": "ReserveInventoryFunction",
    "charge_payment.json": "ChargePaymentFunction",
    "confirm_order.json": "ConfirmOrderFunction",
    "cancel_order.json": "CancelOrderFunction",
    "summarize_batch.json": "SummarizeBatchFunction",
    "batches_api_post.json": "BatchesApiFunction",
    "batches_api_get.json": "BatchesApiFunction",
}
BATCH_EVENTS = {"batch_small.json"}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    config = local_cloud_config(TEMPLATE)
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def docker(serve_docker: Any, cloud: LocalCloud) -> ServedDocker:
    served: ServedDocker = serve_docker(aws_endpoint_url=cloud.endpoint)
    return served


@pytest.fixture(scope="module")
def env_vars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sam") / "env.json"
    path.write_text(json.dumps(sam_env_vars(TEMPLATE)))
    return path


def invoke(docker: ServedDocker, function: str, event_file: str, env_vars: Path) -> tuple[Any, str]:
    result = run_sam(
        docker, ["local", "invoke", function, "-e", str(EVENTS / event_file), "--env-vars", str(env_vars)]
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_invoke_prints_the_handlers_result_and_its_logs(
    request: pytest.FixtureRequest, docker: ServedDocker, cloud: LocalCloud, env_vars: Path
) -> None:
    mark = docker.mark()
    result, logs = invoke(docker, "ValidateOrderFunction", "validate_order.json", env_vars)
    assert result["order_id"] == "o-1001"
    assert result["outcome"] == "VALID"
    assert '"message":"task body ran"' in logs
    assert "REPORT RequestId: " in logs
    # Its DynamoDB calls landed in the local cloud: the order ID is claimed there.
    orders = cloud.client("dynamodb").get_item(
        TableName=cloud.stack.table_name("OrdersTable"), Key={"order_id": {"S": "o-1001"}}
    )
    assert orders["Item"]["status"]["S"] == "RECEIVED"
    calls = docker.calls_since(mark)
    record_calls(request, calls)
    routes = [call.route for call in calls]
    for expected in (
        "POST /containers/create",
        "POST /containers/{id}/start",
        "POST /containers/{id}/attach",
        "DELETE /containers/{id}",
    ):
        assert routes.count(expected) == 1, routes
    assert all(call.status < 400 or call.route == "GET /images/{name}/json" for call in calls), calls


def test_every_event_file_has_its_function() -> None:
    assert {path.name for path in EVENTS.glob("*.json")} == set(EVENT_FUNCTIONS) | BATCH_EVENTS


# What each function answers to its sample event, run in this order on one local cloud.
EXPECTED = {
    "validate_order.json": lambda result: result["outcome"] == "VALID",
    "reserve_inventory.json": lambda result: result["outcome"] == "RESERVED",
    "charge_payment.json": lambda result: result["outcome"] == "CHARGED",
    "confirm_order.json": lambda result: result["outcome"] == "SUCCEEDED",
    # The order was confirmed just before: the compensation leaves a succeeded order as it is.
    "cancel_order.json": lambda result: result["outcome"] == "SUCCEEDED",
    "summarize_batch.json": lambda result: (
        (result["total"], result["succeeded"], result["failed"]) == (2, 1, 1)
    ),
    "batches_api_post.json": lambda result: (
        result["statusCode"] == 202 and json.loads(result["body"])["batch_id"] == "b-2025-01-01-001"
    ),
    "batches_api_get.json": lambda result: (
        result["statusCode"] == 200 and json.loads(result["body"])["batch_id"] == "b-2025-01-01-001"
    ),
}


@pytest.mark.slow
def test_invoke_every_event_in_order(
    request: pytest.FixtureRequest, docker: ServedDocker, env_vars: Path
) -> None:
    # One test, not one per event: the events are steps of one order's life on one local cloud (the GET
    # reads the batch the POST created), and `pytest -n` may send separate tests to separate workers.
    mark = docker.mark()
    unexpected = []
    for event_file, function in EVENT_FUNCTIONS.items():
        result, logs = invoke(docker, function, event_file, env_vars)
        if "errorType" in result or not EXPECTED[event_file](result) or "REPORT RequestId: " not in logs:
            unexpected.append(f"{event_file} -> {function}: {result}")
    record_calls(request, docker.calls_since(mark))

    assert unexpected == []


@pytest.mark.slow
def test_invoke_what_sam_build_built(
    docker: ServedDocker, env_vars: Path, tmp_path: Path, cloud: LocalCloud
) -> None:
    """A built CodeUri holds its packages already: it runs on the runtime's own packages and its folder."""
    interpreter = find_interpreter("3.12")
    if interpreter is None:
        pytest.skip("sam build for python3.12 needs python3.12")
    environment = sam_environment(docker)
    environment["PATH"] = f"{Path(interpreter.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    build_dir = tmp_path / "build"
    command = [str(SAM), "build", "--template-file", str(TEMPLATE), "--build-dir", str(build_dir)]
    command += ["--cache-dir", str(tmp_path / "cache")]
    built = subprocess.run(
        command, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=900, check=False
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert is_built(build_dir / "ValidateOrderFunction")
    event = json.loads((EVENTS / "validate_order.json").read_text())
    event["order"]["order_id"] = "o-built"
    arguments = ["local", "invoke", "ValidateOrderFunction", "--template", str(build_dir / "template.yaml")]
    result = run_sam(docker, [*arguments, "-e", "-", "--env-vars", str(env_vars)], stdin=json.dumps(event))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "VALID"
    assert f"Mounting {build_dir / 'ValidateOrderFunction'} as /var/task" in result.stderr
    claimed = cloud.client("dynamodb").get_item(
        TableName=cloud.stack.table_name("OrdersTable"), Key={"order_id": {"S": "o-built"}}
    )
    assert claimed["Item"]["status"]["S"] == "RECEIVED"
