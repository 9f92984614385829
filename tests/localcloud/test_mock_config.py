"""Step Functions Local's MockConfigFile on the local cloud, as boto3 sees it.

Two of AWS's published sample apps run here with their own state machines and mock files, and their tests'
assertions (see PROVENANCE.md in each folder of mock_config_samples/); then this app's worked example
(examples/mock-config.json, docs/stepfunctions-local.md) on the real template; then how invocations are
counted and what a test case without enough responses does; then the file's validation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from orderbatch.app_batches import local_cloud_config
from orderbatch.cli import main
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stepfunctions.mock_config import (
    MockConfigError,
    load_mock_config,
    parse_mock_config,
)

SAMPLES = Path(__file__).resolve().parent / "mock_config_samples"
SAMPLES_TEMPLATE = SAMPLES / "template.yaml"
APP_MOCK_CONFIG = PROJECT_ROOT / "examples" / "mock-config.json"
DUMMY_ROLE = "arn:aws:iam::123456789012:role/DummyRole"
EXECUTION_TIMEOUT = 90


def history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)[
        "events"
    ]
    return events


def run_test_cases(sfn: Any, state_machine_arn: str, runs: dict[str, str], document: str) -> dict[str, Any]:
    """Start each execution name -> test case at once, wait for all; their histories by execution name."""

    def run(name: str, test_case: str) -> tuple[str, list[dict[str, Any]]]:
        arn = sfn.start_execution(
            name=name, stateMachineArn=f"{state_machine_arn}#{test_case}", input=document
        )["executionArn"]
        wait_for_execution(sfn, arn, timeout=EXECUTION_TIMEOUT, poll_seconds=0.2)
        return arn, history(sfn, arn)

    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = {name: pool.submit(run, name, case) for name, case in runs.items()}
        return {name: future.result() for name, future in futures.items()}


def exited(events: list[dict[str, Any]], kind: str, state: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e["stateExitedEventDetails"]["name"] == state]


def entered(events: list[dict[str, Any]], kind: str, state: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e["stateEnteredEventDetails"]["name"] == state]


def samples_cloud(tmp_path_factory: pytest.TempPathFactory, mock_config: Path) -> LocalCloud:
    return LocalCloud(
        LocalCloudConfig(
            template=SAMPLES_TEMPLATE,
            state_dir=tmp_path_factory.mktemp("mock-config"),
            mock_config=mock_config,
        )
    )


# ---------------------------------------------------------------------------------------------- AWS samples


@pytest.mark.e2e
class TestLambdaSqsIntegrationSample:
    """aws-samples/serverless-test-samples, python-test-samples/step-functions-local-mock: the state machine
    and MockConfigFile of AWS's Step Functions Local guide, with its pytest assertions."""

    @pytest.fixture(scope="class")
    @staticmethod
    def executions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
        folder = SAMPLES / "lambda_sqs_integration"
        with samples_cloud(tmp_path_factory, folder / "MockConfigFile.json") as cloud:
            sfn = cloud.client("stepfunctions")
            # As the sample's fixture does: the definition as written, a dummy role.
            arn = sfn.create_state_machine(
                name="LambdaSQSIntegration",
                definition=(folder / "local_testing.asl.json").read_text(encoding="utf-8"),
                roleArn=DUMMY_ROLE,
            )["stateMachineArn"]
            runs = {"happyPathExecution": "HappyPath", "retryPathExecution": "RetryPath"}
            runs["hybridPathExecution"] = "HybridPath"
            yield {"sfn": sfn, "arn": arn, **run_test_cases(sfn, arn, runs, '{"data": "test input"}')}

    def test_an_execution_of_a_test_case_is_the_state_machines_own(self, executions: dict[str, Any]) -> None:
        arn, _ = executions["happyPathExecution"]
        assert (
            arn == "arn:aws:states:us-east-1:123456789012:execution:LambdaSQSIntegration:happyPathExecution"
        )
        described = executions["sfn"].describe_execution(executionArn=arn)
        assert described["stateMachineArn"] == executions["arn"]
        assert described["status"] == "SUCCEEDED"
        listed = executions["sfn"].list_executions(stateMachineArn=executions["arn"])["executions"]
        assert {item["name"] for item in listed} == {
            "happyPathExecution",
            "retryPathExecution",
            "hybridPathExecution",
        }

    def test_the_test_case_is_kept_beside_the_execution_not_on_it(self, executions: dict[str, Any]) -> None:
        from sam_local_cloud.moto_seam.stepfunctions import stepfunctions_parser_backends
        from sam_local_cloud.stepfunctions.mock_config import test_case_of

        arn, _ = executions["happyPathExecution"]
        execution = stepfunctions_parser_backends["123456789012"]["us-east-1"].describe_execution(arn)
        run = test_case_of(execution)

        assert [name for name in vars(execution) if name.startswith("orderbatch")] == []
        assert run is not None
        assert (run.test_case_name, run.invocations("LambdaState"), run.invocations("SQSState")) == (
            "HappyPath",
            1,
            1,
        )

    def test_happy_path(self, executions: dict[str, Any]) -> None:
        _, events = executions["happyPathExecution"]
        assert exited(events, "TaskStateExited", "LambdaState")
        assert exited(events, "TaskStateExited", "SQSState")
        assert sum(1 for e in events if e["type"] == "TaskSucceeded") == 2
        lambda_output = json.loads(
            exited(events, "TaskStateExited", "LambdaState")[0]["stateExitedEventDetails"]["output"]
        )
        assert lambda_output == {
            "StatusCode": 200,
            "Payload": {"StatusCode": 200, "body": "Hello from Lambda!"},
        }

    def test_retry_path(self, executions: dict[str, Any]) -> None:
        _, events = executions["retryPathExecution"]
        assert exited(events, "TaskStateExited", "LambdaState")
        assert exited(events, "TaskStateExited", "SQSState")
        errors = [e["taskFailedEventDetails"]["error"] for e in events if e["type"] == "TaskFailed"]
        assert errors == [
            "Lambda.ResourceNotReadyException",
            "Lambda.TimeoutException",
            "Lambda.TimeoutException",
        ]

    def test_hybrid_path(self, executions: dict[str, Any]) -> None:
        _, events = executions["hybridPathExecution"]
        assert any(e["type"] == "ExecutionSucceeded" for e in events)
        assert exited(events, "TaskStateExited", "LambdaState")
        assert exited(events, "TaskStateExited", "SQSState")


