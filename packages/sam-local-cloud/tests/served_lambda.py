"""The Lambda service served over WSGI on a free loopback port, with the probe function recording its runs.

The fixtures of the Lambda service's tests: this folder's conftest.py makes them available here, and the
app's local cloud tests (tests/localcloud/conftest.py) import them from this module.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from werkzeug.serving import BaseWSGIServer, make_server

from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service import FunctionSpec, LambdaService

FIXTURE_FUNCTIONS = Path(__file__).resolve().parent / "fixture_functions"


def probe_spec(name: str, run_log: Path, **options: Any) -> FunctionSpec:
    """The probe handler, appending one JSON line per body run to ``run_log``."""
    environment = {"PROBE_RUN_LOG": str(run_log), **options.pop("environment", {})}
    return FunctionSpec(name, "probe.handler", FIXTURE_FUNCTIONS, environment=environment, **options)


@dataclass
class ServedLambda:
    service: LambdaService
    endpoint: str
    run_log: Path

    def client(self, **config: Any) -> Any:
        """A Lambda client for this service; retries off unless ``retries`` is given."""
        settings: dict[str, Any] = {
            "retries": {"total_max_attempts": 1, "mode": "standard"},
            "read_timeout": 30,
            "max_pool_connections": 20,
            **config,
        }
        return boto3.client(
            "lambda",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            **DUMMY_CREDENTIALS,
            config=Config(**settings),
        )

    def runs(self, function_name: str | None = None) -> list[dict[str, Any]]:
        """Every body run the probe recorded, optionally for one function."""
        if not self.run_log.exists():
            return []
        records = [json.loads(line) for line in self.run_log.read_text().splitlines() if line]
        return [r for r in records if function_name is None or r["function"] == function_name]


@pytest.fixture
def serve_lambda(tmp_path: Path) -> Iterator[Callable[..., ServedLambda]]:
    """Factory: ``serve_lambda([specs], **LambdaService options)``; everything is closed after the test."""
    started: list[tuple[LambdaService, BaseWSGIServer, threading.Thread]] = []

    def serve(functions: list[FunctionSpec], **options: Any) -> ServedLambda:
        server = make_server("127.0.0.1", 0, lambda environ, start_response: [], threaded=True)
        endpoint = f"http://127.0.0.1:{server.server_port}"
        options.setdefault("log_dir", tmp_path / "logs")
        service = LambdaService(functions, endpoint_url=endpoint, **options)
        server.app = service
        thread = threading.Thread(target=server.serve_forever, name="lambda-test-server", daemon=True)
        thread.start()
        started.append((service, server, thread))
        return ServedLambda(service, endpoint, tmp_path / "runs.jsonl")

    yield serve
    for service, server, thread in started:
        service.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def run_log(tmp_path: Path) -> Path:
    return tmp_path / "runs.jsonl"


@pytest.fixture
def probe_function(run_log: Path) -> Callable[..., FunctionSpec]:
    """Factory: ``probe_function(name, **FunctionSpec options)`` recording its runs in ``run_log``."""
    return lambda name, **options: probe_spec(name, run_log, **options)
