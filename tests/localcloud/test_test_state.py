"""TestState on the local cloud, as boto3 and the AWS CLI see it, against answers AWS recorded.

The recorded answers are LocalStack's TestState snapshots, recorded against AWS (see
test_state_fixtures/PROVENANCE.md); each test sends the request LocalStack's test sends and compares the
answer with AWS's. Names and dates AWS generated appear there as placeholders (``<resource:1>``, ``date``),
JSON text members (``output``, ``inspectionData.*``) as parsed JSON: both are compared that way.

The client is configured as a user would configure one: with the exports ``orderbatch local env`` prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from orderbatch.cli import main
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import LocalCloud, LocalCloudConfig
from sam_local_cloud.stack import load_stack

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parent / "test_state_fixtures"
RECORDED: dict[str, Any] = json.loads((FIXTURES / "recorded_responses.json").read_text())
ACCOUNT = "123456789012"
# The account the recordings name (their tool replaced the real one with it).
RECORDED_ACCOUNT = "111111111111"
HELLO_WORLD = json.dumps({"Value": "HelloWorld"})
VALUES = json.dumps({"Values": ["first", "second", "third"]})
MOCK_EXCEPTION = {"errorOutput": {"error": "MockException", "cause": "Mock the cause of the error."}}
MOCK_EXCEPTION_SHORT = {"errorOutput": {"error": "MockException", "cause": "Mock the error cause."}}
LEVELS = ("INFO", "DEBUG", "TRACE")
# Values AWS generates, replaced by placeholders in the recordings: any text stands for them.
_GENERATED = {"date", "x-amzn-RequestId", "X-Amzn-Trace-Id", "RequestId"}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(
        template=FIXTURES / "template.yaml", state_dir=tmp_path_factory.mktemp("test-state")
    )
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def user_environment(cloud: LocalCloud) -> Iterator[dict[str, str]]:
    """The process environment after ``eval "$(orderbatch local env)"``."""
    saved = dict(os.environ)
    os.environ.update(cloud.environment())
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def sfn(user_environment: dict[str, str]) -> Any:
    return boto3.client("stepfunctions")


def template(name: str, **changes: Any) -> str:
    document = json.loads((FIXTURES / "templates" / f"{name}.json").read_text())
    document.update(changes)
    return json.dumps(document)


def call(sfn: Any, **request: Any) -> dict[str, Any]:
    """The answer to a TestState request: the response, or the error response boto3 raised."""
    try:
        response: dict[str, Any] = sfn.test_state(**request)
    except ClientError as error:
        return {"Error": error.response["Error"], "message": error.response["Error"]["Message"]}
    response.pop("ResponseMetadata", None)
    return response


def recording(test: str, *params: str) -> dict[str, Any]:
    """The answers AWS gave LocalStack's ``test`` (``Class::test_name``) run with ``params``."""
    for test_id, answers in RECORDED.items():
        name, _, bracket = test_id.partition("[")
        if name == test and set(bracket.rstrip("]").split("-") if bracket else []) == set(params):
            recorded: dict[str, Any] = answers
            return recorded
    raise KeyError(f"no recording of {test}{list(params)}")


def assert_as_recorded(
    answer: dict[str, Any], expected: dict[str, Any], ignore: tuple[str, ...] = ()
) -> None:
    if "Error" in expected:
        assert answer.get("Error", {}).get("Code") == expected["Error"]["Code"], answer
        assert answer["Error"]["Message"] == expected["Error"]["Message"]
        return
    mismatch = _mismatch(expected, answer, "$", ignore)
    assert mismatch is None, f"{mismatch}\nrecorded: {json.dumps(expected)}\nlocal:    {json.dumps(answer)}"


def _mismatch(expected: Any, actual: Any, path: str, ignore: tuple[str, ...]) -> str | None:
    if path.rsplit(".", 1)[-1] in ignore:
        return None
    if isinstance(expected, dict | list) and isinstance(actual, str):
        actual = json.loads(actual)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(expected) != set(actual):
            found = sorted(actual) if isinstance(actual, dict) else actual
            return f"{path}: keys {sorted(expected)} recorded, {found!r} here"
        for key in expected:
            found = _mismatch(expected[key], actual[key], f"{path}.{key}", ignore)
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return f"{path}: {expected!r} recorded, {actual!r} here"
        for index, (item, other) in enumerate(zip(expected, actual, strict=True)):
            found = _mismatch(item, other, f"{path}[{index}]", ignore)
            if found:
                return found
        return None
    if isinstance(expected, str) and isinstance(actual, str):
        return None if _same_text(expected, actual) else f"{path}: {expected!r} recorded, {actual!r} here"
    return None if expected == actual else f"{path}: {expected!r} recorded, {actual!r} here"


def _same_text(expected: str, actual: str) -> bool:
    expected = expected.replace(RECORDED_ACCOUNT, ACCOUNT)
    if expected == actual or expected in _GENERATED:
        return True
    if expected[:1] in '["' and actual[:1] in '["':
        try:
            return bool(json.loads(expected) == json.loads(actual))
        except json.JSONDecodeError:
            pass
    if "<" in expected:
        pattern = "".join(
            ".+" if part.startswith("<") else re.escape(part) for part in re.split(r"(<[^>]+>)", expected)
        )
        return re.fullmatch(pattern, actual) is not None
    return False


# ---------------------------------------------------------------------------------------------- the client