@pytest.mark.e2e
class TestSalesLeadSample:
    """aws-samples/aws-stepfunctions-examples, sam/app-local-testing-mock-config (Parallel, Comprehend,
    DynamoDB and EventBridge, all mocked): the assertions of its README and makefile, of the JUnit test in
    sam/demo-local-testing-using-java and of aws-samples/serverless-test-samples'
    python-test-samples/step-functions-local."""

    @pytest.fixture(scope="class")
    @staticmethod
    def executions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
        folder = SAMPLES / "local_testing"
        with samples_cloud(tmp_path_factory, folder / "MockConfigFile.json") as cloud:
            sfn = cloud.client("stepfunctions")
            arn = sfn.create_state_machine(
                name="LocalTesting",
                definition=(folder / "local_testing.asl.json").read_text(encoding="utf-8"),
                roleArn=DUMMY_ROLE,
            )["stateMachineArn"]
            runs = {
                "happyPathExecution": "HappyPathTest",
                "negativeSentimentExecution": "NegativeSentimentTest",
                "catchCustomErrorExecution": "CustomValidationFailedCatchTest",
                "runtimeExceptionExecution": "ValidationExceptionCatchTest",
                "retryWithServiceException": "RetryOnServiceExceptionTest",
            }
            document = (folder / "sfn_valid_input.json").read_text(encoding="utf-8")
            yield run_test_cases(sfn, arn, runs, document)

    def test_happy_path_exits_customer_added_to_followup_once(self, executions: dict[str, Any]) -> None:
        _, events = executions["happyPathExecution"]
        assert len(exited(events, "TaskStateExited", "CustomerAddedToFollowup")) == 1
        assert any(e["type"] == "ExecutionSucceeded" for e in events)

    def test_negative_sentiment_exits_negative_sentiment_detected_once(
        self, executions: dict[str, Any]
    ) -> None:
        _, events = executions["negativeSentimentExecution"]
        assert len(exited(events, "TaskStateExited", "NegativeSentimentDetected")) == 1
        assert not exited(events, "TaskStateExited", "CustomerAddedToFollowup")

    def test_custom_validation_error_is_caught(self, executions: dict[str, Any]) -> None:
        _, events = executions["catchCustomErrorExecution"]
        caught = [
            e
            for e in entered(events, "TaskStateEntered", "CustomValidationFailed")
            if "Check Identity Validation Failed" in e["stateEnteredEventDetails"]["input"]
        ]
        assert len(caught) == 1
        # "0-3": the first attempt and the retrier's three retries all throw, each one invocation.
        identity_failures = [
            e
            for e in events
            if e["type"] == "TaskFailed" and e["taskFailedEventDetails"]["error"] == "CustomValidationError"
        ]
        assert len(identity_failures) == 4

    def test_other_validation_errors_go_to_validation_exception(self, executions: dict[str, Any]) -> None:
        _, events = executions["runtimeExceptionExecution"]
        caught = [
            e
            for e in entered(events, "TaskStateEntered", "ValidationException")
            if "Address Validation Exception" in e["stateEnteredEventDetails"]["input"]
        ]
        assert len(caught) == 1

    def test_retry_on_service_exception(self, executions: dict[str, Any]) -> None:
        """The sample filters TaskSucceeded on resource ``comprehend:detectSentiment``, the shape Step
        Functions Local records. AWS records an SDK integration as resourceType ``aws-sdk:comprehend`` and
        resource ``detectSentiment`` (LocalStack's AWS-recorded snapshots), and so does the local cloud:
        the same filter, in AWS's shape."""
        _, events = executions["retryWithServiceException"]
        results = [
            e
            for e in events
            if (
                e["type"] == "TaskFailed"
                and e["taskFailedEventDetails"]["error"] == "InternalServerException"
            )
            or (
                e["type"] == "TaskSucceeded"
                and e["taskSucceededEventDetails"]["resourceType"] == "aws-sdk:comprehend"
                and e["taskSucceededEventDetails"]["resource"] == "detectSentiment"
            )
        ]
        assert len(results) == 4
        assert [e["type"] for e in results] == ["TaskFailed"] * 3 + ["TaskSucceeded"]
        output = json.loads(results[3]["taskSucceededEventDetails"]["output"])
        assert output["Sentiment"] == "POSITIVE"
        # BackoffRate 1, IntervalSeconds 1: the retries are a second apart, as in the README's recording.
        times = [e["timestamp"] for e in results]
        assert all(later - earlier >= timedelta(seconds=0.9) for earlier, later in pairwise(times))
        assert len(exited(events, "TaskStateExited", "CustomerAddedToFollowup")) == 1


