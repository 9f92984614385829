"""The local Lambda service through boto3: quota, reserved concurrency, errors, timeouts, environments."""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest
from botocore.exceptions import ClientError

Serve = Callable[..., Any]
Probe = Callable[..., Any]


def invoke_outcome(client: Any, function_name: str, event: dict[str, Any]) -> dict[str, Any]:
    """What the caller saw: status, function error and payload, or the API error."""
    try:
        response = client.invoke(FunctionName=function_name, Payload=json.dumps(event).encode())
    except ClientError as error:
        return {
            "status": error.response["ResponseMetadata"]["HTTPStatusCode"],
            "code": error.response["Error"]["Code"],
            "message": error.response["Error"]["Message"],
            "reason": error.response.get("Reason"),
            "type": error.response.get("Type"),
        }
    return {
        "status": response["StatusCode"],
        "function_error": response.get("FunctionError"),
        "payload": json.loads(response["Payload"].read()),
        "version": response.get("ExecutedVersion"),
    }


def concurrently(calls: list[Callable[[], dict[str, Any]]]) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def test_calls_over_the_account_quota_are_throttled_before_they_run(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    # Given an account quota of 10 and a handler busy for 3 seconds
    served = serve_lambda([probe_function("Slow", timeout_seconds=10)], account_concurrency=10)
    client = served.client()

    # When 12 callers invoke it at once
    outcomes = concurrently(
        [partial(invoke_outcome, client, "Slow", {"sleep": 3, "call": i}) for i in range(12)]
    )

    # Then exactly 10 ran and 2 got AWS's throttling error, without running
    assert Counter(o["status"] for o in outcomes) == {200: 10, 429: 2}
    throttled = [o for o in outcomes if o["status"] == 429]
    assert {(o["code"], o["reason"], o["type"], o["message"]) for o in throttled} == {
        ("TooManyRequestsException", "ConcurrentInvocationLimitExceeded", "User", "Rate Exceeded.")
    }
    assert len(served.runs("Slow")) == 10
    stats = served.service.stats()["functions"]["Slow"]
    assert stats["invocations"] == 10
    assert stats["throttles"] == {"ConcurrentInvocationLimitExceeded": 2}
    assert stats["concurrency"]["max"] == 10
    assert stats["cold_starts"] == 10


def test_reserved_concurrency_caps_one_function_and_leaves_others_running(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    # Given a function with 2 reserved executions and another without reservation
    served = serve_lambda(
        [probe_function("Reserved", reserved_concurrency=2), probe_function("Other")],
        account_concurrency=10,
    )
    client = served.client()

    # When three calls reach the reserved function and one the other function at the same time
    outcomes = concurrently(
        [lambda: invoke_outcome(client, "Reserved", {"sleep": 2}) for _ in range(3)]
        + [lambda: invoke_outcome(client, "Other", {"sleep": 1})]
    )

    # Then the third reserved call is throttled for the reservation, the other function runs
    reserved, other = outcomes[:3], outcomes[3]
    assert Counter(o["status"] for o in reserved) == {200: 2, 429: 1}
    assert [o["reason"] for o in reserved if o["status"] == 429] == [
        "ReservedFunctionConcurrentInvocationLimitExceeded"
    ]
    assert other["status"] == 200
    assert other["function_error"] is None
    assert len(served.runs("Reserved")) == 2


def test_account_settings_and_function_concurrency_follow_the_api(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("A", reserved_concurrency=2), probe_function("B")])
    client = served.client()

    settings = client.get_account_settings()
    assert settings["AccountLimit"]["ConcurrentExecutions"] == 10
    assert settings["AccountLimit"]["UnreservedConcurrentExecutions"] == 8
    assert settings["AccountUsage"]["FunctionCount"] == 2

    assert client.get_function_concurrency(FunctionName="A")["ReservedConcurrentExecutions"] == 2
    assert "ReservedConcurrentExecutions" not in client.get_function_concurrency(FunctionName="B")

    answer = client.put_function_concurrency(FunctionName="B", ReservedConcurrentExecutions=5)
    assert answer["ReservedConcurrentExecutions"] == 5
    assert client.get_account_settings()["AccountLimit"]["UnreservedConcurrentExecutions"] == 3
    assert client.get_function(FunctionName="B")["Concurrency"] == {"ReservedConcurrentExecutions": 5}

    with pytest.raises(ClientError) as too_much:
        client.put_function_concurrency(FunctionName="A", ReservedConcurrentExecutions=6)
    assert too_much.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert "UnreservedConcurrentExecution below its minimum value of [0]" in str(too_much.value)

    client.delete_function_concurrency(FunctionName="B")
    assert client.get_account_settings()["AccountLimit"]["UnreservedConcurrentExecutions"] == 8
    assert "Concurrency" not in client.get_function(FunctionName="B")


def test_get_and_list_functions_describe_the_configuration(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Described", timeout_seconds=7, memory_mb=256)])
    client = served.client()

    configuration = client.get_function(FunctionName="Described")["Configuration"]
    assert configuration["FunctionName"] == "Described"
    assert configuration["FunctionArn"] == "arn:aws:lambda:us-east-1:123456789012:function:Described"
    assert (configuration["Handler"], configuration["Runtime"]) == ("probe.handler", "python3.12")
    assert (configuration["Timeout"], configuration["MemorySize"]) == (7, 256)
    assert configuration["Environment"]["Variables"]["PROBE_RUN_LOG"] == str(run_log)
    listed = client.list_functions()["Functions"]
    assert [f["FunctionName"] for f in listed] == ["Described"]


def test_every_name_form_reaches_the_function_and_unknown_names_are_not_found(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Named")])
    client = served.client()
    arn = "arn:aws:lambda:us-east-1:123456789012:function:Named"

    for name in ["Named", "Named:$LATEST", "123456789012:function:Named", arn, f"{arn}:$LATEST"]:
        outcome = invoke_outcome(client, name, {"name": name})
        assert (outcome["status"], outcome["function_error"], outcome["version"]) == (200, None, "$LATEST")

    # Invoke names the version it looked for, as AWS does: an unqualified name asked for $LATEST.
    not_found = {
        "Nope": "arn:aws:lambda:us-east-1:123456789012:function:Nope:$LATEST",
        f"{arn}:7": f"{arn}:7",
        "arn:aws:lambda:eu-west-1:123456789012:function:Named": (
            "arn:aws:lambda:eu-west-1:123456789012:function:Named:$LATEST"
        ),
    }
    for missing, described in not_found.items():
        outcome = invoke_outcome(client, missing, {})
        assert (outcome["status"], outcome["code"]) == (404, "ResourceNotFoundException")
        assert outcome["message"] == f"Function not found: {described}"


def test_a_handler_exception_is_a_function_error_with_its_type(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Failing")])

    outcome = invoke_outcome(served.client(), "Failing", {"raise": "no such order"})

    assert (outcome["status"], outcome["function_error"]) == (200, "Unhandled")
    assert outcome["payload"]["errorType"] == "LookupError"
    assert outcome["payload"]["errorMessage"] == "no such order"
    assert served.service.stats()["functions"]["Failing"]["errors"] == 1


def test_a_timed_out_invocation_is_sandbox_timedout_and_the_next_runs_on_a_fresh_runtime(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Short", timeout_seconds=1)])
    client = served.client()

    timed_out = invoke_outcome(client, "Short", {"sleep": 3})
    after = invoke_outcome(client, "Short", {})

    assert (timed_out["status"], timed_out["function_error"]) == (200, "Unhandled")
    assert timed_out["payload"]["errorType"] == "Sandbox.Timedout"
    assert timed_out["payload"]["errorMessage"].endswith("Error: Task timed out after 1.00 seconds")
    assert timed_out["payload"]["errorMessage"].startswith("RequestId: ")
    assert (after["status"], after["function_error"]) == (200, None)
    first_pid = served.runs("Short")[0]["pid"]
    assert after["payload"]["pid"] != first_pid
    stats = served.service.stats()["functions"]["Short"]
    assert (stats["timeouts"], stats["errors"], stats["cold_starts"]) == (1, 1, 2)


def test_warm_environments_are_reused_and_idle_ones_reaped(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Warm")], idle_timeout_seconds=0.5)
    client = served.client()

    first = invoke_outcome(client, "Warm", {})
    second = invoke_outcome(client, "Warm", {})
    assert first["payload"]["pid"] == second["payload"]["pid"]
    assert served.service.stats()["functions"]["Warm"]["cold_starts"] == 1

    deadline = time.monotonic() + 5
    while served.service.stats()["functions"]["Warm"]["environments"]["reaped"] < 1:
        assert time.monotonic() < deadline, "the idle environment was not reaped within 5 s"
        time.sleep(0.1)
    assert served.service.stats()["functions"]["Warm"]["environments"]["idle"] == 0
    invoke_outcome(client, "Warm", {})
    assert served.service.stats()["functions"]["Warm"]["cold_starts"] == 2


def test_the_event_reaches_the_handler_unchanged_under_its_real_module_name(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Echo", environment={"GREETING": "hello"})])
    event = {"order": {"order_id": "o-1"}, "nested": [1, {"a": None}]}

    outcome = invoke_outcome(served.client(), "Echo", event)

    payload = outcome["payload"]
    assert payload["event"] == event
    assert (payload["module"], payload["qualname"], payload["function_name"]) == ("probe", "handler", "Echo")
    assert payload["environment"] == {
        "AWS_LAMBDA_FUNCTION_NAME": "Echo",
        "AWS_ENDPOINT_URL": served.endpoint,
        "GREETING": "hello",
    }
    log_files = list((run_log.parent / "logs" / "Echo").glob("*.log"))
    assert len(log_files) == 1
    assert '"message": "task body ran"' in log_files[0].read_text()


def test_event_and_dry_run_invocations(serve_lambda: Serve, probe_function: Probe, run_log: Path) -> None:
    served = serve_lambda([probe_function("Async")])
    client = served.client()

    assert client.invoke(FunctionName="Async", InvocationType="DryRun")["StatusCode"] == 204
    accepted = client.invoke(FunctionName="Async", InvocationType="Event", Payload=b'{"async": true}')
    assert accepted["StatusCode"] == 202

    deadline = time.monotonic() + 10
    while not served.runs("Async"):
        assert time.monotonic() < deadline, "the event did not run within 10 s"
        time.sleep(0.05)
    assert served.runs("Async")[0]["event"] == {"async": True}


def test_throttled_events_are_retried_until_capacity_frees(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Queued", reserved_concurrency=1)])
    client = served.client()

    busy = client.invoke(FunctionName="Queued", InvocationType="Event", Payload=b'{"sleep": 1, "n": 1}')
    queued = client.invoke(FunctionName="Queued", InvocationType="Event", Payload=b'{"n": 2}')
    assert (busy["StatusCode"], queued["StatusCode"]) == (202, 202)

    deadline = time.monotonic() + 15
    while len(served.runs("Queued")) < 2:
        assert time.monotonic() < deadline, "the throttled event was not retried within 15 s"
        time.sleep(0.1)
    stats = served.service.stats()["functions"]["Queued"]
    assert stats["throttles_total"] >= 1
    assert stats["concurrency"]["max"] == 1


def test_tail_log_type_returns_the_invocation_log(
    serve_lambda: Serve, probe_function: Probe, run_log: Path
) -> None:
    served = serve_lambda([probe_function("Tailed")])

    response = served.client().invoke(FunctionName="Tailed", LogType="Tail", Payload=b"{}")

    assert "task body ran" in base64.b64decode(response["LogResult"]).decode()


def test_stats_over_http(serve_lambda: Serve, probe_function: Probe, run_log: Path) -> None:
    served = serve_lambda([probe_function("Counted")], sample_interval_seconds=0.05)
    invoke_outcome(served.client(), "Counted", {"sleep": 0.3})

    with urlopen(f"{served.endpoint}/_sam_local_cloud/lambda/stats", timeout=5) as response:
        stats = json.loads(response.read())
    assert stats["functions"]["Counted"]["invocations"] == 1
    assert stats["account"]["limit"] == 10
    busy_samples = [s for s in stats["timeseries"]["samples"] if s["functions"].get("Counted") == 1]
    assert busy_samples, "the concurrency time series never saw the running invocation"