def test_local_env_exports_what_turns_off_the_sync_host_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "env", "--endpoint", "http://127.0.0.1:4566"]) == 0
    assert "export AWS_DISABLE_HOST_PREFIX_INJECTION=true" in capsys.readouterr().out.splitlines()


def test_boto3_configured_from_local_env_reaches_test_state(sfn: Any) -> None:
    answer = call(sfn, definition=template("base_pass_state"), input=HELLO_WORLD)
    assert answer == {"output": HELLO_WORLD, "status": "SUCCEEDED"}


def test_without_the_setting_boto3_sends_test_state_to_a_host_that_does_not_resolve(
    user_environment: dict[str, str],
) -> None:
    client = boto3.client("stepfunctions", config=boto3.session.Config(inject_host_prefix=True))
    with pytest.raises(EndpointConnectionError) as refused:
        client.test_state(definition=template("base_pass_state"), input=HELLO_WORLD)
    assert "sync-127.0.0.1" in str(refused.value)


def test_the_aws_cli_with_local_env(user_environment: dict[str, str]) -> None:
    aws = Path(sys.executable).with_name("aws")
    completed = subprocess.run(
        [
            *(str(aws), "stepfunctions", "test-state", "--definition", template("base_choice_state")),
            *("--input", json.dumps({"type": "Private", "value": 22}), "--inspection-level", "DEBUG"),
        ],
        env=user_environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer = json.loads(completed.stdout)
    assert (answer["status"], answer["nextState"]) == ("SUCCEEDED", "ValueInTwenties")
    assert json.loads(answer["inspectionData"]["input"]) == {"type": "Private", "value": 22}


# ---------------------------------------------------------------------------------------------- AWS's answers

BASE_TEMPLATES = {
    "BASE_PASS_STATE": ("base_pass_state", HELLO_WORLD),
    "BASE_RESULT_PASS_STATE": ("base_result_pass_state", HELLO_WORLD),
    "IO_PASS_STATE": (
        "io_pass_state",
        json.dumps(
            {
                "initialData": {"fieldFromInput": "value from input", "otherField": "other"},
                "unrelatedData": {"someOtherField": 1234},
            }
        ),
    ),
    "IO_RESULT_PASS_STATE": (
        "io_result_pass_state",
        json.dumps(
            {
                "initialData": {"fieldFromInput": "value from input", "otherField": "other"},
                "unrelatedData": {"someOtherField": 1234},
            }
        ),
    ),
    "BASE_FAIL_STATE": ("base_fail_state", HELLO_WORLD),
    "BASE_SUCCEED_STATE": ("base_succeed_state", HELLO_WORLD),
    "BASE_CHOICE_STATE": ("base_choice_state", json.dumps({"type": "Private", "value": 22})),
}
SCENARIOS = "TestStateCaseScenarios"
CONFIGURATION = "TestStateConfiguration"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", BASE_TEMPLATES)
def test_one_state_at_each_inspection_level(sfn: Any, level: str, case: str) -> None:
    name, document = BASE_TEMPLATES[case]
    answer = call(sfn, definition=template(name), roleArn=role_arn(), input=document, inspectionLevel=level)
    recorded = recording(f"{SCENARIOS}::test_base_inspection_level_{level.lower()}", case)
    assert_as_recorded(answer, recorded["test_case_response"])


@pytest.mark.parametrize("level", ["DEBUG", "TRACE"])
def test_a_mocked_error_a_retrier_takes_is_retriable_with_its_backoff(sfn: Any, level: str) -> None:
    """Retry IntervalSeconds 1, BackoffRate 2, MaxAttempts 5: after 4 retries the next one waits 16 s;
    after 5, none is left."""
    recorded = recording(f"{CONFIGURATION}::test_state_configuration_retrier_retry_count", level)
    for retries, key in (
        (4, "below_tolerated_retry_count_with_backoff"),
        (5, "exceeds_tolerated_retry_count"),
    ):
        answer = call(
            sfn,
            definition=template("base_task_state_retry"),
            roleArn=role_arn(),
            input=VALUES,
            stateConfiguration={"retrierRetryCount": retries},
            inspectionLevel=level,
            mock=MOCK_EXCEPTION,
        )
        assert_as_recorded(answer, recorded[key])
    assert answer["status"] == "FAILED"


@pytest.mark.parametrize("level", LEVELS)
def test_a_caught_error_names_the_catchers_next_state(sfn: Any, level: str) -> None:
    recorded = recording(f"{SCENARIOS}::test_state_task_catch_error", level)
    for mock, key in (
        (MOCK_EXCEPTION, "test_catch_mock_exception_response"),
        (
            {"errorOutput": {"error": "States.TaskFailed", "cause": "The task failed."}},
            "catch_task_failed_response",
        ),
    ):
        answer = call(
            sfn,
            definition=template("base_task_state_catch"),
            roleArn=role_arn(),
            input=HELLO_WORLD,
            inspectionLevel=level,
            mock=mock,
        )
        assert_as_recorded(answer, recorded[key])
        assert answer["status"] == "CAUGHT_ERROR"


MAP_TEMPLATES = {
    "BASE_MAP_STATE": "base_map_state",
    "BASE_MAP_STATE_CATCH": "base_map_state_catch",
    "BASE_MAP_STATE_RETRY": "base_map_state_retry",
    "MAP_TASK_STATE": "map_task_state",
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", MAP_TEMPLATES)
def test_a_mocked_map_with_failed_iterations(sfn: Any, level: str, case: str) -> None:
    recorded = recording(f"{CONFIGURATION}::test_map_state_failure_count", level, case)
    for failures, result, key in (
        (0, [1, 1, 1], "below_tolerated_failure"),
        (2, [0, 0, 1], "exceeds_tolerated_failure"),
    ):
        answer = call(
            sfn,
            definition=template(MAP_TEMPLATES[case]),
            roleArn=role_arn(),
            input=VALUES,
            stateConfiguration={"mapIterationFailureCount": failures},
            inspectionLevel=level,
            mock={"result": json.dumps(result)},
        )
        assert_as_recorded(answer, recorded[key])


@pytest.mark.parametrize("level", LEVELS)
def test_a_mocked_map_error(sfn: Any, level: str) -> None:
    answer = call(
        sfn,
        definition=template("base_map_state"),
        roleArn=role_arn(),
        input=json.dumps({"Values": [1, 1, 1]}),
        stateConfiguration={"errorCausedByState": "TestState"},
        inspectionLevel=level,
        mock=MOCK_EXCEPTION,
    )
    recorded = recording(f"{CONFIGURATION}::test_map_state_error_caused_by_state", level)
    assert_as_recorded(answer, recorded["test_case_response"])
    recorded = recording(
        f"{CONFIGURATION}::test_state_configuration_map_iteration_failure_count_with_state_error", level
    )
    for failures, key in ((0, "below_tolerated_failure"), (2, "exceeds_tolerated_failure")):
        answer = call(
            sfn,
            definition=template("base_map_state"),
            roleArn=role_arn(),
            input=VALUES,
            stateConfiguration={"mapIterationFailureCount": failures, "errorCausedByState": "TestState"},
            inspectionLevel=level,
            mock=MOCK_EXCEPTION_SHORT,
        )
        assert_as_recorded(answer, recorded[key])


@pytest.mark.parametrize("level", LEVELS)
def test_a_map_state_of_a_whole_state_machine(sfn: Any, level: str) -> None:
    recorded = recording(f"{CONFIGURATION}::test_state_machine_with_state_error", level)
    for failures, key in ((0, "below_tolerated_failure"), (2, "exceeds_tolerated_failure")):
        answer = call(
            sfn,
            stateName="State0",
            definition=template("base_map_state_machine"),
            roleArn=role_arn(),
            input=VALUES,
            stateConfiguration={"mapIterationFailureCount": failures, "errorCausedByState": "HandleItem"},
            inspectionLevel=level,
            mock=MOCK_EXCEPTION_SHORT,
        )
        assert_as_recorded(answer, recorded[key])
    reader_input = json.dumps({"Bucket": "test-bucket", "Key": "test-key"})
    answer = call(
        sfn,
        stateName="State0",
        definition=template("map_item_reader_state_machine"),
        roleArn=role_arn(),
        input=reader_input,
        stateConfiguration={"mapItemReaderData": json.dumps([1, 2, 3])},
        inspectionLevel=level,
        mock={"result": json.dumps([1, 4, 9])},
    )
    recorded = recording(
        f"{CONFIGURATION}::test_state_machine_configuration_map_iteration_item_reader", level
    )
    assert_as_recorded(answer, recorded["test_case_response"])
    recorded = recording(f"{CONFIGURATION}::test_state_machine_configuration_item_reader_with_error", level)
    for failures, key in ((0, "below_tolerated_failure"), (2, "exceeds_tolerated_failure")):
        answer = call(
            sfn,
            stateName="State0",
            definition=template("map_item_reader_state_machine"),
            roleArn=role_arn(),
            input=reader_input,
            stateConfiguration={
                "mapIterationFailureCount": failures,
                "errorCausedByState": "HandleItem",
                "mapItemReaderData": json.dumps([1, 2, 3]),
            },
            inspectionLevel=level,
            mock=MOCK_EXCEPTION_SHORT,
        )
        assert_as_recorded(answer, recorded[key])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("case", "field"),
    [
        ("MAX_CONCURRENCY", "MaxConcurrency"),
        ("TOLERATED_FAILURE_PERCENTAGE", "ToleratedFailurePercentage"),
        ("TOLERATED_FAILURE_COUNT", "ToleratedFailureCount"),
    ],
)
def test_a_mocked_maps_inspected_fields(sfn: Any, level: str, case: str, field: str) -> None:
    answer = call(
        sfn,
        definition=template("base_map_state", **{field: "{% $variable := 1 %}"}),
        roleArn=role_arn(),
        input=json.dumps({"Values": [1, 2, 3]}),
        inspectionLevel=level,
        mock={"result": json.dumps([1, 1, 1])},
    )
    recorded = recording(f"{SCENARIOS}::test_base_map_state_inspect", level, case)
    assert_as_recorded(answer, recorded["test_case_response"])


MACHINES = "TestStateMachineScenarios"
MOCKS = "TestStateMockScenarios"
VALIDATION = "TestStateMockValidation"
CONTEXT = "TestStateContextObject"
FIELD_VALIDATION = "TestFieldValidationMode"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("case", "machine", "state_name"),
    [
        ("BASE_PASS_STATE_MACHINE", "base_pass_state_machine", "State0"),
        ("BASE_FAIL_STATE_MACHINE", "base_fail_state_machine", "State0"),
        ("BASE_MAP_STATE_MACHINE", "base_map_state_machine", "HandleItem"),
    ],
)
def test_a_state_of_a_whole_state_machine(
    sfn: Any, level: str, case: str, machine: str, state_name: str
) -> None:
    answer = call(
        sfn, stateName=state_name, definition=template(machine), input=HELLO_WORLD, inspectionLevel=level
    )
    assert_as_recorded(
        answer, recording(f"{MACHINES}::test_base_state_name", level, case)["test_case_response"]
    )


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("state_name", ["State0", "State1"])
def test_a_state_with_a_next_state(sfn: Any, level: str, state_name: str) -> None:
    answer = call(
        sfn,
        stateName=state_name,
        definition=template("base_multi_state_machine"),
        input=HELLO_WORLD,
        inspectionLevel=level,
    )
    recorded = recording(f"{MACHINES}::test_base_state_name_multi_state", level, state_name)
    assert_as_recorded(answer, recorded["test_case_response"])


