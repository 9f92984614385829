"""Lambda Task results and errors as Step Functions records them on AWS.

Shapes from executions recorded against AWS (public test suites' snapshots): a ``lambda:invoke`` result
carries the Invoke response's metadata; a function error's cause is compact JSON through ``lambda:invoke``
and the runtime's own text through a bare function ARN; Lambda API errors read
``<message> (Service: AWSLambda; Status Code: <n>; Error Code: <code>; Request ID: <uuid>; Proxy: null)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "task_shape_fixtures" / "template.yaml"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(template=TEMPLATE, port=0, state_dir=tmp_path_factory.mktemp("state"))
    with LocalCloud(config) as running:
        yield running


def run(cloud: LocalCloud, logical_id: str, document: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    sfn = cloud.client("stepfunctions")
    arn = cloud.stack.state_machine(logical_id).arn
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(document))["executionArn"]
    wait_for_execution(sfn, execution, timeout=60, poll_seconds=0.1)
    described = sfn.describe_execution(executionArn=execution)
    return described, sfn.get_execution_history(executionArn=execution)["events"]


def test_a_lambda_invoke_result_carries_the_invoke_responses_metadata(cloud: LocalCloud) -> None:
    described, _ = run(cloud, "InvokeStateMachine", {"order_id": "o-1"})

    assert described["status"] == "SUCCEEDED"
    output = json.loads(described["output"])
    assert list(output) == [
        "ExecutedVersion", "Payload", "SdkHttpMetadata", "SdkResponseMetadata", "StatusCode"
    ]  # fmt: skip
    assert (output["ExecutedVersion"], output["StatusCode"]) == ("$LATEST", 200)
    assert output["Payload"] == {"order_id": "o-1", "accepted": True}
    request_id = output["SdkResponseMetadata"]["RequestId"]
    assert re.fullmatch(UUID, request_id)
    metadata = output["SdkHttpMetadata"]
    assert metadata["HttpStatusCode"] == 200
    assert list(metadata["AllHttpHeaders"]) == [
        "X-Amz-Executed-Version", "x-amzn-Remapped-Content-Length", "Connection", "x-amzn-RequestId",
        "Content-Length", "Date", "X-Amzn-Trace-Id", "Content-Type",
    ]  # fmt: skip
    headers = metadata["HttpHeaders"]
    assert headers["x-amzn-RequestId"] == request_id
    assert headers["Content-Length"] == str(len(json.dumps(output["Payload"])))
    assert metadata["AllHttpHeaders"]["Content-Type"] == ["application/json"]


def test_a_function_error_through_lambda_invoke_has_a_compact_json_cause(cloud: LocalCloud) -> None:
    described, events = run(cloud, "InvokeFailingStateMachine", {"order_id": "o-2"})

    assert (described["status"], described["error"]) == ("FAILED", "OrderRejectedError")
    failed = next(e for e in events if e["type"] == "TaskFailed")["taskFailedEventDetails"]
    assert failed["cause"].startswith('{"errorMessage":"order o-2 rejected","errorType":"OrderRejectedError"')
    assert ", " not in failed["cause"].split('"stackTrace"')[0]


def test_a_function_error_through_a_bare_arn_keeps_the_runtimes_own_text(cloud: LocalCloud) -> None:
    described, events = run(cloud, "BareArnFailingStateMachine", {"order_id": "o-3"})

    assert (described["status"], described["error"]) == ("FAILED", "OrderRejectedError")
    failed = next(e for e in events if e["type"] == "LambdaFunctionFailed")
    cause = failed["lambdaFunctionFailedEventDetails"]["cause"]
    assert cause.startswith('{"errorMessage": "order o-3 rejected", "errorType": "OrderRejectedError", ')
    assert described["cause"] == cause


def test_a_missing_function_fails_the_task_naming_its_latest_version(cloud: LocalCloud) -> None:
    described, _ = run(cloud, "InvokeMissingStateMachine", {})

    assert (described["status"], described["error"]) == ("FAILED", "Lambda.ResourceNotFoundException")
    assert re.fullmatch(
        rf"Function not found: arn:aws:lambda:us-east-1:{cloud.account_id}:function:NoSuchFunction:\$LATEST "
        rf"\(Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; "
        rf"Request ID: {UUID}; Proxy: null\)",
        described["cause"],
    ), described["cause"]


def test_a_throttled_invoke_fails_with_lambdas_429_cause(cloud: LocalCloud) -> None:
    described, _ = run(cloud, "InvokeThrottledStateMachine", {})

    assert (described["status"], described["error"]) == ("FAILED", "Lambda.TooManyRequestsException")
    assert re.fullmatch(
        r"Rate Exceeded\. \(Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; "
        rf"Request ID: {UUID}; Proxy: null\)",
        described["cause"],
    ), described["cause"]


def test_a_throttled_bare_arn_task_fails_as_through_lambda_invoke_and_its_retry_matches(
    cloud: LocalCloud,
) -> None:
    """moto names a refused Invoke ``Exception`` for a bare function ARN; AWS names it as for
    ``lambda:invoke``, so a Retry on ``Lambda.TooManyRequestsException`` must see it."""
    described, events = run(cloud, "BareArnThrottledStateMachine", {})

    failures = [e["lambdaFunctionFailedEventDetails"] for e in events if e["type"] == "LambdaFunctionFailed"]
    assert [failure["error"] for failure in failures] == ["Lambda.TooManyRequestsException"] * 2
    assert (described["status"], described["error"]) == ("FAILED", "Lambda.TooManyRequestsException")
    assert re.fullmatch(
        r"Rate Exceeded\. \(Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; "
        rf"Request ID: {UUID}; Proxy: null\)",
        failures[-1]["cause"],
    ), failures[-1]["cause"]
