"""What a container's runtime sees of files, as in SAM CLI's container: SAM CLI's emulation images, the
layers at /opt, a read-only code folder that gets no ``__pycache__``, and warm containers that stay warm.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import tarfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import docker
import pytest
import requests
from botocore.config import Config
from samlocal_support import SAM_APP, ServedDocker, free_port, start_sam_service

from sam_local_cloud.docker_api.execution import container_mounts_supported
from sam_local_cloud.docker_api.images import LAMBDA_RUNTIME_LABEL, host_architecture
from sam_local_cloud.lambda_service.emulator import find_rie_binary

pytestmark = pytest.mark.e2e

RIE_ENTRYPOINT = ["/var/rapid/aws-lambda-rie", "--log-level", "error"]
INVOCATIONS = "/2015-03-31/functions/function/invocations"
OTHER_ARCHITECTURE = "arm64" if host_architecture() == "amd64" else "x86_64"
needs_mounts = pytest.mark.skipif(
    not container_mounts_supported(), reason="no mount namespaces here (neither root nor user namespaces)"
)

# A layer zip with its package at the zip's root (as SAM CLI's own layer tests have it) and one laid out
# for Lambda's Python path (python/...). Its handler puts /opt itself on sys.path, as those tests do.
LAYER_FILES = {
    "layer/root_package/__init__.py": b"WHERE = 'zip root'\n",
    "layer/python/in_python.py": b"WHERE = 'python folder'\n",
}
HANDLER = textwrap.dedent(
    """
    import errno
    import os
    import sys

    sys.path.insert(0, "/opt")


    def handler(event, context):
        import in_python
        import root_package

        try:
            with open(os.path.join(os.environ["LAMBDA_TASK_ROOT"], "written.txt"), "w") as written:
                written.write("x")
            code_write = "written"
        except OSError as error:
            code_write = errno.errorcode[error.errno]
        with open("/tmp/scratch.txt", "w") as scratch:
            scratch.write("x")
        return {
            "root_package": [root_package.WHERE, root_package.__file__],
            "in_python": [in_python.WHERE, in_python.__file__],
            "code_write": code_write,
        }
    """
)


@pytest.fixture(scope="module")
def client(serve_docker: Any) -> Iterator[docker.DockerClient]:
    served: ServedDocker = serve_docker()
    docker_client = docker.DockerClient(base_url=served.host, version="1.35")
    yield docker_client
    docker_client.close()


def build_context(dockerfile: str, files: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def sam_dockerfile(base_image: str, *, with_layer: bool) -> tuple[str, dict[str, bytes]]:
    """What SAM CLI builds its invoke image from: the emulator ADDed, then the layers into /opt."""
    dockerfile = (
        f"FROM {base_image}\n"
        "ADD aws-lambda-rie-x86_64 /var/rapid/\n"
        "RUN mv /var/rapid/aws-lambda-rie-x86_64 /var/rapid/aws-lambda-rie"
        " && chmod +x /var/rapid/aws-lambda-rie\n"
    )
    files = {"aws-lambda-rie-x86_64": find_rie_binary().read_bytes()}
    if with_layer:
        dockerfile += "ADD layer /opt\n"
        files.update(LAYER_FILES)
    return dockerfile, files


@pytest.mark.parametrize(
    "reference",
    [
        "amazon/aws-sam-cli-emulation-image-python3.12",
        "docker.io/amazon/aws-sam-cli-emulation-image-python3.12:latest",
        "public.ecr.aws/sam/emulation-python3.12",
        "public.ecr.aws/sam/emulation-python3.12:latest-x86_64",
        "public.ecr.aws/sam/emulation-python3.12:1.33.0-x86_64",
    ],
)
def test_sam_clis_emulation_images_are_python_base_images(
    client: docker.DockerClient, reference: str
) -> None:
    image = client.images.get(reference)
    assert image.labels[LAMBDA_RUNTIME_LABEL] == "python3.12"
    repository = reference.split(":")[0]
    pulled = client.images.pull(repository, tag=reference.split(":")[1] if ":" in reference else "latest")
    assert pulled.id == client.images.get(pulled.tags[0]).id
    # `sam local --invoke-image` builds FROM it and tags the result with SAM CLI's rapid tag.
    dockerfile, files = sam_dockerfile(reference, with_layer=False)
    built, _ = client.images.build(
        fileobj=build_context(dockerfile, files), custom_context=True, tag=f"{repository}:rapid-x86_64"
    )
    assert built.labels[LAMBDA_RUNTIME_LABEL] == "python3.12"


def test_an_emulation_image_of_another_architecture_or_runtime_is_refused(
    client: docker.DockerClient,
) -> None:
    with pytest.raises(docker.errors.ImageNotFound, match="runtimes run natively here"):
        client.images.get(f"amazon/aws-sam-cli-emulation-image-python3.12:latest-{OTHER_ARCHITECTURE}")
    with pytest.raises(docker.errors.ImageNotFound, match="Python Lambda runtimes only"):
        client.images.get("amazon/aws-sam-cli-emulation-image-nodejs20.x")


def test_a_network_never_created_is_not_found_as_docker_answers(client: docker.DockerClient) -> None:
    # SAM CLI (SAM_DOCKER_NETWORK / --docker-network) stops with this message, as with Docker.
    with pytest.raises(docker.errors.NotFound, match=r"network orderbatch-h4-missing not found"):
        client.networks.get("orderbatch-h4-missing")
    created = client.networks.create("orderbatch-h4-created")
    try:
        assert client.networks.get("orderbatch-h4-created").id == created.id
        assert {network.name for network in client.networks.list()} >= {
            "bridge",
            "host",
            "orderbatch-h4-created",
        }
    finally:
        created.remove()


def invoke_in_container(
    client: docker.DockerClient,
    image: str,
    code: Path,
    mode: str,
    event: dict[str, Any],
    variables: dict[str, str] | None = None,
) -> dict[str, Any]:
    port = free_port()
    container = client.containers.create(
        image,
        entrypoint=RIE_ENTRYPOINT,
        working_dir="/var/task",
        volumes={str(code): {"bind": "/var/task", "mode": mode}},
        environment={
            "AWS_LAMBDA_FUNCTION_HANDLER": "app.handler",
            "AWS_LAMBDA_FUNCTION_TIMEOUT": "10",
            **(variables or {}),
        },
        ports={"8080": ("127.0.0.1", port)},
    )
    try:
        container.start()
        response = requests.post(f"http://127.0.0.1:{port}{INVOCATIONS}", json=event, timeout=60)
        answer: dict[str, Any] = response.json()
        return answer
    finally:
        container.remove(force=True)


@needs_mounts
def test_layers_are_at_opt_and_the_code_folder_is_read_only(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    dockerfile, files = sam_dockerfile("public.ecr.aws/lambda/python:3.12-x86_64", with_layer=True)
    client.images.build(
        fileobj=build_context(dockerfile, files),
        custom_context=True,
        tag="samcli/lambda-python:3.12-x86_64-h4",
    )
    code = tmp_path / "code"
    code.mkdir()
    (code / "app.py").write_text(HANDLER)

    answer = invoke_in_container(client, "samcli/lambda-python:3.12-x86_64-h4", code, "ro,delegated", {})

    assert answer == {
        "root_package": ["zip root", "/opt/root_package/__init__.py"],
        "in_python": ["python folder", "/opt/python/in_python.py"],
        "code_write": "EROFS",
    }
    assert sorted(path.name for path in code.iterdir()) == ["app.py"]


def test_without_mount_namespaces_layers_are_imported_from_the_images_files(
    serve_docker: Any, tmp_path: Path
) -> None:
    served: ServedDocker = serve_docker(isolate=False)
    client = docker.DockerClient(base_url=served.host, version="1.35")
    try:
        dockerfile, files = sam_dockerfile("public.ecr.aws/lambda/python:3.12-x86_64", with_layer=True)
        client.images.build(
            fileobj=build_context(dockerfile, files),
            custom_context=True,
            tag="samcli/lambda-python:3.12-h4-plain",
        )
        code = tmp_path / "code"
        code.mkdir()
        (code / "app.py").write_text(HANDLER.replace("import root_package", "root_package = in_python"))

        answer = invoke_in_container(client, "samcli/lambda-python:3.12-h4-plain", code, "ro", {})
    finally:
        client.close()

    # /opt/python is still on the path, as the image's folder on this machine; the code stays writable.
    where, module_file = answer["in_python"]
    assert where == "python folder"
    assert module_file.endswith("/opt/python/in_python.py")
    assert not module_file.startswith("/opt/")
    assert answer["code_write"] == "written"
    assert sorted(path.name for path in code.iterdir()) == ["app.py", "written.txt"]


def test_no_bytecode_is_written_into_a_code_folder_even_a_writable_one(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    shutil.copytree(SAM_APP / "echo", code)
    variables = {"GREETING": "hi", "CONFIG_PATH": "/var/task/config.json"}
    answer = invoke_in_container(client, "public.ecr.aws/lambda/python:3.12", code, "rw", {"n": 1}, variables)
    assert answer["event"] == {"n": 1}
    assert list(code.rglob("__pycache__")) == []


WARM_TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  EchoFunction:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      CodeUri: echo/
      Handler: app.handler
      Timeout: 10
      Environment:
        Variables:
          GREETING: warm
          CONFIG_PATH: /var/task/config.json
"""