@pytest.mark.parametrize("state_name", ["dne", '"invalid"'])
def test_a_state_name_not_in_the_definition_is_refused(sfn: Any, state_name: str) -> None:
    answer = call(
        sfn, stateName=state_name, definition=template("base_pass_state_machine"), input=HELLO_WORLD
    )
    assert answer["Error"] == {"Code": "ValidationException", "Message": "State not found in definition"}


def test_an_invalid_definition_is_refused(sfn: Any) -> None:
    answer = call(
        sfn,
        stateName="ExistingButInvalidState",
        definition=template("base_invalid_state_definition"),
        input=HELLO_WORLD,
    )
    recorded = RECORDED[f"{MACHINES}::test_state_name_invalid_state_definition"]["validation_exception"]
    # The code as AWS answers it; the message is the parser's (AWS names the JSON path in its own words).
    assert answer["Error"]["Code"] == recorded["Error"]["Code"] == "InvalidDefinition"
    assert "TypeThatDoesNotExist" in answer["Error"]["Message"]


MOCK_VARIANTS = {
    "mock_result": {"result": json.dumps({"mock": "the unmockable"})},
    "mock_error_output": {"errorOutput": {"error": "Error", "cause": "Cause"}},
}


@pytest.mark.parametrize("mock", MOCK_VARIANTS)
@pytest.mark.parametrize(
    ("case", "name"),
    [
        ("PassState", "base_pass_state"),
        ("FailState", "base_fail_state"),
        ("SucceedState", "base_succeed_state"),
    ],
)
def test_states_that_take_no_mock(sfn: Any, mock: str, case: str, name: str) -> None:
    answer = call(sfn, definition=template(name), inspectionLevel="TRACE", mock=MOCK_VARIANTS[mock])
    recorded = recording(f"{VALIDATION}::test_state_type_does_not_accept_mock", mock, case)
    assert_as_recorded(answer, recorded["validation_exception"])


