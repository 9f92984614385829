"""The protocol fuzzer: every generated request gets an answer AWS gives, and the fuzzer sees when not."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from werkzeug.serving import make_server

from orderbatch.faults.fuzz_requests import (
    HUGE_HEADER,
    MALFORMED_BODY,
    MISSING_REQUIRED,
    UNKNOWN_OPERATION,
    VALID,
    FuzzCase,
    Target,
)
from orderbatch.faults.fuzz_verdicts import (
    ACCEPTED_INVALID,
    SERVER_ERROR,
    UNKNOWN_CODE,
    UNPARSEABLE_ANSWER,
    WRONG_CODE,
    WRONG_STATUS,
    Outcome,
    judge,
)
from orderbatch.faults.protocol_fuzz import ProtocolFuzzer, fuzz_local_cloud
from sam_local_cloud import DUMMY_CREDENTIALS

SEED = 20261206


def operation(service: str, name: str) -> Any:
    return botocore.session.get_session().get_service_model(service).operation_model(name)


def case(service: str, name: str, mutation: str = VALID, label: str = "") -> FuzzCase:
    return FuzzCase(Target(service, name), {}, mutation, label=label)


# ------------------------------------------------------------------------------------------ the verdicts
def test_a_server_error_fails_whatever_the_request() -> None:
    verdict = judge(
        case("dynamodb", "GetItem"), operation("dynamodb", "GetItem"), Outcome(500, "InternalFailure")
    )

    assert verdict is not None
    assert verdict[0] == SERVER_ERROR


def test_the_front_door_s_431_page_is_an_answer_even_where_botocore_s_own_parser_hides_its_text() -> None:
    # s3.GetBucketLocation is parsed by a handler of botocore's own, which raises ETree's error without
    # the page's text; the status seen before the parse says what it was.
    huge = case("s3", "GetBucketLocation", HUGE_HEADER)
    location = operation("s3", "GetBucketLocation")
    page = "ParseError: mismatched tag: line 6, column 6"

    assert judge(huge, location, Outcome(431, parse_error=page)) is None
    assert judge(huge, location, Outcome(None, parse_error=page)) == (UNPARSEABLE_ANSWER, page)
    assert judge(case("s3", "GetBucketLocation"), location, Outcome(431, parse_error=page)) is not None


def test_a_json_body_that_does_not_parse_must_be_a_serialization_exception() -> None:
    spoiled = case("dynamodb", "GetItem", MALFORMED_BODY)

    wrong = judge(spoiled, operation("dynamodb", "GetItem"), Outcome(400, "ValidationException"))
    right = judge(spoiled, operation("dynamodb", "GetItem"), Outcome(400, "SerializationException"))

    assert wrong is not None
    assert wrong[0] == WRONG_CODE
    assert right is None


def test_an_unknown_operation_must_be_refused_as_one() -> None:
    spoiled = case("stepfunctions", "ListActivities", UNKNOWN_OPERATION)

    verdict = judge(spoiled, operation("stepfunctions", "ListActivities"), Outcome(200))

    assert verdict is not None
    assert verdict[0] == ACCEPTED_INVALID


def test_a_request_missing_a_required_member_must_not_succeed() -> None:
    spoiled = case("dynamodb", "DescribeTable", MISSING_REQUIRED, label="TableName")

    verdict = judge(spoiled, operation("dynamodb", "DescribeTable"), Outcome(200))

    assert verdict is not None
    assert verdict[0] == ACCEPTED_INVALID


def test_a_code_neither_modelled_nor_common_is_reported() -> None:
    get_item = operation("dynamodb", "GetItem")

    verdict = judge(case("dynamodb", "GetItem"), get_item, Outcome(400, "TableGone"))

    assert verdict is not None
    assert verdict[0] == UNKNOWN_CODE


def test_a_modelled_code_at_another_status_is_reported() -> None:
    verdict = judge(
        case("lambda", "Invoke"), operation("lambda", "Invoke"), Outcome(500, "ResourceNotFoundException")
    )

    assert verdict is not None
    assert verdict[0] == WRONG_STATUS


def test_aws_own_answers_pass() -> None:
    get_queue = operation("sqs", "GetQueueUrl")

    assert (
        judge(case("sqs", "GetQueueUrl"), get_queue, Outcome(400, "AWS.SimpleQueueService.NonExistentQueue"))
        is None
    )
    assert (
        judge(
            case("lambda", "Invoke"), operation("lambda", "Invoke"), Outcome(404, "ResourceNotFoundException")
        )
        is None
    )
    assert judge(case("s3", "GetObject"), operation("s3", "GetObject"), Outcome(404, "NoSuchKey")) is None


def test_a_query_code_the_json_model_dropped_passes_for_its_error_only() -> None:
    create_queue, get_queue = operation("sqs", "CreateQueue"), operation("sqs", "GetQueueUrl")

    # QueueNameExists's code in SQS's query model: what AWS sends in x-amzn-query-error and boto3 reports.
    assert judge(case("sqs", "CreateQueue"), create_queue, Outcome(400, "QueueAlreadyExists")) is None
    wrong_operation = judge(case("sqs", "GetQueueUrl"), get_queue, Outcome(400, "QueueAlreadyExists"))
    assert wrong_operation is not None
    assert wrong_operation[0] == UNKNOWN_CODE


# ------------------------------------------------------------------------------------------ the fuzzer
@pytest.fixture
def broken_dynamodb() -> Iterator[str]:
    """A DynamoDB endpoint that answers every call with {} but fails PutItem with an HTML 500 whenever the
    item has more than one attribute: the bug the fuzzer must find and shrink."""

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        try:
            document = json.loads(body or b"{}")
        except ValueError:
            document = {}
        item = document.get("Item") if isinstance(document, dict) else None
        if target.endswith(".PutItem") and isinstance(item, dict) and len(item) > 1:
            start_response("500 Internal Server Error", [("Content-Type", "text/html")])
            return [b"<html><body>Internal Server Error</body></html>"]
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0")])
        return [b"{}"]

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_the_fuzzer_finds_a_server_error_and_shrinks_it_to_the_smallest_request(broken_dynamodb: str) -> None:
    fuzzer = ProtocolFuzzer(
        broken_dynamodb,
        region="us-east-1",
        credentials=DUMMY_CREDENTIALS,
        known_names={"TableName": ["orders"]},
        services=("dynamodb",),
    )
    fuzzer.targets = [Target("dynamodb", "PutItem")]

    report = fuzzer.run(examples=150, seed_value=SEED)

    assert report.failures_by_kind[SERVER_ERROR] > 0
    shrunk = report.shrunk[SERVER_ERROR]
    assert shrunk.startswith("server-error:")
    # Shrunk: two attributes are the fewest that fail, each of the simplest kind Hypothesis can draw.
    item = json.loads(shrunk.split("] ", 1)[1])["Item"]
    assert len(item) == 2
    assert "FAILURE server-error" in report.summary()


def test_a_short_run_against_the_local_cloud_gets_only_awss_answers() -> None:
    report = fuzz_local_cloud(examples=700, seed_value=SEED)

    print(report.summary())
    assert report.failures == [], report.summary()
    assert report.requests >= 700
    assert report.covered_served() >= 150
    assert set(report.by_mutation) >= {VALID, MALFORMED_BODY, MISSING_REQUIRED, UNKNOWN_OPERATION}


@pytest.mark.slow
# The run's own bound (the subprocess's timeout below): about 200 s of CPU, which `make test-slow` shares
# with another slow test, as its two workers run side by side.
@pytest.mark.timeout(1500)
def test_twenty_thousand_requests_with_a_fixed_seed_get_only_awss_answers() -> None:
    # A process of its own, as a user runs it: what other slow tests left running in this process (threads
    # of their clouds, their loggers) must not be read as this cloud's errors.
    command = [sys.executable, "-m", "orderbatch.cli", "faults", "fuzz", "--requests", "20000"]
    finished = subprocess.run([*command, "--seed", str(SEED), "--json"], capture_output=True, timeout=1500)

    # moto prints a line for a request it cannot route to a backend; the report is the JSON after them.
    output = finished.stdout.decode()
    report_at = 0 if output.startswith("{") else output.find("\n{")
    # A run that ends without its report (a crash, a kill) is shown with what it last wrote, not as a bare
    # "substring not found".
    assert report_at >= 0, (
        f"exit code {finished.returncode}, no report on stdout; stdout ends: {output[-2000:]!r}; "
        f"stderr ends: {finished.stderr.decode(errors='replace')[-4000:]}"
    )
    report = json.loads(output[report_at:])
    print(json.dumps(report, indent=1))
    assert report["failures_by_kind"] == {}, report["first_failures"]
    assert finished.returncode == 0
    assert report["requests"] >= 20_000
    assert report["operations_covered"] >= 0.9 * report["operations_served"]
