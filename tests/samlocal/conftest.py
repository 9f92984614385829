"""Fixtures of the sam local tests: the Docker-free Docker API, served in-process on a unix socket.

No Docker engine is involved anywhere: every container SAM CLI asks for runs as a local execution
environment.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from samlocal_support import ServedDocker

from sam_local_cloud.docker_api import DockerApi, DockerApiServer, ExecutionEnvironments


@pytest.fixture(scope="module")
def serve_docker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ServedDocker]]:
    """Factory: ``serve_docker(aws_endpoint_url=..., isolate=...)``; servers and their processes stop after
    the module. ``isolate=False`` runs containers without mount namespaces of their own."""
    served: list[tuple[ServedDocker, str]] = []

    def serve(aws_endpoint_url: str | None = None, isolate: bool | None = None) -> ServedDocker:
        state_dir = tmp_path_factory.mktemp("docker-state")
        environments = ExecutionEnvironments(
            state_dir / "logs", aws_endpoint_url=aws_endpoint_url, isolate=isolate
        )
        api = DockerApi(state_dir, environments)
        # Unix socket paths are limited to about 100 characters: pytest's folders can be longer.
        socket_folder = tempfile.mkdtemp(prefix="obdk-")
        server = DockerApiServer(api, socket_path=Path(socket_folder) / "docker.sock").start()
        docker = ServedDocker(api, server)
        served.append((docker, socket_folder))
        return docker

    yield serve
    for docker, socket_folder in served:
        docker.server.close()
        shutil.rmtree(socket_folder, ignore_errors=True)