@pytest.mark.parametrize(
    ("case", "name"),
    [
        ("MapState", "base_map_state"),
        ("MapTaskState", "map_task_state"),
        ("ParallelState", "base_parallel_state"),
    ],
)
def test_map_and_parallel_states_need_a_mock(sfn: Any, case: str, name: str) -> None:
    answer = call(sfn, definition=template(name), inspectionLevel="TRACE")
    assert_as_recorded(
        answer, recording(f"{VALIDATION}::test_state_type_requires_mock", case)["validation_exception"]
    )


def test_mock_validation(sfn: Any) -> None:
    lambda_task = template("base_lambda_service_task_state")
    cases: dict[str, dict[str, Any]] = {
        "test_both_mock_result_and_mock_error_output_are_set": {
            "definition": lambda_task,
            "mock": {
                "result": json.dumps({"mock": "response"}),
                "errorOutput": {"error": "Error", "cause": "Cause"},
            },
        },
        "test_reveal_secrets_is_true_and_mock_result_is_set": {
            "definition": lambda_task,
            "mock": {"result": json.dumps({"mock": "response"})},
            "revealSecrets": True,
        },
        "test_mock_result_is_not_array_on_map_state_without_result_writer": {
            "definition": template("base_map_state"),
            "mock": {"result": json.dumps({"mock": "array is expected but object is provided instead"})},
        },
        "test_mock_result_is_not_object_on_map_state_with_result_writer": {
            "definition": template("base_map_state_result_writer"),
            "mock": {"result": json.dumps(["object is expected but array is provided instead"])},
        },
        "test_mock_result_is_not_array_on_parallel_state": {
            "definition": template("base_parallel_state"),
            "mock": {"result": json.dumps({"mock": "array is expected but object is provided instead"})},
        },
        "test_mock_result_array_size_mismatch_on_parallel_state": {
            "definition": template("base_parallel_state"),
            "mock": {"result": json.dumps([{"branch1": "result"}])},
        },
        "test_map_iteration_failure_count_without_mock": {
            "definition": template("base_map_state"),
            "roleArn": role_arn(),
            "stateConfiguration": {"mapIterationFailureCount": 0},
        },
        "test_map_iteration_failure_count_exceeds_mock_result_items": {
            "definition": template("base_map_state"),
            "roleArn": role_arn(),
            "input": json.dumps({"Values": [1, 1, 1]}),
            "stateConfiguration": {"mapIterationFailureCount": 4},
            "mock": {"result": json.dumps([1, 1, 1])},
        },
    }
    for test, request in cases.items():
        answer = call(sfn, inspectionLevel="TRACE", **request)
        assert_as_recorded(answer, RECORDED[f"{VALIDATION}::{test}"]["validation_exception"])


