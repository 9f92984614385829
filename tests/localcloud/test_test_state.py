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
from orderbatch.localcloud.cloud import LocalCloud, LocalCloudConfig

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


# ---------------------------------------------------------------------------------------------- helpers


def role_arn() -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/TestStateRole"


def now() -> str:
    return datetime.now(UTC).isoformat()
