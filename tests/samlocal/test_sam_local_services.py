"""`sam local start-lambda` and `start-api` with no Docker engine, and the local cloud handing its Lambda
invocations to start-lambda (``--lambda-endpoint``).

One local cloud serves the module, its Lambda invocations forwarded to SAM CLI's start-lambda; every
container SAM CLI starts calls back into that local cloud (DynamoDB, Step Functions). So a batch runs:
local cloud Step Functions -> start-lambda -> Docker API -> execution environment -> local cloud tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config
from samlocal_support import BIN, SamService, ServedDocker, free_port, record_calls, start_sam_service

from orderbatch.app_batches import local_cloud_config
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, wait_for_execution
from sam_local_cloud.docker_api.images import is_durable_emulator_image
from sam_local_cloud.docker_api.sam_env import sam_env_vars

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"
EVENTS = PROJECT_ROOT / "events"
BATCH_TIMEOUT_SECONDS = 240
HTTP_API_ROUTES = (
    "/batches",
    "/batches/{batch_id}",
    "/batches/{batch_id}/redrive",
    "/batches/{batch_id}/reconcile",
)


@pytest.fixture(scope="module")
def start_lambda_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def cloud(start_lambda_port: int) -> Iterator[LocalCloud]:
    config = local_cloud_config(
        TEMPLATE,
        lambda_endpoint=f"http://127.0.0.1:{start_lambda_port}",
    )
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def docker(serve_docker: Any, cloud: LocalCloud) -> ServedDocker:
    served: ServedDocker = serve_docker(aws_endpoint_url=cloud.endpoint)
    return served


@pytest.fixture(scope="module")
def api_docker(serve_docker: Any, cloud: LocalCloud) -> ServedDocker:
    """start-api's own Docker API, so its calls are not mixed with start-lambda's during a batch."""
    served: ServedDocker = serve_docker(aws_endpoint_url=cloud.endpoint)
    return served


@pytest.fixture(scope="module")
def env_vars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sam") / "env.json"
    path.write_text(json.dumps(sam_env_vars(TEMPLATE)))
    return path


@pytest.fixture(scope="module")
def start_lambda(
    docker: ServedDocker, env_vars: Path, start_lambda_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SamService]:
    log = tmp_path_factory.mktemp("start-lambda") / "sam.log"
    service = start_sam_service(
        docker, ["local", "start-lambda", "--env-vars", str(env_vars)], start_lambda_port, log
    )
    yield service
    service.stop()


@pytest.fixture(scope="module")
def start_api(
    api_docker: ServedDocker,
    env_vars: Path,
    start_lambda: SamService,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SamService]:
    log = tmp_path_factory.mktemp("start-api") / "sam.log"
    arguments = ["local", "start-api", "--env-vars", str(env_vars)]
    service = start_sam_service(api_docker, arguments, free_port(), log)
    yield service
    service.stop()


def validate_event(order_id: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "validate_order.json").read_text())
    event["order"]["order_id"] = order_id
    return event


def test_start_lambda_answers_boto3(
    request: pytest.FixtureRequest, docker: ServedDocker, cloud: LocalCloud, start_lambda: SamService
) -> None:
    client = boto3.client(
        "lambda",
        endpoint_url=start_lambda.url,
        region_name="us-east-1",
        **DUMMY_CREDENTIALS,
        config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )
    mark = docker.mark()
    response = client.invoke(
        FunctionName="ValidateOrderFunction", Payload=json.dumps(validate_event("o-start-lambda")).encode()
    )
    record_calls(request, docker.calls_since(mark))
    assert response["StatusCode"] == 200
    assert "FunctionError" not in response
    assert json.loads(response["Payload"].read())["outcome"] == "VALID"
    claimed = cloud.client("dynamodb").get_item(
        TableName=cloud.stack.table_name("OrdersTable"), Key={"order_id": {"S": "o-start-lambda"}}
    )
    assert claimed["Item"]["status"]["S"] == "RECEIVED"


def test_start_lambda_answers_the_aws_cli(start_lambda: SamService, tmp_path: Path) -> None:
    event_file, answer_file = tmp_path / "event.json", tmp_path / "answer.json"
    event_file.write_text(json.dumps(validate_event("o-aws-cli")))
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    environment |= {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_MAX_ATTEMPTS": "1",
    }
    result = subprocess.run(
        [
            str(BIN / "aws"),
            "lambda",
            "invoke",
            "--endpoint-url",
            start_lambda.url,
            "--region",
            "us-east-1",
            "--function-name",
            "ValidateOrderFunction",
            "--payload",
            f"file://{event_file}",
            str(answer_file),
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["StatusCode"] == 200
    assert json.loads(answer_file.read_text())["outcome"] == "VALID"


def renamed_batch(batch_id: str) -> dict[str, Any]:
    """events/batch_small.json under another batch ID and order IDs, so batches do not meet."""
    batch: dict[str, Any] = json.loads((EVENTS / "batch_small.json").read_text())
    batch["batch_id"] = batch_id
    for order in batch["orders"]:
        order["order_id"] = f"{batch_id}-{order['order_id']}"
    return batch


def test_the_local_cloud_runs_a_batch_on_start_lambda(
    request: pytest.FixtureRequest, docker: ServedDocker, cloud: LocalCloud, start_lambda: SamService
) -> None:
    sfn = cloud.client("stepfunctions")
    mark = docker.mark()
    execution = sfn.start_execution(
        stateMachineArn=cloud.stack.state_machine().arn,
        name="through-start-lambda",
        input=json.dumps(renamed_batch("through-start-lambda")),
    )
    status = wait_for_execution(sfn, execution["executionArn"], timeout=BATCH_TIMEOUT_SECONDS)
    calls = docker.calls_since(mark)
    record_calls(request, calls)
    assert status == "SUCCEEDED"
    summary = json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["output"])
    assert (summary["total"], summary["succeeded"], summary["rejected"]) == (3, 2, 1)
    # Every Lambda task ran in a container SAM CLI asked for: 3 validations, 2 x (reserve, charge,
    # confirm) and the summary; a rejected order is finished without another task.
    containers = sum(1 for call in calls if call.route == "POST /containers/create")
    assert containers == 10, containers


def test_start_api_serves_the_http_api_routes_without_iam(
    request: pytest.FixtureRequest, api_docker: ServedDocker, start_api: SamService
) -> None:
    """SAM CLI does not check SigV4 for an AWS_IAM authorizer (it says so); the routes answer unsigned."""
    body = (EVENTS / "batch_small.json").read_text()
    headers = {"Content-Type": "application/json"}
    submitted = requests.post(f"{start_api.url}/batches", data=body, headers=headers, timeout=120)
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["batch_id"] == "batch-0001"
    again = requests.post(f"{start_api.url}/batches", data=body, headers=headers, timeout=120)
    assert again.status_code == 200
    assert again.json()["execution_arn"] == submitted.json()["execution_arn"]
    deadline = time.monotonic() + BATCH_TIMEOUT_SECONDS
    while True:
        status = requests.get(f"{start_api.url}/batches/batch-0001", timeout=120)
        assert status.status_code == 200, status.text
        if status.json()["status"] != "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert status.json()["status"] == "SUCCEEDED"
    assert (status.json()["summary"]["succeeded"], status.json()["summary"]["rejected"]) == (2, 1)
    redrive = requests.post(f"{start_api.url}/batches/batch-0001/redrive", timeout=120)
    assert redrive.status_code == 409, redrive.text
    for route in HTTP_API_ROUTES:
        warning = f"Authorizer 'AWS_IAM' for route '{route}' is not supported for local emulation"
        assert f"{warning}, requests will not be authorized" in start_api.log()
    # start-api starts a warm container per function up front (8, DurableOrderBatchFunction's included) and
    # sends every request to its function's; creating the durable function's container makes SAM CLI start
    # its durable execution emulator container as well.
    calls = api_docker.calls_since(0)
    record_calls(request, calls)
    assert sum(1 for call in calls if call.route == "POST /containers/create") == 9
    images = [
        summary["Image"] for summary in api_docker.api.containers.summaries(include_stopped=True, filters={})
    ]
    assert sum(1 for image in images if is_durable_emulator_image(image)) == 1