# ---------------------------------------------------------------------------------------------- this app


ONE_ORDER_BATCH = {
    "batch_id": "batch-mock-0001",
    "orders": [
        {
            "order_id": "order-0001",
            "customer_id": "customer-001",
            "currency": "USD",
            "items": [{"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"}],
        }
    ],
}
TASK_FUNCTIONS = (
    "ValidateOrderFunction",
    "ReserveInventoryFunction",
    "ChargePaymentFunction",
    "ConfirmOrderFunction",
    "CancelOrderFunction",
)


@pytest.mark.e2e
class TestAppWorkedExample:
    """examples/mock-config.json on the real template: a happy path, a throttled path the retrier absorbs and
    a payment-declined path whose summary the real SummarizeBatchFunction computes."""

    @pytest.fixture(scope="class")
    @staticmethod
    def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
        template = PROJECT_ROOT / "template.yaml"
        config = local_cloud_config(
            template,
            state_dir=tmp_path_factory.mktemp("mock-config-app"),
            mock_config=APP_MOCK_CONFIG,
        )
        with LocalCloud(config) as cloud:
            sfn = cloud.client("stepfunctions")
            (machine,) = cloud.stack.state_machines
            runs = {"happy": "HappyPath", "throttled": "ThrottledPath", "declined": "PaymentDeclinedPath"}
            started = datetime.now(UTC) - timedelta(minutes=1)
            results = run_test_cases(sfn, machine.arn, runs, json.dumps(ONE_ORDER_BATCH))
            cloud.flush_metrics()
            yield {"cloud": cloud, "sfn": sfn, "started": started, **results}

    def output(self, app: dict[str, Any], name: str) -> dict[str, Any]:
        arn, _ = app[name]
        described = app["sfn"].describe_execution(executionArn=arn)
        assert described["status"] == "SUCCEEDED", described
        result: dict[str, Any] = json.loads(described["output"])
        return result

    def test_happy_path(self, app: dict[str, Any]) -> None:
        summary = self.output(app, "happy")
        assert (summary["total"], summary["succeeded"], summary["failed"]) == (1, 1, 0)
        _, events = app["happy"]
        succeeded = [e for e in events if e["type"] == "TaskSucceeded"]
        assert len(succeeded) == 5
        assert not [e for e in events if e["type"] == "TaskFailed"]

    def test_throttled_twice_then_valid(self, app: dict[str, Any]) -> None:
        summary = self.output(app, "throttled")
        assert summary["succeeded"] == 1
        _, events = app["throttled"]
        failures = [e["taskFailedEventDetails"] for e in events if e["type"] == "TaskFailed"]
        assert [f["error"] for f in failures] == ["Lambda.TooManyRequestsException"] * 2
        assert failures[0]["cause"].startswith("Rate Exceeded. (Service: AWSLambda; Status Code: 429;")
        validated = exited(events, "TaskStateExited", "Validate order")
        assert len(validated) == 1
        assert json.loads(validated[0]["stateExitedEventDetails"]["output"])["outcome"] == "VALID"

    def test_payment_declined_is_compensated_and_summarized_by_the_real_function(
        self, app: dict[str, Any]
    ) -> None:
        summary = self.output(app, "declined")
        assert (summary["total"], summary["succeeded"], summary["failed"]) == (1, 0, 1)
        (order,) = summary["orders"]
        assert (order["order_id"], order["outcome"], order["code"]) == (
            "order-0001",
            "FAILED",
            "PAYMENT_DECLINED",
        )
        _, events = app["declined"]
        assert exited(events, "TaskStateExited", "Cancel order")
        assert not entered(events, "TaskStateEntered", "Confirm order")

    def test_only_the_unmocked_state_invoked_a_function(self, app: dict[str, Any]) -> None:
        cloudwatch = app["cloud"].client("cloudwatch")

        def invocations(function_name: str) -> float:
            datapoints = cloudwatch.get_metric_statistics(
                Namespace="AWS/Lambda",
                MetricName="Invocations",
                Dimensions=[{"Name": "FunctionName", "Value": function_name}],
                StartTime=app["started"],
                EndTime=datetime.now(UTC) + timedelta(minutes=1),
                Period=60,
                Statistics=["Sum"],
            )["Datapoints"]
            return sum(point["Sum"] for point in datapoints)

        assert invocations("SummarizeBatchFunction") == 1
        assert {name: invocations(name) for name in TASK_FUNCTIONS} == dict.fromkeys(TASK_FUNCTIONS, 0)


