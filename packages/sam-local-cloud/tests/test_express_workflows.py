"""EXPRESS state machines in the local cloud, as boto3, CloudWatch Logs and an API's HTTP client see them.

The fixture template (express_fixtures/template.yaml) has a greeter that fails without a name and logs
every event, a sleeper that waits as long as it is told, a Standard machine, and a REST API and an HTTP
API whose routes call StartSyncExecution on the greeter. The local cloud runs with a 2-second Express
duration limit instead of AWS's five minutes, so the limit is seen at work in seconds.
"""

from __future__ import annotations

import gc
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stepfunctions import express
from sam_local_cloud.stepfunctions.express import express_execution_arn

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "express_fixtures" / "template.yaml"
LOG_GROUP = "/express-tests/greeter"
SLEEPER_LOG_GROUP = "/express-tests/sleeper"
DURATION_LIMIT_SECONDS = 2.0
EXPRESS_ARN = re.compile(
    r"^arn:aws:states:us-east-1:123456789012:express:(?P<machine>[^:]+):(?P<name>[^:]+):(?P<id>[0-9a-f-]{36})$"
)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(
        template=TEMPLATE,
        state_dir=tmp_path_factory.mktemp("express"),
        express_max_duration_seconds=DURATION_LIMIT_SECONDS,
    )
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(cloud: LocalCloud) -> Any:
    # StartSyncExecution's endpoint has the host prefix "sync-", which no loopback name resolves.
    return cloud.client("stepfunctions", inject_host_prefix=False, retries={"total_max_attempts": 1})


def machine_arn(cloud: LocalCloud, name: str) -> str:
    return f"arn:aws:states:{cloud.stack.region}:{cloud.stack.account_id}:stateMachine:{name}"


