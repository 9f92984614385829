"""The Docker API through docker-py (the client SAM CLI uses): images, a container's life, its refusals."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import requests
from docker.errors import APIError, BuildError, ImageNotFound, NotFound
from samlocal_support import SAM_APP, ServedDocker, free_port

from sam_local_cloud.lambda_service.emulator import find_rie_binary

pytestmark = pytest.mark.e2e

PYTHON_BASE = "public.ecr.aws/lambda/python:3.12-x86_64"
RIE_ENTRYPOINT = ["/var/rapid/aws-lambda-rie", "--log-level", "error"]
INVOCATIONS = "/2015-03-31/functions/function/invocations"


@pytest.fixture(scope="module")
def served(serve_docker: Any) -> ServedDocker:
    docker_server: ServedDocker = serve_docker()
    return docker_server


@pytest.fixture(scope="module")
def client(served: ServedDocker) -> Iterator[docker.DockerClient]:
    # The API version SAM CLI pins.
    docker_client = docker.DockerClient(base_url=served.host, version="1.35")
    yield docker_client
    docker_client.close()


def lambda_container(client: docker.DockerClient, port: int, **overrides: Any) -> Any:
    """A container as SAM CLI creates one for EchoFunction."""
    options: dict[str, Any] = {
        "command": [],
        "entrypoint": RIE_ENTRYPOINT,
        "working_dir": "/var/task",
        "volumes": {str(SAM_APP / "echo"): {"bind": "/var/task", "mode": "ro,delegated"}},
        "environment": {
            "AWS_LAMBDA_FUNCTION_HANDLER": "app.handler",
            "AWS_LAMBDA_FUNCTION_NAME": "EchoFunction",
            "AWS_LAMBDA_FUNCTION_TIMEOUT": "5",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "GREETING": "hi",
            "CONFIG_PATH": "/var/task/config.json",
        },
        "ports": {"8080": ("127.0.0.1", port)},
        "tty": False,
    }
    options.update(overrides)
    return client.containers.create(PYTHON_BASE, **options)


def test_ping_version_and_the_python_base_images(client: docker.DockerClient) -> None:
    assert client.ping() is True
    assert client.version()["ApiVersion"] == "1.45"
    base = client.images.get(PYTHON_BASE)
    # SAM CLI compares these two to decide whether its base image is current: they agree, no pull.
    registry = client.images.get_registry_data(PYTHON_BASE)
    assert base.attrs["RepoDigests"] == [f"public.ecr.aws/lambda/python@{registry.id}"]
    assert client.images.pull("public.ecr.aws/lambda/python", tag="3.13").tags == [
        "public.ecr.aws/lambda/python:3.13"
    ]


def test_other_images_are_refused_with_the_reason(client: docker.DockerClient) -> None:
    with pytest.raises(NotFound, match="Python Lambda runtimes only"):
        client.images.pull("public.ecr.aws/lambda/nodejs", tag="20-x86_64")
    with pytest.raises(NotFound, match="nothing is downloaded"):
        client.images.pull("busybox", tag="latest")
    with pytest.raises(ImageNotFound):
        client.images.get("busybox:latest")
    with pytest.raises(BuildError, match="PackageType Image functions cannot run here"):
        client.images.build(fileobj=build_context("FROM busybox\n", {}), custom_context=True)
    with pytest.raises(BuildError, match="runtimes run natively here"):
        client.images.build(
            fileobj=build_context(f"FROM {PYTHON_BASE}\n", {}), custom_context=True, platform="linux/arm64"
        )
    with pytest.raises(BuildError, match="RUN apt-get install -y curl: only the file operations"):
        client.images.build(
            fileobj=build_context(f"FROM {PYTHON_BASE}\nRUN apt-get install -y curl\n", {}),
            custom_context=True,
        )


def build_context(dockerfile: str, files: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def test_a_sam_dockerfile_is_built_on_files_and_seen_in_containers(client: docker.DockerClient) -> None:
    """SAM CLI's invoke image: the emulator ADDed and renamed, two layers merged into /opt."""
    dockerfile = (
        f"FROM {PYTHON_BASE}\n"
        "ADD aws-lambda-rie-x86_64 /var/rapid/\n"
        "RUN mv /var/rapid/aws-lambda-rie-x86_64 /var/rapid/aws-lambda-rie"
        " && chmod +x /var/rapid/aws-lambda-rie\n"
        "ADD first /opt\n"
        "ADD second /tmp/layer1\n"
        "RUN cp -rf /tmp/layer1/. /opt/ && rm -rf /tmp/layer1\n"
    )
    files = {
        "aws-lambda-rie-x86_64/aws-lambda-rie-x86_64": find_rie_binary().read_bytes(),
        "first/python/first.py": b"NAME = 'first'\n",
        "second/python/second.py": b"NAME = 'second'\n",
    }
    image, _ = client.images.build(
        fileobj=build_context(dockerfile, files),
        custom_context=True,
        tag="samcli/lambda-python:3.12-x86_64-test",
    )
    assert image.tags == ["samcli/lambda-python:3.12-x86_64-test"]
    container = client.containers.create(
        "samcli/lambda-python:3.12-x86_64-test",
        entrypoint=RIE_ENTRYPOINT,
        environment={"AWS_LAMBDA_FUNCTION_HANDLER": "app.handler"},
        ports={"8080": ("127.0.0.1", free_port())},
    )
    try:
        stream, stat = container.get_archive("/opt/python")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            names = sorted(archive.getnames())
        assert stat["name"] == "python"
        assert names == ["python", "python/first.py", "python/second.py"]
        # Copied in and out of the container's own files (docker cp both ways).
        copied = build_context("", {"notes/hello.txt": b"hello\n"})
        assert container.put_archive("/tmp", copied.getvalue()) is True
        stream, _ = container.get_archive("/tmp/notes/hello.txt")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            member = archive.extractfile("hello.txt")
            assert member is not None
            assert member.read() == b"hello\n"
        read_only = lambda_container(client, free_port())  # /var/task bound read-only, as SAM CLI binds it
        try:
            with pytest.raises(APIError, match="read-only bind mount"):
                read_only.put_archive("/var/task", copied.getvalue())
        finally:
            read_only.remove()
    finally:
        container.remove()