# ---------------------------------------------------------------------------------------------- mechanics


MAP_MACHINE = {
    "StartAt": "Each item",
    "States": {
        "Each item": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "MaxConcurrency": 1,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Work",
                "States": {
                    "Work": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke",
                        "Parameters": {"FunctionName": "not-deployed", "Payload.$": "$"},
                        "OutputPath": "$.Payload",
                        "Retry": [{"ErrorEquals": ["Work.Busy"], "IntervalSeconds": 1, "MaxAttempts": 2}],
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Failed item"}],
                        "End": True,
                    },
                    "Failed item": {"Type": "Pass", "Result": "caught", "End": True},
                },
            },
            "Next": "Notify",
        },
        "Notify": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl.$": "$$.Execution.Input.queue_url", "MessageBody.$": "$"},
            "ResultPath": None,
            "End": True,
        },
    },
}


def work_mocks(answers: dict[str, Any]) -> dict[str, Any]:
    return {
        "StateMachines": {"map-mechanics": {"TestCases": {"Items": {"Work": "WorkAnswers"}}}},
        "MockedResponses": {"WorkAnswers": answers},
    }


def payload(value: str) -> dict[str, Any]:
    return {"Return": {"StatusCode": 200, "Payload": value}}


@pytest.mark.e2e
class TestInvocationCounting:
    """Invocations counted per state over the whole execution (Map iterations and retries alike), an
    unmocked state calling the real local service, and a test case running out of responses."""

    @pytest.fixture(scope="class")
    @staticmethod
    def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
        mock_file = tmp_path_factory.mktemp("mechanics") / "MockConfigFile.json"
        # Invocation 0 serves item 0; item 1 is busy twice (retried); item 2 fails for good (caught).
        answers = {
            "0": payload("first"),
            "1-2": {"Throw": {"Error": "Work.Busy", "Cause": "try again"}},
            "3": payload("second"),
            "4": {"Throw": {"Error": "Work.Broken", "Cause": "no retrier for this"}},
        }
        mock_file.write_text(json.dumps(work_mocks(answers)))
        with samples_cloud(tmp_path_factory, mock_file) as cloud:
            sfn = cloud.client("stepfunctions")
            arn = sfn.create_state_machine(
                name="map-mechanics", definition=json.dumps(MAP_MACHINE), roleArn=DUMMY_ROLE
            )["stateMachineArn"]
            sqs = cloud.client("sqs")
            queue_url = sqs.create_queue(QueueName="mechanics")["QueueUrl"]
            yield {"sfn": sfn, "sqs": sqs, "arn": arn, "queue_url": queue_url, "mock_file": mock_file}

    def start(self, setup: dict[str, Any], name: str, items: int, test_case: str = "Items") -> str:
        document = {"items": list(range(items)), "queue_url": setup["queue_url"]}
        arn: str = setup["sfn"].start_execution(
            stateMachineArn=f"{setup['arn']}#{test_case}", name=name, input=json.dumps(document)
        )["executionArn"]
        return arn

    def test_map_iterations_and_retries_each_take_the_next_invocation(self, setup: dict[str, Any]) -> None:
        sfn = setup["sfn"]
        arn = self.start(setup, "three-items", 3)
        assert wait_for_execution(sfn, arn, timeout=EXECUTION_TIMEOUT, poll_seconds=0.2) == "SUCCEEDED"
        events = history(sfn, arn)
        errors = [e["taskFailedEventDetails"]["error"] for e in events if e["type"] == "TaskFailed"]
        assert errors == ["Work.Busy", "Work.Busy", "Work.Broken"]
        # The Map's output went on to the unmocked Notify state, which sent it with the real (local) SQS.
        messages = setup["sqs"].receive_message(QueueUrl=setup["queue_url"], WaitTimeSeconds=1)["Messages"]
        assert json.loads(messages[0]["Body"]) == ["first", "second", "caught"]

    def test_an_invocation_without_a_response_fails_the_execution_despite_catch_all(
        self, setup: dict[str, Any]
    ) -> None:
        sfn = setup["sfn"]
        arn = self.start(setup, "four-items", 4)
        assert wait_for_execution(sfn, arn, timeout=EXECUTION_TIMEOUT, poll_seconds=0.2) == "FAILED"
        described = sfn.describe_execution(executionArn=arn)
        assert described["error"] == "States.Runtime"
        assert "no mocked response for invocation 5 of state 'Work'" in described["cause"]
        assert not entered(history(sfn, arn), "TaskStateEntered", "Notify")

    def test_an_edited_file_is_read_again_for_the_next_execution(self, setup: dict[str, Any]) -> None:
        mock_file: Path = setup["mock_file"]
        before = mock_file.read_text()
        try:
            mock_file.write_text(json.dumps(work_mocks({"0": payload("edited")})))
            arn = self.start(setup, "edited", 1)
            assert (
                wait_for_execution(setup["sfn"], arn, timeout=EXECUTION_TIMEOUT, poll_seconds=0.2)
                == "SUCCEEDED"
            )
            messages = setup["sqs"].receive_message(QueueUrl=setup["queue_url"], WaitTimeSeconds=1)[
                "Messages"
            ]
            assert json.loads(messages[0]["Body"]) == ["edited"]
        finally:
            mock_file.write_text(before)
            time.sleep(0.01)

    def test_an_unknown_test_case_is_refused_naming_the_defined_ones(self, setup: dict[str, Any]) -> None:
        with pytest.raises(ClientError) as refused:
            self.start(setup, "unknown", 1, test_case="Nope")
        error = refused.value.response["Error"]
        assert error["Code"] == "InvalidName"
        assert "no test case 'Nope'" in error["Message"]
        assert "Items" in error["Message"]


