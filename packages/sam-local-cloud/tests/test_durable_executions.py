"""Lambda durable executions on the local Lambda service: Invoke with an execution name starts one, its
replays run in the function's real runtime under the account quota, and boto3's durable execution
operations (get, history, list by function, stop, callbacks) answer as botocore's model defines them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.child_dispatcher import ChainedInvokeRequest, RunInvocation
from botocore.exceptions import ClientError

from sam_local_cloud.lambda_service import FunctionSpec, TooManyRequestsError
from sam_local_cloud.lambda_service.durable import ServiceChildDispatcher
from sam_local_cloud.stack.template import load_stack

DURABLE_FUNCTIONS = Path(__file__).resolve().parent / "durable_functions"
DURABLE = {"ExecutionTimeout": 120}
# The fixture serve_lambda (served_lambda.py) returns its ServedLambda (service, endpoint, client()).
ServedLambda = Any


def order_flow() -> FunctionSpec:
    return FunctionSpec(
        "OrderFlow", "order_flow.handler", DURABLE_FUNCTIONS, timeout_seconds=30, durable_config=DURABLE
    )


def doubler() -> FunctionSpec:
    return FunctionSpec("Doubler", "doubler.handler", DURABLE_FUNCTIONS, timeout_seconds=10)


def approval_flow() -> FunctionSpec:
    return FunctionSpec(
        "ApprovalFlow", "approval_flow.handler", DURABLE_FUNCTIONS, timeout_seconds=30, durable_config=DURABLE
    )


def busy_parent() -> FunctionSpec:
    return FunctionSpec(
        "BusyParent", "busy_parent.handler", DURABLE_FUNCTIONS, timeout_seconds=30, durable_config=DURABLE
    )


def wait_for(predicate: Callable[[], Any], timeout_seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not true within {timeout_seconds} s")


def history(client: Any, arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    return events


def callback_id(client: Any, arn: str) -> str:
    def started() -> str | None:
        for event in history(client, arn):
            if event["EventType"] == "CallbackStarted":
                return str(event["CallbackStartedDetails"]["CallbackId"])
        return None

    return str(wait_for(started))


def ended(client: Any, arn: str) -> dict[str, Any]:
    def terminal() -> dict[str, Any] | None:
        execution: dict[str, Any] = client.get_durable_execution(DurableExecutionArn=arn)
        return execution if execution["Status"] != "RUNNING" else None

    result: dict[str, Any] = wait_for(terminal)
    return result


# -- configuration ----------------------------------------------------------------------------------------


def test_the_templates_durable_config_reaches_get_function_configuration(
    serve_lambda: Callable[..., ServedLambda], tmp_path: Path
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Globals:\n  Function:\n    Runtime: python3.12\n    DurableConfig: {ExecutionTimeout: 600}\n"
        "Resources:\n"
        "  OrderFlow:\n    Type: AWS::Serverless::Function\n"
        f"    Properties: {{CodeUri: {DURABLE_FUNCTIONS}, Handler: order_flow.handler,"
        " DurableConfig: {ExecutionTimeout: 300, RetentionPeriodInDays: 3}}\n"
        "  FromGlobals:\n    Type: AWS::Serverless::Function\n"
        f"    Properties: {{CodeUri: {DURABLE_FUNCTIONS}, Handler: order_flow.handler}}\n"
    )
    stack = load_stack(template)
    served = serve_lambda(stack.functions)
    client = served.client()

    configuration = client.get_function_configuration(FunctionName="OrderFlow")
    from_globals = client.get_function_configuration(FunctionName="FromGlobals")

    assert configuration["DurableConfig"] == {"ExecutionTimeout": 300, "RetentionPeriodInDays": 3}
    assert from_globals["DurableConfig"] == {"ExecutionTimeout": 600, "RetentionPeriodInDays": 14}
    assert not stack.not_honoured


def test_an_execution_name_on_a_function_without_durable_config_is_refused(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([doubler()]).client()

    with pytest.raises(ClientError) as refused:
        client.invoke(FunctionName="Doubler", Payload=b'{"value": 1}', DurableExecutionName="not-durable")

    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"


def test_an_unknown_execution_arn_is_resource_not_found(serve_lambda: Callable[..., ServedLambda]) -> None:
    client = serve_lambda([order_flow()]).client()

    with pytest.raises(ClientError) as missing:
        client.get_durable_execution(DurableExecutionArn="no-such-execution/at-all")

    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# -- a whole execution ------------------------------------------------------------------------------------


def test_a_durable_execution_runs_steps_a_wait_a_map_and_a_chained_invoke_to_success(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    served = serve_lambda([order_flow(), doubler()])
    client = served.client(read_timeout=120)

    answer = client.invoke(
        FunctionName="OrderFlow", Payload=json.dumps({"items": [1, 2, 3, 4]}), DurableExecutionName="batch-1"
    )
    arn = answer["DurableExecutionArn"]
    expected = {"total": 10, "count": 4, "squares": [1, 4, 9, 16], "doubled": {"doubled": 20}}

    assert answer["StatusCode"] == 200
    assert "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == expected
    execution = client.get_durable_execution(DurableExecutionArn=arn)
    assert execution["Status"] == "SUCCEEDED"
    assert execution["DurableExecutionName"] == "batch-1"
    assert json.loads(execution["Result"]) == expected
    assert execution["FunctionArn"].startswith(served.service.registry.arn("OrderFlow"))
    events = history(client, arn)
    types = [event["EventType"] for event in events]
    assert types[0] == "ExecutionStarted"
    assert types[-1] == "ExecutionSucceeded"
    assert types.count("StepSucceeded") == 2
    assert types.count("WaitSucceeded") == 1
    assert types.count("ChainedInvokeSucceeded") == 1
    # The map and each of its four items are child contexts.
    assert types.count("ContextSucceeded") == 5
    # Suspended at the wait and at the chained invoke, so three invocations of the function's runtime.
    stats = served.service.stats(include_timeseries=False)["functions"]
    assert stats["OrderFlow"]["invocations"] == 3
    assert stats["Doubler"]["invocations"] == 1
    listed = client.list_durable_executions_by_function(FunctionName="OrderFlow")["DurableExecutions"]
    assert [(item["DurableExecutionArn"], item["Status"]) for item in listed] == [(arn, "SUCCEEDED")]


def test_the_execution_name_is_idempotent_for_the_same_payload_and_conflicts_for_another(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    served = serve_lambda([order_flow(), doubler()])
    client = served.client(read_timeout=120)
    payload = json.dumps({"items": [2, 3]})

    first = client.invoke(FunctionName="OrderFlow", Payload=payload, DurableExecutionName="same-name")
    again = client.invoke(FunctionName="OrderFlow", Payload=payload, DurableExecutionName="same-name")
    with pytest.raises(ClientError) as conflict:
        client.invoke(FunctionName="OrderFlow", Payload=b'{"items": [9]}', DurableExecutionName="same-name")

    assert again["DurableExecutionArn"] == first["DurableExecutionArn"]
    assert json.loads(again["Payload"].read())["total"] == 5
    assert conflict.value.response["Error"]["Code"] == "DurableExecutionAlreadyStartedException"
    assert conflict.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    listed = client.list_durable_executions_by_function(FunctionName="OrderFlow")["DurableExecutions"]
    assert len(listed) == 1
    assert served.service.stats(include_timeseries=False)["functions"]["OrderFlow"]["invocations"] == 3


def test_a_chained_invoke_of_an_unknown_function_fails_the_execution_with_resource_not_found(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([order_flow()]).client(read_timeout=120)

    answer = client.invoke(
        FunctionName="OrderFlow", Payload=b'{"items": [1], "target": "Nowhere"}', DurableExecutionName="lost"
    )
    events = history(client, answer["DurableExecutionArn"])

    assert answer["FunctionError"] == "Unhandled"
    assert (
        client.get_durable_execution(DurableExecutionArn=answer["DurableExecutionArn"])["Status"] == "FAILED"
    )
    failed = [event for event in events if event["EventType"] == "ChainedInvokeFailed"]
    assert len(failed) == 1
    assert (
        failed[0]["ChainedInvokeFailedDetails"]["Error"]["Payload"]["ErrorType"]
        == "ResourceNotFoundException"
    )


# -- callbacks and stop -----------------------------------------------------------------------------------


def test_a_callback_success_resumes_the_execution_with_its_result(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([approval_flow()]).client()

    started = client.invoke(
        FunctionName="ApprovalFlow",
        InvocationType="Event",
        Payload=b'{"order": "o-1"}',
        DurableExecutionName="a-1",
    )
    arn = started["DurableExecutionArn"]
    callback = callback_id(client, arn)
    heartbeat = client.send_durable_execution_callback_heartbeat(CallbackId=callback)
    client.send_durable_execution_callback_success(CallbackId=callback, Result=b"approved")
    execution = ended(client, arn)

    assert started["StatusCode"] == 202
    assert heartbeat["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert execution["Status"] == "SUCCEEDED"
    assert json.loads(execution["Result"]) == {"order": "o-1", "decision": "approved"}
    assert "CallbackSucceeded" in [event["EventType"] for event in history(client, arn)]
    with pytest.raises(ClientError) as answered_twice:
        client.send_durable_execution_callback_success(CallbackId=callback, Result=b"again")
    assert answered_twice.value.response["Error"]["Code"] == "CallbackTimeoutException"


def test_a_callback_failure_fails_the_execution_with_its_error(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([approval_flow()]).client()

    arn = client.invoke(
        FunctionName="ApprovalFlow",
        InvocationType="Event",
        Payload=b'{"order": "o-2"}',
        DurableExecutionName="a-2",
    )["DurableExecutionArn"]
    client.send_durable_execution_callback_failure(
        CallbackId=callback_id(client, arn), Error={"ErrorType": "Rejected", "ErrorMessage": "over budget"}
    )
    execution = ended(client, arn)

    assert execution["Status"] == "FAILED"
    assert execution["Error"]["ErrorMessage"] == "over budget"
    assert "CallbackFailed" in [event["EventType"] for event in history(client, arn)]


def test_stop_ends_a_suspended_execution_and_its_callback_can_no_longer_be_answered(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([approval_flow()]).client()
    arn = client.invoke(
        FunctionName="ApprovalFlow",
        InvocationType="Event",
        Payload=b'{"order": "o-3"}',
        DurableExecutionName="a-3",
    )["DurableExecutionArn"]
    callback = callback_id(client, arn)

    stopped = client.stop_durable_execution(DurableExecutionArn=arn)
    execution = client.get_durable_execution(DurableExecutionArn=arn)
    with pytest.raises(ClientError) as late:
        client.send_durable_execution_callback_success(CallbackId=callback, Result=b'"too late"')

    assert "StopTimestamp" in stopped
    assert execution["Status"] == "STOPPED"
    # The invocation that created the callback may still be finishing as the stop lands, so its
    # InvocationCompleted can follow; no other event does.
    types = [event["EventType"] for event in history(client, arn)]
    assert types.count("ExecutionStopped") == 1
    assert set(types[types.index("ExecutionStopped") + 1 :]) <= {"InvocationCompleted"}
    assert late.value.response["Error"]["Code"] == "CallbackTimeoutException"
    assert late.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert [
        item["Status"]
        for item in client.list_durable_executions_by_function(FunctionName="ApprovalFlow")[
            "DurableExecutions"
        ]
    ] == ["STOPPED"]


# -- the quota --------------------------------------------------------------------------------------------


def test_listing_by_function_filters_by_every_status_given_and_by_start_time(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    client = serve_lambda([approval_flow()]).client()

    def start(name: str) -> str:
        arn: str = client.invoke(
            FunctionName="ApprovalFlow",
            InvocationType="Event",
            Payload=b'{"order": "o"}',
            DurableExecutionName=name,
        )["DurableExecutionArn"]
        callback_id(client, arn)
        return arn

    waiting = start("waiting")
    between = client.get_durable_execution(DurableExecutionArn=waiting)["StartTimestamp"] + timedelta(
        milliseconds=1
    )
    time.sleep(0.05)
    stopped = start("stopped")
    client.stop_durable_execution(DurableExecutionArn=stopped)

    def listed(**filters: Any) -> list[tuple[str, str]]:
        page = client.list_durable_executions_by_function(FunctionName="ApprovalFlow", **filters)
        return sorted((item["DurableExecutionName"], item["Status"]) for item in page["DurableExecutions"])

    assert listed() == [("stopped", "STOPPED"), ("waiting", "RUNNING")]
    assert listed(Statuses=["RUNNING"]) == [("waiting", "RUNNING")]
    assert listed(Statuses=["STOPPED"]) == [("stopped", "STOPPED")]
    assert listed(Statuses=["RUNNING", "STOPPED"]) == [("stopped", "STOPPED"), ("waiting", "RUNNING")]
    assert listed(Statuses=["SUCCEEDED"]) == []
    assert listed(StartedAfter=between) == [("stopped", "STOPPED")]
    assert listed(StartedBefore=between) == [("waiting", "RUNNING")]
    assert listed(StartedAfter=between, Statuses=["RUNNING"]) == []


def test_a_chained_invoke_throttled_at_quota_1_is_retried_and_the_execution_completes(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    served = serve_lambda([busy_parent(), doubler()], account_concurrency=1)
    client = served.client(read_timeout=120)

    answer = client.invoke(
        FunctionName="BusyParent", Payload=b'{"value": 21, "hold_seconds": 1}', DurableExecutionName="busy-1"
    )

    assert json.loads(answer["Payload"].read()) == {"doubled": {"doubled": 42}, "held": 1}
    stats = served.service.stats(include_timeseries=False)
    # The parent held the only slot in its step while Lambda invoked Doubler: 429s, retried, then run once.
    assert stats["functions"]["Doubler"]["throttles"].get("ConcurrentInvocationLimitExceeded", 0) >= 1
    assert stats["functions"]["Doubler"]["invocations"] == 1
    assert stats["functions"]["BusyParent"]["concurrency"]["max"] == 1
    events = history(client, answer["DurableExecutionArn"])
    assert [event["EventType"] for event in events].count("ChainedInvokeSucceeded") == 1


def test_a_replay_throttled_while_the_slot_is_held_runs_once_the_slot_frees(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    served = serve_lambda([doubler()], account_concurrency=1)
    holder = threading.Thread(
        target=lambda: served.service.invoke("Doubler", b'{"value": 1, "hold_seconds": 1.5}'), daemon=True
    )
    holder.start()
    wait_for(
        lambda: served.service.stats(include_timeseries=False)["functions"]["Doubler"]["concurrency"][
            "current"
        ]
    )

    answer = served.service.run_durable_invocation("Doubler", b'{"value": 4}')
    holder.join(timeout=30)

    assert json.loads(answer.payload) == {"doubled": 8}
    assert served.service.stats(include_timeseries=False)["functions"]["Doubler"]["throttles_total"] >= 1


def test_a_chained_invoke_still_throttled_when_the_budget_runs_out_fails_with_the_429s_code() -> None:
    def always_throttled(_identifier: str, _payload: bytes) -> Any:
        raise TooManyRequestsError("ConcurrentInvocationLimitExceeded")

    dispatcher = ServiceChildDispatcher(resolve=lambda name: doubler(), run_invocation=always_throttled)
    request = ChainedInvokeRequest(
        parent_execution_arn="parent",
        operation_id="op-1",
        function_name="Doubler",
        tenant_id=None,
        payload='{"value": 1}',
        account_id="123456789012",
    )

    dispatched = dispatcher.dispatch(request)
    assert isinstance(dispatched, RunInvocation)
    outcome = dispatched.invocation()

    assert outcome.error is not None
    assert outcome.error.type == "TooManyRequestsException"
    assert outcome.error.message == "Rate Exceeded."


# -- through the local cloud ------------------------------------------------------------------------------


def test_a_templates_durable_function_runs_on_the_local_cloud_under_its_role(tmp_path: Path) -> None:
    from sam_local_cloud import LocalCloud, LocalCloudConfig

    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Globals:\n  Function:\n    Runtime: python3.12\n    Timeout: 30\n"
        "Resources:\n"
        "  OrderFlow:\n    Type: AWS::Serverless::Function\n"
        "    Properties:\n"
        "      FunctionName: OrderFlow\n"
        f"      CodeUri: {DURABLE_FUNCTIONS}\n"
        "      Handler: order_flow.handler\n"
        "      DurableConfig: {ExecutionTimeout: 300}\n"
        "      Policies:\n"
        "        - LambdaInvokePolicy: {FunctionName: !Ref Doubler}\n"
        "  Unpermitted:\n    Type: AWS::Serverless::Function\n"
        f"    Properties: {{FunctionName: Unpermitted, CodeUri: {DURABLE_FUNCTIONS},"
        " Handler: order_flow.handler, DurableConfig: {ExecutionTimeout: 300}}\n"
        "  Doubler:\n    Type: AWS::Serverless::Function\n"
        f"    Properties: {{FunctionName: Doubler, CodeUri: {DURABLE_FUNCTIONS}, Handler: doubler.handler}}\n"
    )
    with LocalCloud(
        LocalCloudConfig(template=template, state_dir=tmp_path / "state", dynamodb_process=False)
    ) as cloud:
        client = cloud.client("lambda", read_timeout=120, retries={"total_max_attempts": 1})

        answer = client.invoke(
            FunctionName="OrderFlow", Payload=b'{"items": [5, 6]}', DurableExecutionName="cloud-1"
        )
        execution = client.get_durable_execution(DurableExecutionArn=answer["DurableExecutionArn"])
        refused = client.invoke(
            FunctionName="Unpermitted", Payload=b'{"items": [1]}', DurableExecutionName="no-role"
        )
        refused_events = history(client, refused["DurableExecutionArn"])

    assert json.loads(answer["Payload"].read())["doubled"] == {"doubled": 22}
    assert execution["Status"] == "SUCCEEDED"
    # Unpermitted's role has no lambda:InvokeFunction on Doubler: its chained invoke fails as Lambda's would.
    assert refused["FunctionError"] == "Unhandled"
    failed = [event for event in refused_events if event["EventType"] == "ChainedInvokeFailed"]
    assert len(failed) == 1
    assert failed[0]["ChainedInvokeFailedDetails"]["Error"]["Payload"]["ErrorType"] == "AccessDeniedException"