def stdout_of(frames: list[tuple[bytes | None, bytes | None]]) -> bytes:
    return b"".join(out for out, _ in list(frames) if out)


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_container_runs_as_an_execution_environment(client: docker.DockerClient) -> None:
    port = free_port()
    started = time.time()
    container = lambda_container(client, port)
    assert container.status == "created"
    frames: list[tuple[bytes | None, bytes | None]] = []
    try:
        container.start()

        def follow() -> None:
            for frame in container.attach(stream=True, logs=True, demux=True):
                frames.append(frame)

        attached = threading.Thread(target=follow, daemon=True)
        attached.start()
        response = requests.post(f"http://127.0.0.1:{port}{INVOCATIONS}", json={"n": 1}, timeout=60)
        assert response.json() == {
            "event": {"n": 1},
            "settings": {"colour": "green"},
            "function_name": "EchoFunction",
            "memory_mb": "256",
            "sam_local": None,
        }
        container.reload()
        assert container.status == "running"
        assert container.attrs["NetworkSettings"]["Ports"] == {
            "8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]
        }
        # The emulator writes its REPORT line after it has answered, as in a container on Docker.
        assert wait_until(lambda: b"REPORT RequestId: " in stdout_of(frames), timeout=10)
        container.stop(timeout=3)
        attached.join(timeout=10)
        assert b"hi from EchoFunction\n" in stdout_of(frames)
        assert container.wait(timeout=10)["StatusCode"] == container.attrs["State"]["ExitCode"]
        container.reload()
        assert container.status == "exited"
        assert b"START RequestId: " in container.logs()
    finally:
        container.remove(force=True)
    assert client.containers.list(all=True) == []
    events = client.events(since=int(started), until=int(time.time()) + 1, decode=True)
    actions = [event["Action"] for event in events if event.get("id") == container.id]
    assert actions == ["create", "start", "die", "destroy"]


def test_what_a_container_cannot_do_is_refused_at_create(client: docker.DockerClient, tmp_path: Path) -> None:
    with pytest.raises(APIError, match=r"port 5890/tcp: debugging ports \(sam local --debug-port\)") as debug:
        lambda_container(client, free_port(), ports={"8080": ("127.0.0.1", free_port()), "5890": 5890})
    assert debug.value.status_code == 400
    with pytest.raises(APIError, match="bind source path does not exist"):
        lambda_container(client, free_port(), volumes={str(tmp_path / "gone"): {"bind": "/var/task"}})
    with pytest.raises(APIError, match="a container runs as a Lambda execution environment here"):
        lambda_container(client, free_port(), entrypoint=["/bin/sh", "-c", "sleep 1"])
    assert client.containers.list(all=True) == []


def test_a_host_port_in_use_is_answered_as_docker_does(client: docker.DockerClient) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        container = lambda_container(client, holder.getsockname()[1])
        try:
            # SAM CLI recognises these words and reports the port as in use.
            with pytest.raises(APIError, match="Ports are not available"):
                container.start()
        finally:
            container.remove(force=True)


def test_attach_replays_output_framed_per_stream(served: ServedDocker, client: docker.DockerClient) -> None:
    """The raw multiplexed frames after the upgrade: 8-byte header (stream, size), one line each."""
    port = free_port()
    container = lambda_container(client, port)
    container.start()
    try:
        requests.post(f"http://127.0.0.1:{port}{INVOCATIONS}", json={}, timeout=60)
        # The emulator writes its REPORT line after it has answered: a stop sent at once can come first.
        assert wait_until(lambda: b"REPORT RequestId: " in container.logs(), timeout=30)
        container.stop(timeout=3)
        frames = list(client.api.attach(container.id, stream=True, logs=True, demux=False))
        assert frames
        assert all(frame.endswith(b"\n") and frame.count(b"\n") == 1 for frame in frames)
        assert any(frame.startswith(b"REPORT RequestId: ") for frame in frames)
    finally:
        container.remove(force=True)


def test_every_version_prefix_and_none(client: docker.DockerClient) -> None:
    session = client.api  # a requests session on the unix socket; base_url carries no version
    for path in ("/_ping", "/v1.35/_ping", "/v1.45/_ping"):
        assert session.get(f"{session.base_url}{path}", timeout=10).text == "OK"
    missing = session.get(f"{session.base_url}/v1.35/containers/nope/json", timeout=10)
    assert missing.status_code == 404
    assert json.loads(missing.text) == {"message": "No such container: nope"}


def test_a_stopped_container_starts_again_as_docker_restarts_it(client: docker.DockerClient) -> None:
    port = free_port()
    container = lambda_container(client, port)
    try:
        for attempt in (1, 2):
            container.start()
            answer = requests.post(
                f"http://127.0.0.1:{port}{INVOCATIONS}", json={"attempt": attempt}, timeout=60
            )
            assert answer.json()["event"] == {"attempt": attempt}
            container.stop(timeout=3)
        container.reload()
        assert container.status == "exited"
        assert container.logs().count(b"START RequestId: ") == 2
    finally:
        container.remove(force=True)
