"""SAM CLI's durable commands with no Docker engine: its durable execution emulator container runs as the
durable testing SDK's own server, and chained invokes (``context.invoke``) reach the local cloud's functions.

The Docker API part drives the emulator container as SAM CLI creates it (docker-py); the SAM CLI part runs
`sam local invoke DurableOrderBatchFunction --durable-execution-name` on a two-order batch against a local
cloud, then `sam local execution get` and `history`, each of which starts a fresh emulator on the same
SQLite store.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import requests
from docker.errors import APIError
from samlocal_support import ServedDocker, free_port, record_calls, run_sam

from orderbatch.app_batches import local_cloud_config
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import LocalCloud
from sam_local_cloud.docker_api.config import BindMount, ContainerConfig, PortBinding
from sam_local_cloud.docker_api.execution import PathMap, emulator_arguments, resolve_hosts_in_urls
from sam_local_cloud.docker_api.sam_env import sam_env_vars

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"
EMULATOR_IMAGE = "public.ecr.aws/durable-functions/aws-durable-execution-emulator:latest"
DATA_DIR_IN_CONTAINER = "/tmp/.durable-executions-local"
EMULATOR_READY_SECONDS = 30


def emulator_command(port: int) -> list[str]:
    """The command SAM CLI 1.170 gives its emulator container."""
    return [
        "dex-local-runner",
        "start-server",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--log-level",
        "DEBUG",
        "--lambda-endpoint",
        "http://host.docker.internal:3001",
        "--store-type",
        "sqlite",
        "--store-path",
        f"{DATA_DIR_IN_CONTAINER}/durable-executions.db",
    ]


def wait_healthy(port: int) -> requests.Response:
    deadline = time.monotonic() + EMULATOR_READY_SECONDS
    while True:
        try:
            return requests.get(f"http://127.0.0.1:{port}/health", timeout=1)
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# -- the emulator container through the Docker API ---------------------------------------------------


@pytest.fixture(scope="module")
def client(serve_docker: Any) -> Iterator[docker.DockerClient]:
    served: ServedDocker = serve_docker()
    docker_client = docker.DockerClient(base_url=served.host, version="1.35")
    yield docker_client
    docker_client.close()


def test_the_emulator_image_is_present_and_current_without_a_download(client: docker.DockerClient) -> None:
    image = client.images.get(EMULATOR_IMAGE)
    registry = client.images.get_registry_data(EMULATOR_IMAGE)

    assert EMULATOR_IMAGE in image.tags
    assert image.attrs["RepoDigests"][0].endswith(registry.id)
    assert client.images.pull(EMULATOR_IMAGE).id == image.id


def test_the_emulator_container_serves_the_checkpoint_api_on_its_published_port(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    port = free_port()
    container = client.containers.create(
        image=EMULATOR_IMAGE,
        command=emulator_command(port),
        name=f"durable-emulator-{port}",
        ports={f"{port}/tcp": port},
        volumes={str(tmp_path): {"bind": DATA_DIR_IN_CONTAINER, "mode": "rw"}},
        environment={"DURABLE_EXECUTION_TIME_SCALE": "1"},
        working_dir=DATA_DIR_IN_CONTAINER,
        extra_hosts={"host.docker.internal": "host-gateway"},
    )
    try:
        container.start()
        health = wait_healthy(port)
        container.reload()
        unknown = requests.get(
            f"http://127.0.0.1:{port}/2025-12-01/durable-executions/"
            "arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Af%3A%24LATEST%2Fdurable-execution%2Fx%2Fy",
            timeout=5,
        )
    finally:
        container.stop(timeout=2)
    container.reload()

    assert health.status_code == 200
    assert health.json() == {"status": "healthy"}
    assert container.attrs["State"]["Status"] == "exited"
    assert container.attrs["Path"] == "dex-local-runner"
    assert unknown.status_code == 404, unknown.text
    # The store is the SQLite file SAM CLI named, in the folder it bound.
    assert (tmp_path / "durable-executions.db").is_file()
    assert f"Port: {port}" in container.logs().decode()
    container.remove()


def test_an_emulator_container_running_anything_else_is_refused(client: docker.DockerClient) -> None:
    with pytest.raises(APIError) as refused:
        client.containers.create(image=EMULATOR_IMAGE, command=["sh", "-c", "true"], ports={"9014/tcp": 9014})

    assert refused.value.status_code == 400
    assert "dex-local-runner start-server" in str(refused.value.explanation)


def test_the_emulators_command_is_translated_to_this_machine(tmp_path: Path) -> None:
    config = ContainerConfig(
        image_reference=EMULATOR_IMAGE,
        environment={},
        entrypoint=[],
        command=emulator_command(9014),
        working_dir=DATA_DIR_IN_CONTAINER,
        labels={},
        binds=(),
        published_port=PortBinding("9014/tcp", "0.0.0.0", 9014),
        tty=False,
        request={},
    )
    paths = PathMap((BindMount(tmp_path, DATA_DIR_IN_CONTAINER, False, "rw"),), None, tmp_path / "scratch")

    with_cloud = emulator_arguments(config, paths, 19014, "http://127.0.0.1:4566", "us-east-1")
    without = emulator_arguments(config, paths, 9014, None, "eu-west-1")

    assert with_cloud == [
        "start-server",
        "--host",
        "0.0.0.0",
        "--port",
        "19014",
        "--log-level",
        "DEBUG",
        "--lambda-endpoint",
        "http://127.0.0.1:4566",
        "--store-type",
        "sqlite",
        "--store-path",
        str(tmp_path / "durable-executions.db"),
        "--local-runner-region",
        "us-east-1",
    ]
    # Without a local cloud, chained invokes go where SAM CLI sends them (its start-lambda on the host).
    assert without[without.index("--lambda-endpoint") + 1] == "http://host.docker.internal:3001"
    assert without[-2:] == ["--local-runner-region", "eu-west-1"]


def test_extra_hosts_in_a_containers_urls_are_this_machine() -> None:
    hosts = {"host.docker.internal": "127.0.0.1"}

    assert resolve_hosts_in_urls("http://host.docker.internal:9014", hosts) == "http://127.0.0.1:9014"
    assert resolve_hosts_in_urls("https://host.docker.internal/x", hosts) == "https://127.0.0.1/x"
    assert resolve_hosts_in_urls("http://host.docker.internal.example:1", hosts) == (
        "http://host.docker.internal.example:1"
    )
    assert resolve_hosts_in_urls("host.docker.internal", hosts) == "host.docker.internal"


# -- SAM CLI's durable commands against a local cloud --------------------------------------------------


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(local_cloud_config(TEMPLATE)) as running:
        yield running


@pytest.fixture(scope="module")
def cloud_docker(serve_docker: Any, cloud: LocalCloud) -> ServedDocker:
    served: ServedDocker = serve_docker(aws_endpoint_url=cloud.endpoint)
    return served


@pytest.fixture(scope="module")
def sam_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SAM CLI keeps the emulator's data in ``.durable-executions-local`` of its working directory."""
    folder = tmp_path_factory.mktemp("durable-sam")
    (folder / "env.json").write_text(json.dumps(sam_env_vars(TEMPLATE)))
    (folder / "batch.json").write_text(
        json.dumps(
            {
                "batch_id": "batch-sam-durable-1",
                "orders": [
                    {
                        "order_id": "order-sam-durable-1",
                        "customer_id": "customer-001",
                        "currency": "USD",
                        "items": [{"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"}],
                    },
                    {
                        "order_id": "order-sam-durable-2",
                        "customer_id": "customer-002",
                        "currency": "EUR",
                        "items": [{"sku": "SKU-003", "quantity": 1, "unit_price": "120.00"}],
                    },
                ],
            }
        )
    )
    return folder


