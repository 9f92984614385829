"""Fixtures for the HTTP API handler and the batch summarizer, against moto in-process."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from handlers import clients
from handlers.environment import forget_loaded_environments
from sam_local_cloud.moto_seam.testing import mock_aws

EVENTS = Path(__file__).resolve().parents[3] / "events"
REGION = "us-east-1"
RESULTS_BUCKET = "orderbatch-results"
SOURCE_BUCKET = "orderbatch-uploads"
IDEMPOTENCY_TABLE = "orderbatch-idempotency"
# Powertools reads these when the handler module is imported, before any fixture runs.
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "OrderBatchTests")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "orderbatch-tests")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


@dataclass
class FakeLambdaContext:
    function_name: str = "orderbatch-functional-tests"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:orderbatch-functional-tests"
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Cloud:
    sfn: Any
    s3: Any
    state_machine_arn: str
    source_bucket: str = SOURCE_BUCKET
    results_bucket: str = RESULTS_BUCKET
    events: Path = EVENTS

    def executions(self) -> list[dict[str, Any]]:
        return self.sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def cloud(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cloud]:
    """moto with a state machine, the source and results buckets and the idempotency table.

    moto does not run executions unless a test asks for it with
    ``@pytest.mark.parametrize("cloud", [{"execute": True}], indirect=True)``.
    """
    execute = getattr(request, "param", {}).get("execute", False)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "RESULTS_BUCKET_NAME": RESULTS_BUCKET,
        "IDEMPOTENCY_TABLE_NAME": IDEMPOTENCY_TABLE,
        "AWS_LAMBDA_FUNCTION_NAME": FakeLambdaContext.function_name,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": execute}}):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        state_machine_arn = sfn.create_state_machine(
            name="OrderBatch",
            definition=json.dumps(
                {"StartAt": "Summarize", "States": {"Summarize": {"Type": "Pass", "End": True}}}
            ),
            roleArn="arn:aws:iam::123456789012:role/orderbatch-state-machine",
        )["stateMachineArn"]
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=SOURCE_BUCKET)
        s3.create_bucket(Bucket=RESULTS_BUCKET)
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=IDEMPOTENCY_TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        monkeypatch.setenv("STATE_MACHINE_ARN", state_machine_arn)
        new_cold_start()
        yield Cloud(sfn=sfn, s3=s3, state_machine_arn=state_machine_arn)
    new_cold_start()


def new_cold_start() -> None:
    """The handlers read their environment again and build new clients, bound to this test's moto."""
    forget_loaded_environments()
    clients.forget_clients()


@pytest.fixture
def http_event() -> Callable[..., dict[str, Any]]:
    """HTTP API (payload 2.0) events, built from the samples in events/ so the samples stay truthful."""
    post_sample = json.loads((EVENTS / "batches_api_post.json").read_text())
    get_sample = json.loads((EVENTS / "batches_api_get.json").read_text())

    def build(
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = "application/json",
    ) -> dict[str, Any]:
        event = copy.deepcopy(post_sample if method == "POST" else get_sample)
        event["rawPath"] = path
        event["requestContext"]["http"]["method"] = method
        event["requestContext"]["http"]["path"] = path
        event["headers"].pop("content-type", None)
        event.pop("body", None)
        if content_type is not None:
            event["headers"]["content-type"] = content_type
        if body is not None:
            event["body"] = body if isinstance(body, str) else json.dumps(body)
            event["headers"]["content-length"] = str(len(event["body"].encode()))
        if method == "GET":
            event["pathParameters"] = {"batch_id": path.rsplit("/", 1)[-1]}
        return event

    return build
