"""`sam local invoke` on small functions: container paths, a local layer, a timeout, and what is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from samlocal_support import SAM_APP, ServedDocker, record_calls, run_sam

# About 50 s of SAM CLI start-ups; test_docker_engine_api.py checks the same at the Docker API.
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def docker(serve_docker: Any) -> ServedDocker:
    served: ServedDocker = serve_docker()
    return served


def invoke(docker: ServedDocker, function: str, event: dict[str, Any], *options: str) -> Any:
    return run_sam(
        docker, ["local", "invoke", function, "-e", "-", *options], cwd=SAM_APP, stdin=json.dumps(event)
    )


def test_container_paths_and_variables_are_the_functions(docker: ServedDocker) -> None:
    """CONFIG_PATH=/var/task/config.json reads the file SAM CLI mounted; SAM CLI's variables arrive."""
    result = invoke(docker, "EchoFunction", {"name": "Ada"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "event": {"name": "Ada"},
        "settings": {"colour": "green"},
        "function_name": "EchoFunction",
        "memory_mb": "128",
        "sam_local": "true",
    }
    assert "hello from EchoFunction" in result.stderr


def test_a_local_layer_is_on_the_functions_path(request: pytest.FixtureRequest, docker: ServedDocker) -> None:
    mark = docker.mark()
    result = invoke(docker, "LayeredFunction", {"name": "Ada"})
    record_calls(request, docker.calls_since(mark))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"greeting": "hello Ada, from the layer"}
    # SAM CLI built its image with the layer ADDed to /opt; the build answered in Docker's progress lines.
    assert "samcli/lambda-python:3.12-x86_64-" in result.stderr
    assert any(call.route == "POST /build" and call.status == 200 for call in docker.calls_since(mark))


def test_a_function_past_its_timeout_is_stopped(docker: ServedDocker) -> None:
    result = invoke(docker, "SlowFunction", {})
    assert "sleeping past the timeout" in result.stderr
    assert "Function 'SlowFunction' timed out after 1 seconds" in result.stderr
    assert '"finished"' not in result.stdout
    assert docker.api.containers.summaries(include_stopped=True, filters={}) == []


@pytest.mark.parametrize(
    ("function", "options", "refusal"),
    [
        pytest.param(
            "NodeFunction",
            (),
            "Error building docker image: FROM public.ecr.aws/lambda/nodejs:20-x86_64: No such image: "
            "public.ecr.aws/lambda/nodejs:20-x86_64 (the local execution environments run Python Lambda "
            "runtimes only",
            id="non-Python runtime",
        ),
        pytest.param(
            "ImageFunction",
            (),
            "Error building docker image: FROM orderbatch-echo:latest: PackageType Image functions cannot "
            "run here",
            id="image function",
        ),
        pytest.param(
            "EchoFunction",
            ("--debug-port", "5890"),
            "Error: Container creation failed: port 5890/tcp: debugging ports (sam local --debug-port) are "
            "not supported",
            id="debug port",
        ),
    ],
)
def test_what_cannot_run_here_is_refused_with_the_reason(
    request: pytest.FixtureRequest,
    docker: ServedDocker,
    function: str,
    options: tuple[str, ...],
    refusal: str,
) -> None:
    mark = docker.mark()
    result = invoke(docker, function, {}, *options)
    record_calls(request, docker.calls_since(mark))
    assert result.returncode == 1
    assert refusal in result.stderr
    assert docker.api.containers.summaries(include_stopped=True, filters={}) == []