CONTEXT_OBJECT = {
    "Execution": {
        "Id": "arn:aws:states:::execution:MyStateMachine:execution-name-12345",
        "Input": {"input-value": 0, "message": "test data", "values": ["charizard", "pikachu", "bulbasaur"]},
        "Name": "execution-name-12345",
        "RoleArn": "arn:aws:iam:::role/StepFunctionsRole",
        "StartTime": "2025-01-15T10:30:00.000Z",
    },
    "State": {"EnteredTime": "2025-01-15T10:30:01.500Z", "Name": "MyTaskState", "RetryCount": 0},
    "StateMachine": {"Id": "arn:aws:states:::stateMachine:MyStateMachine", "Name": "MyStateMachine"},
}
CONTEXT_PLACEHOLDER = "%CONTEXT_OBJECT_LITERAL_PLACEHOLDER%"
CONTEXT_PATHS = {
    "ALL": "$$",
    "EXECUTION_INPUT": "$$.Execution.Input",
    "EXECUTION_INPUT_VALUES": "$$.Execution.Input.values",
}


def task_with_context_path(path: str) -> str:
    machine = json.loads(template("context_object_result_selector"))
    return json.dumps(machine["States"]["TestState"]).replace(CONTEXT_PLACEHOLDER, path)


@pytest.mark.parametrize("case", CONTEXT_PATHS)
def test_a_given_context_object(sfn: Any, case: str) -> None:
    answer = call(
        sfn,
        definition=task_with_context_path(CONTEXT_PATHS[case]),
        input=json.dumps({"FunctionName": "lambda_function_name", "Payload": {"input-value": 0}}),
        inspectionLevel="TRACE",
        context=json.dumps(CONTEXT_OBJECT),
        mock={"result": json.dumps({"pokemon": ["charizard", "pikachu", "bulbasaur"]})},
    )
    assert_as_recorded(
        answer, recording(f"{CONTEXT}::test_state_task_context_object", case)["test_case_response"]
    )


def test_a_given_context_object_in_a_mocked_map(sfn: Any) -> None:
    machine = json.loads(template("context_object_items_path"))
    definition = json.dumps(machine["States"]["TestState"]).replace(
        CONTEXT_PLACEHOLDER, "$$.Execution.Input.values"
    )
    answer = call(
        sfn,
        definition=definition,
        input=json.dumps(["fire", "electricity", "grass"]),
        inspectionLevel="TRACE",
        context=json.dumps(CONTEXT_OBJECT),
        mock={"result": json.dumps(["CHARIZARD", "PIKACHU", "BULBASAUR"])},
    )
    recorded = recording(f"{CONTEXT}::test_state_map_context_object", "EXECUTION_INPUT_VALUES")
    assert_as_recorded(answer, recorded["test_case_response"])


def test_a_wait_for_token_task_with_a_given_task_token(sfn: Any) -> None:
    definition = json.loads(template("io_sqs_service_task_wait"))
    definition["Parameters"]["QueueUrl"] = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/test-queue"
    answer = call(
        sfn,
        definition=json.dumps(definition),
        inspectionLevel="TRACE",
        context=json.dumps(CONTEXT_OBJECT | {"Task": {"Token": "abcd123"}}),
        mock={"result": json.dumps({"pokemon": ["charizard", "pikachu", "bulbasaur"]})},
    )
    assert_as_recorded(
        answer, RECORDED[f"{CONTEXT}::test_state_wait_task_context_object"]["test_case_response"]
    )


@pytest.mark.parametrize(
    ("case", "context"),
    [
        ("INVALID_EXECUTION_ID_TYPE", {"Execution": {"Id": 1}}),
        ("INVALID_MAP", {"Map": {}}),
        ("INVALID_EXECUTION_FIELD", {"Execution": {"pokemon": "squirtle"}}),
        ("INVALID_FIELD", {"Pokedex": {}}),
    ],
)
def test_an_invalid_context_object_is_refused(sfn: Any, case: str, context: dict[str, Any]) -> None:
    answer = call(
        sfn,
        definition=template("base_sfn_start_execution"),
        input=json.dumps({"stateMachineArn": "arn", "targetInput": None, "name": "exec_name"}),
        inspectionLevel="TRACE",
        context=json.dumps(context),
        mock={"result": json.dumps({"ExecutionArn": "exec_arn", "StartDate": now()})},
    )
    recorded = recording(f"{CONTEXT}::test_state_context_object_validation_failures", case)["exception"]
    assert recorded["exception_value"].endswith(f"TestState operation: {answer['Error']['Message']}")
    assert answer["Error"]["Code"] == recorded["exception_typename"]


def test_a_task_context_for_a_state_that_waits_for_no_token_is_refused(sfn: Any) -> None:
    answer = call(
        sfn,
        definition=task_with_context_path("$$"),
        input=json.dumps(["fire", "electricity", "grass"]),
        inspectionLevel="TRACE",
        context=json.dumps(CONTEXT_OBJECT | {"Task": {"Token": "abcd123"}}),
        mock={"result": json.dumps({"pokemon": ["CHARIZARD", "PIKACHU", "BULBASAUR"]})},
    )
    recorded = recording(f"{CONTEXT}::test_state_context_object_invalid_states", "TOKEN_TASK_NOT_SYNC")[
        "exception"
    ]
    assert recorded["exception_value"].endswith(f"TestState operation: {answer['Error']['Message']}")


