"""Fault injection in the local Lambda service: each kind does what it says, set by file, method or HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from botocore.exceptions import ClientError

Serve = Callable[..., Any]
Probe = Callable[..., Any]


def invoke(client: Any, function_name: str, event: dict[str, Any]) -> dict[str, Any]:
    try:
        response = client.invoke(FunctionName=function_name, Payload=json.dumps(event).encode())
    except ClientError as error:
        return {
            "status": error.response["ResponseMetadata"]["HTTPStatusCode"],
            "reason": error.response.get("Reason"),
        }
    return {
        "status": response["StatusCode"],
        "function_error": response.get("FunctionError"),
        "payload": json.loads(response["Payload"].read()),
    }


def order(order_id: str, **extra: Any) -> dict[str, Any]:
    return {"batch_id": "b-1", "item_index": 0, "order": {"order_id": order_id}, **extra}


def test_error_after_body_lands_the_effect_and_loses_the_response(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Charge")])
    served.service.set_fault_plan(
        {
            "functions": {
                "Charge": [{"kind": "error_after_body", "attempts": [1], "error_type": "ResponseLost"}]
            }
        }
    )
    client = served.client()

    first = invoke(client, "Charge", order("o-1"))
    retried = invoke(client, "Charge", order("o-1"))
    other_order = invoke(client, "Charge", order("o-2"))

    assert (first["function_error"], first["payload"]["errorType"]) == ("Unhandled", "ResponseLost")
    assert retried["function_error"] is None
    assert retried["payload"]["event"] == order("o-1"), "the fault instruction must not reach the handler"
    assert other_order["function_error"] == "Unhandled"
    assert [run["event"]["order"]["order_id"] for run in served.runs("Charge")] == ["o-1", "o-1", "o-2"]


def test_error_before_body_fails_without_running_the_body(serve_lambda: Serve, probe_function: Probe) -> None:
    served = serve_lambda([probe_function("Validate")])
    served.service.set_fault_plan({"functions": {"Validate": [{"kind": "error_before_body"}]}})

    outcome = invoke(served.client(), "Validate", order("o-1"))

    assert (outcome["function_error"], outcome["payload"]["errorType"]) == ("Unhandled", "InjectedFaultError")
    assert served.runs() == []


def test_a_killed_runtime_is_reported_as_lambda_words_it(serve_lambda: Serve, probe_function: Probe) -> None:
    served = serve_lambda([probe_function("Reserve")])
    served.service.set_fault_plan({"functions": {"Reserve": [{"kind": "crash", "point": "before_response"}]}})

    outcome = invoke(served.client(), "Reserve", order("o-1"))

    assert (outcome["function_error"], outcome["payload"]["errorType"]) == ("Unhandled", "Runtime.ExitError")
    assert outcome["payload"]["errorMessage"].endswith("Error: Runtime exited with error: signal: killed")
    assert [run["event"]["order"]["order_id"] for run in served.runs("Reserve")] == ["o-1"]


def test_timeout_after_body_kills_the_environment_after_the_effect(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Reserve", timeout_seconds=1)])
    served.service.set_fault_plan({"functions": {"Reserve": [{"kind": "timeout", "attempts": [1]}]}})
    client = served.client()

    timed_out = invoke(client, "Reserve", order("o-1"))
    retried = invoke(client, "Reserve", order("o-1"))

    assert timed_out["payload"]["errorType"] == "Sandbox.Timedout"
    assert timed_out["function_error"] == "Unhandled"
    runs = served.runs("Reserve")
    assert len(runs) == 2, "the body ran before the kill, and again on the retry"
    assert retried["function_error"] is None
    assert retried["payload"]["pid"] != runs[0]["pid"], "the retry ran on a fresh runtime"


def test_timeout_before_body_never_runs_the_body(serve_lambda: Serve, probe_function: Probe) -> None:
    served = serve_lambda([probe_function("Confirm", timeout_seconds=1)])
    served.service.set_fault_plan({"functions": {"Confirm": [{"kind": "timeout", "phase": "before_body"}]}})

    outcome = invoke(served.client(), "Confirm", order("o-1"))

    assert outcome["payload"]["errorType"] == "Sandbox.Timedout"
    assert served.runs() == []


def test_latency_holds_the_concurrency_slot(serve_lambda: Serve, probe_function: Probe) -> None:
    served = serve_lambda([probe_function("Slowed", reserved_concurrency=1)], latency={"Slowed": 0.6})
    client = served.client()

    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(invoke, client, "Slowed", order("o-1"))
        time.sleep(0.2)
        second = pool.submit(invoke, client, "Slowed", order("o-2"))
    outcomes = sorted([first.result(), second.result()], key=lambda o: o["status"])
    assert [(o["status"], o.get("reason")) for o in outcomes] == [
        (200, None),
        (429, "ReservedFunctionConcurrentInvocationLimitExceeded"),
    ]
    assert served.service.stats()["functions"]["Slowed"]["duration_ms"]["max"] >= 600


def test_response_delay_makes_a_short_timeout_caller_retry_while_the_first_call_holds_its_environment(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Payment")])
    served.service.set_fault_plan(
        {"functions": {"Payment": [{"kind": "response_delay", "seconds": 6, "attempts": [1]}]}}
    )
    # Long enough for the retry's cold start on a loaded machine, far shorter than the delayed answer.
    impatient = served.client(read_timeout=3, retries={"total_max_attempts": 2, "mode": "standard"})

    outcome = invoke(impatient, "Payment", order("o-1"))

    assert (outcome["status"], outcome["function_error"]) == (200, None)
    assert len(served.runs("Payment")) == 2, "the SDK retry ran the body a second time"
    stats = served.service.stats()["functions"]["Payment"]
    assert stats["concurrency"]["max"] == 2
    assert stats["environments"]["started"] == 2, "the delayed call still held the first environment"


def test_a_noisy_neighbour_takes_unreserved_concurrency_for_its_window(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Crowded")], account_concurrency=3)
    served.service.set_fault_plan({"noisy_neighbour": {"slots": 2, "duration_seconds": 1.5}})
    deadline = time.monotonic() + 2
    while served.service.stats()["account"]["noisy_neighbour_slots"] < 2:
        assert time.monotonic() < deadline, "the neighbour never took its slots"
        time.sleep(0.02)
    client = served.client()

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda n: invoke(client, "Crowded", order(f"o-{n}", sleep=0.5)), range(2)))
    assert sorted(o["status"] for o in outcomes) == [200, 429]

    deadline = time.monotonic() + 3
    while served.service.stats()["account"]["noisy_neighbour_slots"]:
        assert time.monotonic() < deadline, "the neighbour did not leave after its window"
        time.sleep(0.05)
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(lambda n: invoke(client, "Crowded", order(f"p-{n}", sleep=0.3)), range(3)))
    assert [o["status"] for o in outcomes] == [200, 200, 200]


def test_a_throttle_fault_answers_429_with_its_reason_before_anything_runs(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Reserve")])
    served.service.set_fault_plan(
        {
            "functions": {
                "Reserve": [
                    {
                        "kind": "throttle",
                        "attempts": [1, 2],
                        "reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
                    }
                ]
            }
        }
    )
    # Retries off (the fixture's client): every 429 reaches the caller, as each reaches a Task's retrier.
    client = served.client()

    first, second, third = (invoke(client, "Reserve", order("o-1")) for _ in range(3))
    # Attempts count per item key: another order's first call is throttled too.
    other = [invoke(client, "Reserve", order("o-2")) for _ in range(3)]

    throttled = (429, "ReservedFunctionConcurrentInvocationLimitExceeded")
    assert [(o["status"], o.get("reason")) for o in (first, second, *other[:2])] == [throttled] * 4
    assert (third["status"], third["function_error"], other[2]["status"]) == (200, None, 200)
    # A 429 never ran the function: one run per order, and every throttle counted as Lambda counts them.
    assert [run["event"]["order"]["order_id"] for run in served.runs("Reserve")] == ["o-1", "o-2"]
    throttles = served.service.stats()["functions"]["Reserve"]["throttles"]
    assert throttles == {"ReservedFunctionConcurrentInvocationLimitExceeded": 4}


def test_the_fault_plan_is_loaded_from_a_file_and_replaced_over_http(
    serve_lambda: Serve, probe_function: Probe, tmp_path: Path
) -> None:
    plan_file = tmp_path / "faults.yaml"
    plan_file.write_text("functions:\n  Planned:\n    - {kind: error_before_body, attempts: [1, 2]}\n")
    served = serve_lambda([probe_function("Planned")], fault_plan=plan_file)
    client = served.client()
    assert invoke(client, "Planned", order("o-1"))["function_error"] == "Unhandled"

    body = json.dumps({"seed": 3, "latency": {"Planned": 0.1}}).encode()
    request = Request(f"{served.endpoint}/_sam_local_cloud/lambda/faults", data=body, method="PUT")
    with urlopen(request, timeout=5) as response:
        assert json.loads(response.read()) == {
            "functions": {"Planned": [{"kind": "latency", "seconds": 0.1}]},
            "seed": 3,
        }
    assert invoke(client, "Planned", order("o-1"))["function_error"] is None

    bad = Request(
        f"{served.endpoint}/_sam_local_cloud/lambda/faults",
        data=b'{"functions": {"x": [{"kind": "nap"}]}}',
        method="PUT",
    )
    with pytest.raises(HTTPError) as rejected:
        urlopen(bad, timeout=5)
    assert rejected.value.code == 400
    assert served.service.fault_plan.functions["Planned"][0].kind == "latency"


def test_an_external_lambda_endpoint_runs_admitted_calls_and_faults_still_apply(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    # Given a second service standing in for `sam local start-lambda`, and ours forwarding to it
    upstream = serve_lambda([probe_function("Forwarded")])
    served = serve_lambda(
        [probe_function("Forwarded", reserved_concurrency=1)], lambda_endpoint=upstream.endpoint
    )
    served.service.set_fault_plan(
        {"functions": {"Forwarded": [{"kind": "error_after_body", "attempts": [2]}]}}
    )
    client = served.client()

    ok = invoke(client, "Forwarded", order("o-1"))
    failed_after_body = invoke(client, "Forwarded", order("o-1"))
    handler_error = invoke(client, "Forwarded", order("o-2", **{"raise": "boom"}))
    served.service.put_function_concurrency("Forwarded", 0)
    throttled = invoke(client, "Forwarded", order("o-3"))

    assert ok["function_error"] is None
    assert ok["payload"]["function_name"] == "Forwarded"
    assert failed_after_body["payload"]["errorType"] == "InjectedFaultError"
    assert (handler_error["function_error"], handler_error["payload"]["errorType"]) == (
        "Unhandled",
        "LookupError",
    )
    assert throttled["status"] == 429
    assert len(upstream.runs("Forwarded")) == 3