# ---------------------------------------------------------------------------------------------- the file


def problems_of(document: Any) -> list[str]:
    with pytest.raises(MockConfigError) as invalid:
        parse_mock_config(document, "test.json")
    return invalid.value.problems


def valid_document(**responses: Any) -> dict[str, Any]:
    return {
        "StateMachines": {"Machine": {"TestCases": {"Case": {"Task": "Answer"}}}},
        "MockedResponses": {"Answer": responses or {"0": {"Return": {"ok": True}}}},
    }


def test_the_samples_and_the_apps_example_are_valid() -> None:
    for path in (*SAMPLES.glob("*/MockConfigFile.json"), APP_MOCK_CONFIG):
        config = load_mock_config(path)
        assert config.test_cases


def test_a_range_expands_to_one_answer_per_invocation() -> None:
    config = parse_mock_config(
        valid_document(**{"0": {"Throw": {"Error": "E", "Cause": "c"}}, "1-2": {"Return": 7}}), "test.json"
    )
    answers = config.responses["Answer"].answers
    assert [type(answer).__name__ for answer in answers] == [
        "MockedResponseThrow",
        "MockedResponseReturn",
        "MockedResponseReturn",
    ]


def test_an_unknown_response_name_is_named_with_its_test_case() -> None:
    document = valid_document()
    document["StateMachines"]["Machine"]["TestCases"]["Case"]["Other"] = "Missing"
    assert problems_of(document) == [
        "StateMachines.Machine.TestCases.Case.Other: mocked response 'Missing' is not defined in "
        "MockedResponses"
    ]