@pytest.mark.parametrize(
    ("case", "context"),
    [("EMPTY_OBJECTS", {"Execution": {}, "State": {}, "StateMachine": {}}), ("EMPTY", {})],
)
def test_an_empty_context_object(sfn: Any, case: str, context: dict[str, Any]) -> None:
    answer = call(
        sfn,
        definition=task_with_context_path("$$"),
        input=json.dumps({"FunctionName": "lambda_function_name", "Payload": {"input-value": 0}}),
        inspectionLevel="TRACE",
        context=json.dumps(context),
        mock={"result": json.dumps({"pokemon": "pikachu"})},
    )
    assert_as_recorded(
        answer, recording(f"{CONTEXT}::test_state_context_object_edge_cases", case)["test_case_response"]
    )


def test_mocked_service_tasks(sfn: Any) -> None:
    table_input = json.dumps(
        {"TableName": "sfn_test_table", "Item": {"data": {"S": "HelloWorld"}, "id": {"S": "id1"}}}
    )
    dynamodb_result = json.dumps({"SdkHttpMetadata": {"HttpStatusCode": 200}})
    for name, case in (
        ("base_dynamodb_service_task_state", "base"),
        ("io_dynamodb_service_task_state", "io"),
        ("io_output_path_dynamodb_service_task_state", "io_output_path"),
    ):
        answer = call(sfn, definition=template(name), input=table_input, mock={"result": dynamodb_result})
        recorded = recording(f"{MOCKS}::test_io_dynamodb_service_task_mock_success", case)
        assert_as_recorded(answer, recorded["test_case_response"])
    answer = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        input=json.dumps({"FunctionName": "lambda_func", "Payload": None}),
        mock={
            "result": json.dumps({"Payload": "function output", "SdkHttpMetadata": {"HttpStatusCode": 200}})
        },
    )
    assert_as_recorded(
        answer, RECORDED[f"{MOCKS}::test_base_lambda_service_task_mock_success"]["test_case_response"]
    )
    answer = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        input=json.dumps({"FunctionName": "lambda_func", "Payload": None}),
        mock={"result": "not JSON string", "fieldValidationMode": "NONE"},
    )
    recorded = RECORDED[f"{MOCKS}::test_base_lambda_service_task_mock_is_not_json_string"]
    assert_as_recorded(answer, recorded["validation-exception"])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("test", "name", "document"),
    [
        ("test_base_parallel_state_mock_success", "base_parallel_state", {"key": "value"}),
        (
            "test_io_parallel_state_mock_success",
            "io_parallel_state",
            {"parallelInput": {"data": "input_value"}},
        ),
        (
            "test_io_jsonata_parallel_state_mock_success",
            "io_jsonata_parallel_state",
            {"parallelInput": {"data": "input_value"}},
        ),
    ],
)
def test_a_mocked_parallel_state(
    sfn: Any, level: str, test: str, name: str, document: dict[str, Any]
) -> None:
    answer = call(
        sfn,
        definition=template(name),
        input=json.dumps(document),
        inspectionLevel=level,
        mock={"result": json.dumps([{"branch1": "result"}, {"branch2": "result"}])},
    )
    assert_as_recorded(answer, recording(f"{MOCKS}::{test}", level)["test_case_response"])


@pytest.mark.parametrize(
    ("case", "variables"),
    [("base_expressions", {"var_input_value": "test_value", "var_constant_1": 10}), ("empty_variables", {})],
)
def test_variables_given_to_the_state(sfn: Any, case: str, variables: dict[str, Any]) -> None:
    machine = "base_expr" if case == "base_expressions" else "base_literals"
    answer = call(
        sfn,
        definition=template(machine),
        stateName="State0",
        input=json.dumps({"input_values": [1, 2, 3]}),
        variables=json.dumps(variables),
        inspectionLevel="TRACE",
    )
    # AWS names the tested state "StateName" in the context object even when stateName names it.
    recorded = recording(f"{SCENARIOS}::test_state_with_variables", case)["test_case_response"]
    assert_as_recorded(answer, recorded, ignore=("Name",) if case == "base_expressions" else ())


def test_the_approval_workflow_one_state_at_a_time(sfn: Any) -> None:
    """LocalStack's blog post scenario: a JSONata cost-approval workflow tested state by state."""
    definition = json.loads(template("localstack_blogpost_scenario_state_machine"))
    definition["States"]["Ask for Approval"]["Arguments"]["ApiEndpoint"] = (
        "example.execute-api.us-east-1.amazonaws.com"
    )
    recorded = RECORDED[f"{SCENARIOS}::test_localstack_blogpost_scenario"]
    steps = [
        ("small_purchase_approval_required_response", "Approval Required", {"cost": 9}, None),
        ("large_purchase_approval_required_response", "Approval Required", {"cost": 10}, None),
        (
            "large_purchase_ask_for_approval_response",
            "Ask for Approval",
            {"cost": 10},
            {"result": '{"approval": true }'},
        ),
        (
            "check_approval_granted_response",
            "Check Approval",
            {"approval": True, "approval_code": "2387462", "approved_by": "Mary"},
            None,
        ),
        ("check_approval_denied_response", "Check Approval", {"approval": False}, None),
    ]
    for key, state_name, document, mock in steps:
        request: dict[str, Any] = {"definition": json.dumps(definition), "input": json.dumps(document)}
        request |= {"stateName": state_name, "inspectionLevel": "TRACE"} | ({"mock": mock} if mock else {})
        assert_as_recorded(call(sfn, **request), recorded[key])