def run_durable_sam(docker_server: ServedDocker, arguments: list[str], cwd: Path, port: int) -> Any:
    """`sam` with its emulator on ``port`` under a name of its own, so parallel runs do not meet."""
    os.environ["DURABLE_EXECUTIONS_EMULATOR_PORT"] = str(port)
    os.environ["DURABLE_EXECUTIONS_CONTAINER_NAME"] = f"sam-durable-execution-emulator-{port}"
    try:
        return run_sam(docker_server, arguments, cwd=cwd)
    finally:
        del os.environ["DURABLE_EXECUTIONS_EMULATOR_PORT"], os.environ["DURABLE_EXECUTIONS_CONTAINER_NAME"]


@pytest.mark.slow
def test_sam_local_invoke_runs_the_durable_batch_with_chained_invokes(
    cloud_docker: ServedDocker, sam_workdir: Path, request: pytest.FixtureRequest
) -> None:
    port = free_port()
    mark = cloud_docker.mark()
    invoked = run_durable_sam(
        cloud_docker,
        [
            "local",
            "invoke",
            "DurableOrderBatchFunction",
            "--template",
            str(TEMPLATE),
            "--durable-execution-name",
            "sam-durable-batch-1",
            "--event",
            "batch.json",
            "--env-vars",
            "env.json",
        ],
        sam_workdir,
        port,
    )
    record_calls(request, cloud_docker.calls_since(mark))
    assert invoked.returncode == 0, invoked.stderr[-3000:]

    summary = dict(
        line.split(":", 1)
        for line in invoked.stdout.splitlines()
        if line.startswith(("ARN:", "Status:", "Result:"))
    )
    result = json.loads(summary["Result"])
    arn = summary["ARN"].strip()
    assert "SUCCEEDED" in summary["Status"]
    assert (result["total"], result["succeeded"], result["failed"]) == (2, 2, 0)
    assert [order["outcome"] for order in result["orders"]] == ["SUCCEEDED", "SUCCEEDED"]

    got = run_durable_sam(
        cloud_docker, ["local", "execution", "get", arn, "--format", "json"], sam_workdir, port
    )
    history = run_durable_sam(
        cloud_docker, ["local", "execution", "history", arn, "--format", "json"], sam_workdir, port
    )

    assert got.returncode == 0, got.stderr[-3000:]
    details = json.loads(got.stdout)
    assert (details["Status"], details["DurableExecutionName"]) == ("SUCCEEDED", "sam-durable-batch-1")
    assert history.returncode == 0, history.stderr[-3000:]
    events = json.loads(history.stdout)["Events"]
    succeeded_invokes = [event["Name"] for event in events if event["EventType"] == "ChainedInvokeSucceeded"]
    # Per order: validate, reserve, charge, confirm, each a chained invoke of the local cloud's function.
    assert sorted(succeeded_invokes) == sorted(
        ["validate_order", "reserve_inventory", "charge_payment", "confirm_order"] * 2
    )