def test_a_response_with_both_return_and_throw_or_neither_is_refused() -> None:
    both = {"0": {"Return": 1, "Throw": {"Error": "E", "Cause": "c"}}, "1": {}}
    assert problems_of(valid_document(**both)) == [
        'MockedResponses.Answer["0"]: has both Return and Throw; a response has exactly one',
        'MockedResponses.Answer["1"]: has neither Return nor Throw',
    ]


def test_bad_ranges_are_refused() -> None:
    cases = {
        "x": ['MockedResponses.Answer["x"]: not an invocation number or range (write "0", "3" or "1-2")'],
        "3-1": ['MockedResponses.Answer["3-1"]: range ends before it starts'],
    }
    for key, expected in cases.items():
        assert problems_of(valid_document(**{"0": payload("a"), key: payload("b")})) == expected
    gap = problems_of(valid_document(**{"0": payload("a"), "3": payload("b")}))
    assert gap == [
        "MockedResponses.Answer: no response for invocation 1-2; invocation numbers run consecutively from 0 "
        "(every retry is an invocation)"
    ]
    overlap = problems_of(valid_document(**{"0-2": payload("a"), "2": payload("b")}))
    assert overlap == ['MockedResponses.Answer["2"]: overlaps an earlier range (invocation 2)']
    assert problems_of(valid_document(**{"1": payload("a")}))[0].startswith(
        "MockedResponses.Answer: no response for invocation 0;"
    )


def test_field_names_and_types_are_checked() -> None:
    document: dict[str, Any] = {
        "StateMachines": {"Machine": {"TestCases": {"Case": {"Task": "Answer"}}}},
        "MockedResponse": {},
    }
    assert problems_of(document) == [
        "MockedResponses: required field missing",
        "MockedResponse: unknown field",
    ]
    assert problems_of(valid_document(**{"0": {"Throw": {"Error": "E"}}})) == [
        "MockedResponses.Answer.0.Throw.Cause: required field missing"
    ]
    assert problems_of(valid_document(**{"0": {"Throw": {"Error": 5, "Cause": "c"}}})) == [
        "MockedResponses.Answer.0.Throw.Error: must be a string"
    ]


def test_local_up_refuses_an_invalid_file_before_starting(tmp_path: Path) -> None:
    bad = tmp_path / "MockConfigFile.json"
    bad.write_text(json.dumps(valid_document(**{"0": {"Return": 1, "Throw": {"Error": "E", "Cause": "c"}}})))
    with pytest.raises(SystemExit) as stopped:
        main(
            ["local", "up", "--port", "0", "--state-dir", str(tmp_path / "state"), "--mock-config", str(bad)]
        )
    message = str(stopped.value.code)
    assert message.startswith(f"orderbatch: mock configuration {bad} is not valid:")
    assert 'MockedResponses.Answer["0"]: has both Return and Throw' in message