# -------------------------------------------------------------------------------------------- unmocked Tasks


@pytest.mark.parametrize("level", LEVELS)
def test_an_unmocked_lambda_task_invokes_the_local_function(sfn: Any, cloud: LocalCloud, level: str) -> None:
    function_arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:ReturnBytesStrFunction"
    answer = call(
        sfn,
        definition=template("base_lambda_task_state", Resource=function_arn),
        roleArn=role_arn(),
        input=json.dumps({"inputData": "HelloWorld"}),
        inspectionLevel=level,
    )
    assert_as_recorded(
        answer, recording(f"{SCENARIOS}::test_base_lambda_task_state", level)["test_case_response"]
    )
    answer = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        roleArn=role_arn(),
        input=json.dumps({"FunctionName": "IdentityFunction", "Payload": None}),
        inspectionLevel=level,
    )
    recorded = recording(f"{SCENARIOS}::test_base_lambda_service_task_state", level)["test_case_response"]
    assert_as_recorded(answer, recorded, ignore=("SdkHttpMetadata", "SdkResponseMetadata"))


def test_an_unmocked_task_needs_a_role(sfn: Any) -> None:
    answer = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        input=json.dumps({"FunctionName": "IdentityFunction", "Payload": None}),
        inspectionLevel="TRACE",
    )
    recorded = RECORDED[f"{SCENARIOS}::test_base_lambda_service_task_state_no_role_arn_validation"]
    assert_as_recorded(answer, recorded["validation_exception"])


def test_an_unmocked_task_calls_as_the_role_it_is_given(sfn: Any, cloud: LocalCloud) -> None:
    """The role's policy lets it invoke IdentityFunction only: another function is refused, as on AWS."""
    assert cloud.iam is not None
    holder_role = cloud.iam.state_machine_role_arn("test-state-role-holder")
    assert holder_role is not None
    allowed = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        roleArn=holder_role,
        input=json.dumps({"FunctionName": "IdentityFunction", "Payload": {"n": 1}}),
    )
    assert allowed["status"] == "SUCCEEDED"
    assert json.loads(allowed["output"])["Payload"] == {"n": 1}
    refused = call(
        sfn,
        definition=template("base_lambda_service_task_state"),
        roleArn=holder_role,
        input=json.dumps({"FunctionName": "ReturnBytesStrFunction", "Payload": None}),
    )
    assert (refused["status"], refused["error"]) == ("FAILED", "Lambda.AWSLambdaException")
    assert "AccessDeniedException" in refused["cause"]


# ------------------------------------------------------------------------------------------ field validation

START_EXECUTION_INPUT = json.dumps(
    {
        "stateMachineArn": f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:TargetStateMachine",
        "targetInput": None,
        "name": "TestStartTarget",
    }
)
FIELD_CASES = [
    (
        "test_strict_mode_sfn_task",
        "missing_required_fields",
        "base_sfn_start_execution",
        START_EXECUTION_INPUT,
        {},
    ),
    (
        "test_strict_mode_sfn_task",
        "field_name_not_in_sfn_case",
        "base_sfn_start_execution",
        START_EXECUTION_INPUT,
        {"executionArn": "stringValueExecutionArn", "startDate": "stringValueStartDate"},
    ),
    (
        "test_strict_mode_sfn_task",
        "wrong_timestamp_type_bool",
        "base_sfn_start_execution",
        START_EXECUTION_INPUT,
        {"ExecutionArn": "stringValueExecutionArn", "StartDate": True},
    ),
    (
        "test_strict_mode_lambda_task",
        "wrong_integer_type_string",
        "base_lambda_service_task_state",
        json.dumps({"FunctionName": "function_name", "Payload": None}),
        {"StatusCode": "200"},
    ),
    (
        "test_strict_mode_dynamodb_task",
        "wrong_float_type_string",
        "base_dynamodb_service_task_state",
        json.dumps({"TableName": "table_name", "Item": {"data": {"S": "HelloWorld"}, "id": {"S": "id1"}}}),
        {"ConsumedCapacity": {"CapacityUnits": "123.45"}},
    ),
    (
        "test_strict_mode_aws_sdk_s3_task",
        "non_existent_enum_value",
        "base_aws_api_s3_get_object",
        json.dumps({"Bucket": "bucket_name", "Key": "file_key"}),
        {"StorageClass": "Papyrus"},
    ),
    (
        "test_strict_mode_aws_sdk_kms_task",
        "wrong_blob_length_less_than_minimum",
        "base_aws_api_kms_encrypt",
        json.dumps({"KeyId": "key_id", "Plaintext": "plain_text"}),
        {"CiphertextBlob": ""},
    ),
    (
        "test_strict_mode_aws_sdk_lambda_get_function_task",
        # Not integer_more_than_maximum_allowed (10241): Lambda's model has since raised the maximum to 32768.
        "integer_less_than_minimum_allowed",
        "base_aws_api_lambda_get_function",
        json.dumps({"FunctionName": "function_name"}),
        {"Configuration": {"MemorySize": 127}},
    ),
    (
        "test_strict_mode_eventbridge_task",
        "wrong_type_2nd_array_element",
        "base_events_put_events",
        json.dumps({"Entries": [{"Detail": "detail", "DetailType": "detail_type", "Source": "source"}]}),
        {"Entries": [{"EventId": "First eventId has correct type: string"}, {"EventId": ["Second eventId"]}]},
    ),
]


