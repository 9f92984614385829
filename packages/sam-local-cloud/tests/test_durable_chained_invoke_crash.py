"""A chained invoke whose target's runtime is killed after its handler returned, before its response (the
crash matrix's "after the handler returned, before the response"), on the local Lambda service and the
durable executor: as on Lambda, the kill is a ``Runtime.ExitError`` answered at once, not after the
target's timeout; the operation fails with it, and the execution goes on from there (here: a retry
after a one-second wait), never waiting for an answer that cannot come.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sam_local_cloud.lambda_service import FunctionSpec

DURABLE_FUNCTIONS = Path(__file__).resolve().parent / "durable_functions"
# Far above how long a killed runtime takes to be reported: an answer that waited for the target's
# timeout instead could not pass for an answer given at once.
TARGET_TIMEOUT_SECONDS = 30
ServedLambda = Any


def twin_invokes() -> FunctionSpec:
    return FunctionSpec(
        "TwinInvokes",
        "twin_invokes.handler",
        DURABLE_FUNCTIONS,
        timeout_seconds=30,
        durable_config={"ExecutionTimeout": 120},
    )


def doubler() -> FunctionSpec:
    return FunctionSpec(
        "Doubler", "doubler.handler", DURABLE_FUNCTIONS, timeout_seconds=TARGET_TIMEOUT_SECONDS
    )


def _moment(event: dict[str, Any]) -> datetime:
    moment: datetime = event["EventTimestamp"]
    return moment


def test_a_target_killed_before_its_response_fails_its_invoke_at_once_and_the_retry_goes_on(
    serve_lambda: Callable[..., ServedLambda],
) -> None:
    served = serve_lambda([twin_invokes(), doubler()])
    client = served.client(read_timeout=120)
    # A warm runtime: the crashed invocation's time is the kill's, not a cold start's.
    assert json.loads(served.service.invoke("Doubler", b'{"value": 0}').payload) == {"doubled": 0}
    served.service.set_fault_plan(
        {"functions": {"Doubler": [{"kind": "crash", "point": "before_response", "once": True}]}}
    )

    answer = client.invoke(
        FunctionName="TwinInvokes", Payload=b'{"value": 21}', DurableExecutionName="twins-1"
    )

    assert "FunctionError" not in answer, answer["Payload"].read()
    results = json.loads(answer["Payload"].read())
    # Both items have their answer; one of them after its first invoke failed with the kill.
    assert [result["answer"] for result in results] == [{"doubled": 42}, {"doubled": 42}]
    assert sorted(failure for result in results for failure in result["failures"]) == ["Runtime.ExitError"]
    events = client.get_durable_execution_history(DurableExecutionArn=answer["DurableExecutionArn"])["Events"]
    failed = [event for event in events if event["EventType"] == "ChainedInvokeFailed"]
    assert len(failed) == 1
    error = failed[0]["ChainedInvokeFailedDetails"]["Error"]["Payload"]
    assert error["ErrorType"] == "Runtime.ExitError"
    assert error["ErrorMessage"].endswith("Runtime exited with error: signal: killed")
    started = next(
        event
        for event in events
        if event["EventType"] == "ChainedInvokeStarted" and event["Id"] == failed[0]["Id"]
    )
    seconds = (_moment(failed[0]) - _moment(started)).total_seconds()
    assert seconds < TARGET_TIMEOUT_SECONDS / 3, f"the kill was answered after {seconds:.1f} s"
    assert [event["EventType"] for event in events].count("ChainedInvokeSucceeded") == 2
    doubler_stats = served.service.stats(include_timeseries=False)["functions"]["Doubler"]
    assert (doubler_stats["invocations"], doubler_stats["errors"], doubler_stats["timeouts"]) == (4, 1, 0)