def lambda_containers(client: docker.DockerClient) -> list[str]:
    """The running containers SAM CLI labels as Lambda's, as SAM CLI's own tests count them."""
    running = client.containers.list(filters={"label": "sam.cli.container.type=lambda"})
    return sorted(container.id for container in running)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["EAGER", "LAZY"])
def test_warm_containers_serve_every_invocation_and_go_with_sam(
    serve_docker: Any, tmp_path: Path, mode: str
) -> None:
    served: ServedDocker = serve_docker()
    client = docker.DockerClient(base_url=served.host, version="1.35")
    shutil.copytree(SAM_APP / "echo", tmp_path / "echo")
    (tmp_path / "template.yaml").write_text(WARM_TEMPLATE)
    port = free_port()
    arguments = ["local", "start-lambda", "--warm-containers", mode]
    service = start_sam_service(served, arguments, port, tmp_path / "sam.log", cwd=tmp_path)
    try:
        lambda_client = boto3.client(
            "lambda",
            endpoint_url=service.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": 0}, read_timeout=120),
        )
        before = lambda_containers(client)
        assert len(before) == (1 if mode == "EAGER" else 0), service.log()
        seen = []
        for attempt in (1, 2):
            result = lambda_client.invoke(
                FunctionName="EchoFunction", Payload=json.dumps({"attempt": attempt})
            )
            assert json.loads(result["Payload"].read())["event"] == {"attempt": attempt}
            seen.append(lambda_containers(client))
        # One warm container served both: the runtime wrote nothing SAM CLI's watcher takes for new code.
        assert len(seen[0]) == 1, service.log()
        assert seen[1] == seen[0], service.log()
        assert "source code has been changed" not in service.log()
        assert list((tmp_path / "echo").rglob("__pycache__")) == []

        service.process.send_signal(signal.SIGTERM)
        assert service.process.wait(timeout=60) == 0, service.log()
        deadline = time.monotonic() + 20
        while lambda_containers(client) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert lambda_containers(client) == []
    finally:
        service.stop()
        client.close()
