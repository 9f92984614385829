"""The endpoint serves callers only once the whole template is deployed; until then it answers 503."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig
from sam_local_cloud.cli import HEALTH_PATH

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"


def _client(endpoint: str, service: str, **config: Any) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint,
        region_name="us-east-1",
        **DUMMY_CREDENTIALS,
        config=Config(**config),
    )


def _health(endpoint: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(endpoint + HEALTH_PATH, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class _CallInThread:
    """Makes one call on a thread, so a caller can wait while the deployment goes on."""

    def __init__(self) -> None:
        self._outcome: dict[str, Any] = {}
        self._thread: threading.Thread | None = None

    def start(self, call: Callable[[], Any]) -> None:
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._outcome["value"] = call()
        except Exception as error:
            self._outcome["error"] = error

    def result(self, timeout: float) -> Any:
        assert self._thread is not None, "the call was never started"
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the call did not return within {timeout} s"
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome["value"]


def test_callers_get_503_until_every_resource_is_deployed_then_see_all_of_them(tmp_path: Path) -> None:
    seen_while_deploying: dict[str, Any] = {}
    cloud: LocalCloud | None = None
    waiting_caller = _CallInThread()

    def look_from_outside(logical_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        # Called mid-deployment, just before the state machine is created: tables exist, machines do not.
        assert cloud is not None
        no_retries = {"retries": {"total_max_attempts": 1, "mode": "standard"}}
        for service, call in [
            ("stepfunctions", lambda client: client.list_state_machines()),
            ("dynamodb", lambda client: client.list_tables()),
            ("s3", lambda client: client.list_buckets()),
            ("lambda", lambda client: client.list_functions()),
        ]:
            try:
                call(_client(cloud.endpoint, service, **no_retries))
                seen_while_deploying[service] = "served"
            except ClientError as error:
                seen_while_deploying[service] = (
                    error.response["ResponseMetadata"]["HTTPStatusCode"],
                    error.response["Error"]["Code"],
                )
        seen_while_deploying["health"] = _health(cloud.endpoint)
        # A client with standard retries, started now, rides out the deployment and sees the machine.
        patient = _client(
            cloud.endpoint, "stepfunctions", retries={"total_max_attempts": 6, "mode": "standard"}
        )
        waiting_caller.start(patient.list_state_machines)
        return definition

    config = LocalCloudConfig(
        template=TEMPLATE, port=0, state_dir=tmp_path / "state", definition_transform=look_from_outside
    )
    cloud = LocalCloud(config)
    with cloud:
        assert seen_while_deploying["stepfunctions"] == (503, "ServiceUnavailableException")
        assert seen_while_deploying["dynamodb"] == (503, "ServiceUnavailableException")
        assert seen_while_deploying["lambda"] == (503, "ServiceUnavailableException")
        assert seen_while_deploying["s3"] == (503, "ServiceUnavailable")
        assert seen_while_deploying["health"] == (503, {"status": "deploying"})

        assert [m["name"] for m in waiting_caller.result(timeout=30)["stateMachines"]] == [
            m.name for m in cloud.stack.state_machines
        ]
        assert _health(cloud.endpoint) == (200, {"status": "deployed"})
        machines = _client(cloud.endpoint, "stepfunctions").list_state_machines()["stateMachines"]
        assert [machine["name"] for machine in machines] == [m.name for m in cloud.stack.state_machines]
        functions = _client(cloud.endpoint, "lambda").list_functions()["Functions"]
        assert len(functions) == len(cloud.stack.functions)