def error_of(call: Any, **parameters: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as refused:
        call(**parameters)
    error: dict[str, str] = refused.value.response["Error"]
    return {"Code": error["Code"], "Message": error["Message"]}


def log_records(
    cloud: LocalCloud, execution_arn: str, until_type: str, group: str = LOG_GROUP, timeout: float = 10
) -> list[Any]:
    """The CloudWatch Logs records of one execution, once the one of type ``until_type`` is there."""
    logs = cloud.client("logs")
    deadline = time.monotonic() + timeout
    while True:
        events = logs.filter_log_events(logGroupName=group)["events"]
        records = [json.loads(event["message"]) for event in events]
        mine = [record for record in records if record["execution_arn"] == execution_arn]
        if any(record["type"] == until_type for record in mine):
            return sorted(mine, key=lambda record: int(record["id"]))
        if time.monotonic() > deadline:
            raise AssertionError(f"no {until_type} record for {execution_arn} in {timeout} s: {mine}")
        time.sleep(0.1)


def executions_left_in_memory(timeout: float = 5) -> int:
    """Express executions still referenced once their threads had ``timeout`` seconds to end."""
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        left = express.express_executions_in_memory()
        if left == 0 or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------- creation


def test_the_template_creates_express_machines_with_their_logging(cloud: LocalCloud, sfn: Any) -> None:
    described = sfn.describe_state_machine(stateMachineArn=machine_arn(cloud, "express-greeter"))
    assert described["type"] == "EXPRESS"
    assert described["loggingConfiguration"] == {
        "level": "ALL",
        "includeExecutionData": True,
        "destinations": [
            {
                "cloudWatchLogsLogGroup": {
                    "logGroupArn": f"arn:aws:logs:us-east-1:123456789012:log-group:{LOG_GROUP}:*"
                }
            }
        ],
    }
    assert sfn.describe_state_machine(stateMachineArn=machine_arn(cloud, "standard-greeter"))["type"] == (
        "STANDARD"
    )


# ------------------------------------------------------------------------------ StartSyncExecution


def test_a_sync_execution_answers_with_its_output(cloud: LocalCloud, sfn: Any) -> None:
    answer = sfn.start_sync_execution(
        stateMachineArn=machine_arn(cloud, "express-greeter"), name="greet-ada", input='{"name": "Ada"}'
    )
    answer.pop("ResponseMetadata")
    arn = EXPRESS_ARN.match(answer.pop("executionArn"))
    assert arn is not None
    assert arn["machine"] == "express-greeter"
    assert arn["name"] == "greet-ada"
    started, stopped = answer.pop("startDate"), answer.pop("stopDate")
    assert timedelta(0) <= stopped - started < timedelta(seconds=5)
    billed = answer.pop("billingDetails")
    assert billed["billedMemoryUsedInMB"] == 64
    assert billed["billedDurationInMilliseconds"] % 100 == 0
    assert billed["billedDurationInMilliseconds"] >= 100
    assert answer == {
        "stateMachineArn": machine_arn(cloud, "express-greeter"),
        "name": "greet-ada",
        "status": "SUCCEEDED",
        "input": '{"name":"Ada"}',
        "inputDetails": {"included": True},
        "output": '{"greeting":"Hello, Ada!"}',
        "outputDetails": {"included": True},
    }


def test_a_failed_sync_execution_answers_its_error_and_cause_and_no_output(
    cloud: LocalCloud, sfn: Any
) -> None:
    answer = sfn.start_sync_execution(stateMachineArn=machine_arn(cloud, "express-greeter"), input="{}")
    assert answer["status"] == "FAILED"
    assert (answer["error"], answer["cause"]) == ("NameMissing", "There is no name to greet.")
    assert "output" not in answer
    assert EXPRESS_ARN.match(answer["executionArn"])
    # Unnamed: a UUID, as StartExecution names an unnamed execution.
    assert re.fullmatch(r"[0-9a-f-]{36}", answer["name"])


def test_an_express_name_may_be_used_again(cloud: LocalCloud, sfn: Any) -> None:
    arns = {
        sfn.start_sync_execution(
            stateMachineArn=machine_arn(cloud, "express-greeter"), name="same-name", input='{"name": "x"}'
        )["executionArn"]
        for _ in range(2)
    }
    assert len(arns) == 2


def test_start_sync_execution_refuses_a_standard_machine(cloud: LocalCloud, sfn: Any) -> None:
    assert error_of(sfn.start_sync_execution, stateMachineArn=machine_arn(cloud, "standard-greeter")) == {
        "Code": "StateMachineTypeNotSupported",
        "Message": "This operation is not supported by this type of state machine",
    }


def test_start_sync_execution_refuses_a_missing_machine(cloud: LocalCloud, sfn: Any) -> None:
    missing = machine_arn(cloud, "no-such-machine")
    assert error_of(sfn.start_sync_execution, stateMachineArn=missing) == {
        "Code": "StateMachineDoesNotExist",
        "Message": f"State Machine Does Not Exist: '{missing}'",
    }


def test_start_sync_execution_refuses_input_that_is_not_json(cloud: LocalCloud, sfn: Any) -> None:
    error = error_of(
        sfn.start_sync_execution, stateMachineArn=machine_arn(cloud, "express-greeter"), input="{name"
    )
    assert error["Code"] == "InvalidExecutionInput"
    assert error["Message"].startswith("Invalid State Machine Execution Input: ")


def test_the_context_object_names_the_express_execution(cloud: LocalCloud, sfn: Any) -> None:
    machine = machine_arn(cloud, "express-context")
    answer = sfn.start_sync_execution(stateMachineArn=machine, name="read-it", input='{"k": 1}')
    context = json.loads(answer["output"])
    assert context["machine"] == {"Id": machine, "Name": "express-context"}
    execution = context["execution"]
    # AWS-recorded: no RedriveCount in a synchronous execution's context.
    assert sorted(execution) == ["Id", "Input", "Name", "RoleArn", "StartTime"]
    assert (execution["Id"], execution["Name"], execution["Input"]) == (
        answer["executionArn"],
        "read-it",
        {"k": 1},
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", execution["StartTime"])

    started = sfn.start_execution(stateMachineArn=machine, input="{}")
    records = log_records(cloud, started["executionArn"], "ExecutionSucceeded")
    asynchronous = json.loads(records[-1]["details"]["output"])["execution"]
    assert asynchronous["Id"] == started["executionArn"]
    assert asynchronous["RedriveCount"] == 0


def test_start_execution_refuses_input_that_is_not_json_with_its_code(cloud: LocalCloud, sfn: Any) -> None:
    for machine in ("standard-greeter", "express-greeter"):
        error = error_of(sfn.start_execution, stateMachineArn=machine_arn(cloud, machine), input="[1,")
        assert error["Code"] == "InvalidExecutionInput"
        assert error["Message"].startswith("Invalid State Machine Execution Input: '")


def test_the_interpreters_own_errors_carry_their_codes(sfn: Any) -> None:
    assert error_of(sfn.send_task_success, taskToken="no-such-token", output="{}")["Code"] == "InvalidToken"


# ---------------------------------------------------------------------------------------------- the limit


def test_an_execution_past_the_duration_limit_ends_timed_out(cloud: LocalCloud, sfn: Any) -> None:
    begun = time.monotonic()
    answer = sfn.start_sync_execution(
        stateMachineArn=machine_arn(cloud, "express-sleeper"), input='{"seconds": 30}'
    )
    took = time.monotonic() - begun
    assert answer["status"] == "TIMED_OUT"
    assert answer["error"] == "States.Timeout"
    assert "output" not in answer
    assert DURATION_LIMIT_SECONDS <= took < DURATION_LIMIT_SECONDS + 3
    assert answer["billingDetails"]["billedDurationInMilliseconds"] >= DURATION_LIMIT_SECONDS * 1000


def test_an_execution_within_the_limit_succeeds(cloud: LocalCloud, sfn: Any) -> None:
    answer = sfn.start_sync_execution(
        stateMachineArn=machine_arn(cloud, "express-sleeper"), input='{"seconds": 1}'
    )
    assert (answer["status"], answer["output"]) == ("SUCCEEDED", '"awake"')


def test_the_limit_is_five_minutes_unless_the_cloud_is_told_otherwise(cloud: LocalCloud) -> None:
    assert express.EXPRESS_MAX_DURATION_SECONDS == 300
    ours = express_execution_arn(machine_arn(cloud, "express-sleeper"), "run")
    assert express.max_duration_seconds(ours) == DURATION_LIMIT_SECONDS
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as beside:
        theirs = express_execution_arn(machine_arn(beside, "express-sleeper"), "run")
        assert express.max_duration_seconds(theirs) == 300


# ---------------------------------------------------------------------------------- StartExecution


def test_an_asynchronous_express_execution_runs_and_leaves_its_log_record(
    cloud: LocalCloud, sfn: Any
) -> None:
    started = sfn.start_execution(
        stateMachineArn=machine_arn(cloud, "express-greeter"), input='{"name": "Bo"}'
    )
    assert EXPRESS_ARN.match(started["executionArn"])
    records = log_records(cloud, started["executionArn"], "ExecutionSucceeded")
    assert [record["type"] for record in records] == [
        "ExecutionStarted",
        "ChoiceStateEntered",
        "ChoiceStateExited",
        "PassStateEntered",
        "PassStateExited",
        "ExecutionSucceeded",
    ]
    first, last = records[0], records[-1]
    assert json.loads(first["details"]["input"]) == {"name": "Bo"}
    assert json.loads(last["details"]["output"]) == {"greeting": "Hello, Bo!"}
    assert (last["id"], last["previous_event_id"], last["redrive_count"]) == ("6", "5", "0")
    assert last["event_timestamp"].isdigit()
    assert int(last["event_timestamp"]) >= int(first["event_timestamp"])


def test_an_asynchronous_execution_past_the_limit_is_logged_timed_out(cloud: LocalCloud, sfn: Any) -> None:
    begun = time.monotonic()
    started = sfn.start_execution(
        stateMachineArn=machine_arn(cloud, "express-sleeper"), input='{"seconds": 30}'
    )
    assert time.monotonic() - begun < DURATION_LIMIT_SECONDS
    records = log_records(
        cloud, started["executionArn"], "ExecutionTimedOut", SLEEPER_LOG_GROUP, DURATION_LIMIT_SECONDS + 5
    )
    # Level ERROR: the timeout only, not the start nor the Wait; no execution data.
    assert [record["type"] for record in records] == ["ExecutionTimedOut"]
    assert "input" not in records[0]["details"]
    assert "output" not in records[0]["details"]
    assert executions_left_in_memory() == 0


def test_a_finished_express_execution_is_not_kept(cloud: LocalCloud, sfn: Any) -> None:
    for index in range(20):
        sfn.start_sync_execution(
            stateMachineArn=machine_arn(cloud, "express-greeter"), input=json.dumps({"name": f"n{index}"})
        )
    assert executions_left_in_memory() == 0


# ---------------------------------------------------------------------------------------------- other APIs


@pytest.mark.parametrize(
    "api",
    [
        "describe_execution",
        "get_execution_history",
        "stop_execution",
        "redrive_execution",
        "describe_state_machine_for_execution",
    ],
)
def test_the_execution_apis_do_not_take_an_express_execution_arn(
    cloud: LocalCloud, sfn: Any, api: str
) -> None:
    arn = sfn.start_sync_execution(stateMachineArn=machine_arn(cloud, "express-greeter"), input="{}")[
        "executionArn"
    ]
    assert error_of(getattr(sfn, api), executionArn=arn) == {
        "Code": "InvalidArn",
        "Message": "Invalid Arn: 'Resource type not valid in this context: express'",
    }


def test_list_executions_refuses_an_express_machine(cloud: LocalCloud, sfn: Any) -> None:
    assert error_of(sfn.list_executions, stateMachineArn=machine_arn(cloud, "express-greeter")) == {
        "Code": "StateMachineTypeNotSupported",
        "Message": "This operation is not supported by this type of state machine",
    }


def test_a_standard_machine_still_runs_and_lists_its_executions(cloud: LocalCloud, sfn: Any) -> None:
    arn = sfn.start_execution(stateMachineArn=machine_arn(cloud, "standard-greeter"), input='{"a": 1}')[
        "executionArn"
    ]
    assert ":execution:standard-greeter:" in arn
    deadline = time.monotonic() + 10
    while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"
    listed = sfn.list_executions(stateMachineArn=machine_arn(cloud, "standard-greeter"))["executions"]
    assert [execution["executionArn"] for execution in listed] == [arn]


# ------------------------------------------------------------------------------ a Standard parent's .sync


def run_parent(cloud: LocalCloud, sfn: Any, pattern: str, child: dict[str, Any]) -> dict[str, Any]:
    started = sfn.start_execution(
        stateMachineArn=machine_arn(cloud, "parent-of-greeter"),
        input=json.dumps({"pattern": pattern, "child": child}),
    )
    wait_for_execution(sfn, started["executionArn"], timeout=20, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=started["executionArn"])
    return described


@pytest.mark.parametrize(
    ("pattern", "child_output"),
    [("sync", '{"greeting":"Hello, Ada!"}'), ("sync:2", {"greeting": "Hello, Ada!"})],
)
def test_a_sync_parent_waits_for_its_express_child_and_receives_its_output(
    cloud: LocalCloud, sfn: Any, pattern: str, child_output: Any
) -> None:
    parent = run_parent(cloud, sfn, pattern, {"name": "Ada"})

    assert parent["status"] == "SUCCEEDED", parent
    result = json.loads(parent["output"])
    assert EXPRESS_ARN.match(result["ExecutionArn"])
    assert result["Status"] == "SUCCEEDED"
    assert result["StateMachineArn"] == machine_arn(cloud, "express-greeter")
    assert result["Output"] == child_output
    assert result["Input"] == ('{"name":"Ada"}' if pattern == "sync" else {"name": "Ada"})


def test_a_sync_parent_fails_with_its_failed_express_childs_error(cloud: LocalCloud, sfn: Any) -> None:
    parent = run_parent(cloud, sfn, "sync:2", {})

    assert parent["status"] == "FAILED"
    assert parent["error"] == "States.TaskFailed"
    child = json.loads(parent["cause"])
    assert (child["Status"], child["Error"], child["Cause"]) == (
        "FAILED",
        "NameMissing",
        "There is no name to greet.",
    )
    events = sfn.get_execution_history(executionArn=parent["executionArn"])["events"]
    assert [event["type"] for event in events][-3:] == ["TaskSubmitted", "TaskFailed", "ExecutionFailed"]


# ---------------------------------------------------------------------------------------------- API Gateway


def post(url: str, body: str, content_type: str = "application/json") -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        url, data=body.encode(), method="POST", headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_a_rest_api_route_answers_with_the_sync_execution_output(cloud: LocalCloud) -> None:
    status, headers, body = post(f"{cloud.endpoint}/execute-api/greeterrestapi/test/greet", '{"name": "Ada"}')
    assert status == 200
    assert headers["X-Execution-Status"] == "express"
    assert json.loads(body) == {"greeting": "Hello, Ada!", "status": "SUCCEEDED"}


def test_a_rest_api_route_answers_a_failed_execution_through_its_template(cloud: LocalCloud) -> None:
    status, _, body = post(f"{cloud.endpoint}/execute-api/greeterrestapi/test/greet", '{"who": "nobody"}')
    assert status == 200
    assert json.loads(body) == {
        "error": "NameMissing",
        "cause": "There is no name to greet.",
        "status": "FAILED",
    }


def test_a_request_template_that_breaks_the_json_gets_step_functions_400(cloud: LocalCloud) -> None:
    # $util.escapeJavaScript escapes ' as \' (not valid JSON): Step Functions refuses the request.
    status, _, body = post(f"{cloud.endpoint}/execute-api/greeterrestapi/test/greet", '{"name": "O\'Brien"}')
    assert status == 400
    assert json.loads(body) == {"refused": "SerializationException"}


def test_a_rest_api_refuses_a_content_type_it_has_no_template_for(cloud: LocalCloud) -> None:
    status, _, body = post(
        f"{cloud.endpoint}/execute-api/greeterrestapi/test/greet", "name=Ada", "text/plain"
    )
    assert (status, json.loads(body)) == (415, {"message": "Unsupported Media Type"})


def test_the_rest_api_answers_only_under_its_stage(cloud: LocalCloud) -> None:
    status, _, _ = post(f"{cloud.endpoint}/execute-api/greeterrestapi/greet", '{"name": "Ada"}')
    assert status == 404


def test_a_rest_api_route_slower_than_its_integration_timeout_is_504(cloud: LocalCloud) -> None:
    url = f"{cloud.endpoint}/execute-api/greeterrestapi/test/sleep"
    begun = time.monotonic()
    status, _, body = post(url, '{"seconds": 3}')
    assert (status, json.loads(body)) == (504, {"message": "Endpoint request timed out"})
    assert time.monotonic() - begun < 2.5  # timeoutInMillis 1000; the sleep goes on without the caller
    status, _, body = post(url, '{"seconds": 0}')
    assert status == 200
    assert json.loads(body)["output"] == '"awake"'


def test_a_state_machine_api_event_starts_an_execution_as_sam_writes_the_route(cloud: LocalCloud) -> None:
    # SAM's StartExecution route; UnescapeMappingTemplate keeps a quote in the input valid JSON.
    status, _, body = post(f"{cloud.endpoint}/execute-api/greeterrestapi/test/start", '{"name": "O\'Neil"}')
    assert status == 200
    started = json.loads(body)
    assert EXPRESS_ARN.match(started["executionArn"])
    assert isinstance(started["startDate"], float)
    records = log_records(cloud, started["executionArn"], "ExecutionSucceeded")
    assert json.loads(records[-1]["details"]["output"]) == {"greeting": "Hello, O'Neil!"}


def test_an_http_api_route_answers_with_step_functions_response(cloud: LocalCloud) -> None:
    status, _, body = post(f"{cloud.endpoint}/execute-api/greeterhttpapi/greet", '{"name": "Ada"}')
    assert status == 200
    answer = json.loads(body)
    assert (answer["status"], answer["output"]) == ("SUCCEEDED", '{"greeting":"Hello, Ada!"}')
    assert EXPRESS_ARN.match(answer["executionArn"])


def test_an_integration_role_without_permission_is_denied(cloud: LocalCloud) -> None:
    status, _, body = post(
        f"{cloud.endpoint}/execute-api/greeterhttpapi/greet-without-permission", '{"name": "Ada"}'
    )
    assert status == 400
    answer = json.loads(body)
    assert answer["__type"] == "com.amazon.coral.service#AccessDeniedException"
    assert "orderbatch-StartOnlyApiRole" in answer["Message"]
    assert "states:StartSyncExecution" in answer["Message"]


# ---------------------------------------------------------------------------------------------- units


@pytest.mark.parametrize(
    ("milliseconds", "billed"), [(0, 100), (1, 100), (100, 100), (101, 200), (2_049, 2_100)]
)
def test_billing_rounds_the_duration_up_to_100_ms(milliseconds: int, billed: int) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    details = express.billing_details(start, start + timedelta(milliseconds=milliseconds))
    assert details == {"billedDurationInMilliseconds": billed, "billedMemoryUsedInMB": 64}


def test_only_top_level_express_arns_are_refused_by_the_execution_apis() -> None:
    prefix = "arn:aws:states:us-east-1:123456789012"
    assert express.is_top_level_express_arn(
        f"{prefix}:express:machine:name:0f67d1a2-bfdd-43af-9682-bcaefd58c9ab"
    )
    # A Distributed Map's Express child: DescribeExecution answers for it on AWS.
    assert not express.is_top_level_express_arn(f"{prefix}:express:machine/map-run:name:0f67d1a2")
    assert not express.is_top_level_express_arn(f"{prefix}:execution:machine:name")