@pytest.mark.parametrize(("test", "case", "name", "document", "result"), FIELD_CASES)
def test_a_mocked_result_is_checked_against_the_api_model(
    sfn: Any, test: str, case: str, name: str, document: str, result: dict[str, Any]
) -> None:
    answer = call(sfn, definition=template(name), input=document, mock={"result": json.dumps(result)})
    assert_as_recorded(answer, recording(f"{FIELD_VALIDATION}::{test}", case)["validation-exception"])


def test_present_and_none_modes_check_less(sfn: Any) -> None:
    missing_fields = {"result": json.dumps({}), "fieldValidationMode": "PRESENT"}
    answer = call(
        sfn, definition=template("base_sfn_start_execution"), input=START_EXECUTION_INPUT, mock=missing_fields
    )
    recorded = recording(
        "TestFieldValidationModePresent::test_present_mode_sfn_task_validation_pass",
        "missing_required_fields",
    )
    assert_as_recorded(answer, recorded["test_state_response"])
    wrong_type = {"result": json.dumps({"ExecutionArn": 1764103483}), "fieldValidationMode": "PRESENT"}
    answer = call(
        sfn, definition=template("base_sfn_start_execution"), input=START_EXECUTION_INPUT, mock=wrong_type
    )
    recorded = recording(
        "TestFieldValidationModePresent::test_present_mode_sfn_task_validation_fail",
        "wrong_string_type_number",
    )
    assert_as_recorded(answer, recorded["validation-exception"])
    anything = {
        "result": json.dumps({"ExecutionArn": "stringValueExecutionArn", "StartDate": True}),
        "fieldValidationMode": "NONE",
    }
    answer = call(
        sfn, definition=template("base_sfn_start_execution"), input=START_EXECUTION_INPUT, mock=anything
    )
    recorded = recording("TestFieldValidationModeNone::test_none_mode_sfn_task", "wrong_timestamp_type_bool")
    assert_as_recorded(answer, recorded["test_state_response"])


# ---------------------------------------------------------------------------------------------- this app

THROTTLED = {"errorOutput": {"error": "Lambda.TooManyRequestsException", "cause": "Rate Exceeded."}}


@pytest.fixture(scope="module")
def app_definition() -> str:
    """This app's state machine as deployed (its DefinitionSubstitutions filled in)."""
    (machine,) = load_stack(PROJECT_ROOT / "template.yaml").state_machines
    return machine.definition


def test_the_apps_throttle_retrier_waits_at_most_its_cap(sfn: Any, app_definition: str) -> None:
    """Validate order's 429 retrier: IntervalSeconds 1, BackoffRate 2, MaxDelaySeconds 8, 20 attempts."""
    waits = {}
    for retries in (0, 1, 2, 3, 5, 19):
        answer = call(
            sfn,
            definition=app_definition,
            stateName="Validate order",
            input=json.dumps({"batch_id": "b-1", "item_index": 0, "order": {}}),
            mock=THROTTLED,
            stateConfiguration={"retrierRetryCount": retries},
            inspectionLevel="DEBUG",
        )
        assert (answer["status"], answer["error"]) == ("RETRIABLE", "Lambda.TooManyRequestsException")
        assert answer["inspectionData"]["errorDetails"]["retryIndex"] == 0
        waits[retries] = answer["inspectionData"]["errorDetails"]["retryBackoffIntervalSeconds"]
    assert waits == {0: 1, 1: 2, 2: 4, 3: 8, 5: 8, 19: 8}


def test_the_apps_exhausted_throttle_retrier_sets_the_order_aside_with_its_input(
    sfn: Any, app_definition: str
) -> None:
    item = {"batch_id": "b-1", "item_index": 0, "order": {}}
    answer = call(
        sfn,
        definition=app_definition,
        stateName="Validate order",
        input=json.dumps(item),
        mock=THROTTLED,
        stateConfiguration={"retrierRetryCount": 20},
        inspectionLevel="DEBUG",
    )
    assert (answer["status"], answer["nextState"]) == ("CAUGHT_ERROR", "Validation throttled")
    assert answer["inspectionData"]["errorDetails"] == {"retryIndex": 0, "catchIndex": 0}
    # ResultPath null: the step's input as it was, for the second pass to run the step again with it.
    assert json.loads(answer["output"]) == item


def test_the_apps_declined_payment_goes_to_cancel_order(sfn: Any, app_definition: str) -> None:
    declined = {"order_id": "order-0001", "outcome": "FAILED", "code": "PAYMENT_DECLINED"}
    answer = call(
        sfn, definition=app_definition, stateName="Is the payment charged?", input=json.dumps(declined)
    )
    assert (answer["status"], answer["nextState"], json.loads(answer["output"])) == (
        "SUCCEEDED",
        "Cancel order",
        declined,
    )


def test_a_wait_for_token_task_needs_a_mock(sfn: Any) -> None:
    definition = json.loads(template("io_sqs_service_task_wait"))
    answer = call(sfn, definition=json.dumps(definition), roleArn=role_arn(), inspectionLevel="TRACE")
    assert answer["Error"]["Code"] == "ValidationException"
    assert ".waitForTaskToken" in answer["Error"]["Message"]


# ---------------------------------------------------------------------------------------------- helpers


def role_arn() -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/TestStateRole"


def now() -> str:
    return datetime.now(UTC).isoformat()
