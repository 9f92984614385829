"""Batch envelope validation, canonical execution input and execution ARNs: no AWS."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from order_processing.batches import (
    BatchTooLargeError,
    InvalidBatchRequestError,
    UnsupportedContentTypeError,
    batch_status,
    canonical_json,
    execution_arn_for,
    parse_submission,
    validate_batch_id,
)
from order_processing.durable_batches import as_described_execution

LIMIT = 262_144
ORDER = {
    "order_id": "o-1",
    "customer_id": "c-1",
    "currency": "USD",
    "items": [{"sku": "SKU-001", "quantity": 1}],
}


def parse(document: Any, content_type: str | None = "application/json", limit: int = LIMIT) -> Any:
    body = document if isinstance(document, str) else json.dumps(document)
    return parse_submission(body, content_type, limit)


def test_the_execution_input_is_canonical_whatever_the_formatting() -> None:
    compact = parse({"batch_id": "b-1", "orders": [ORDER]})
    spaced = parse(json.dumps({"orders": [dict(reversed(ORDER.items()))], "batch_id": "b-1"}, indent=4))

    assert compact.execution_input == spaced.execution_input
    assert compact.execution_input == (
        '{"batch_id":"b-1","orders":[{"currency":"USD","customer_id":"c-1","items":'
        '[{"quantity":1,"sku":"SKU-001"}],"order_id":"o-1"}]}'
    )
    assert compact.source is None


def test_orders_are_passed_on_unvalidated_so_one_bad_order_cannot_sink_the_batch() -> None:
    submission = parse({"batch_id": "b-1", "orders": [ORDER, {"order_id": ""}, "not even an object"]})

    assert json.loads(submission.execution_input)["orders"] == [ORDER, {"order_id": ""}, "not even an object"]


@pytest.mark.parametrize(
    ("key", "given_format", "expected_format"),
    [
        ("in/orders.json", None, "json"),
        ("in/ORDERS.CSV", None, "csv"),
        ("in/orders.txt", "csv", "csv"),
        ("in/no-extension", "json", "json"),
    ],
)
def test_the_source_format_is_given_or_inferred_from_the_key(
    key: str, given_format: str | None, expected_format: str
) -> None:
    source: dict[str, str] = {"bucket": "uploads", "key": key}
    if given_format:
        source["format"] = given_format

    submission = parse({"batch_id": "b-1", "source": source})

    expected = {"bucket": "uploads", "key": key, "format": expected_format}
    assert submission.source == expected
    assert json.loads(submission.execution_input) == {"batch_id": "b-1", "source": expected}


@pytest.mark.parametrize("key", ["in.json/orders", "orders", "in/orders.jsonl"])
def test_a_key_without_a_known_extension_needs_a_format(key: str) -> None:
    with pytest.raises(InvalidBatchRequestError) as refused:
        parse({"batch_id": "b-1", "source": {"bucket": "uploads", "key": key}})

    assert refused.value.field == "source.format"
    assert refused.value.message.startswith(f"cannot tell the format of s3://uploads/{key}")


@pytest.mark.parametrize("batch_id", ["b", "B-2025_01", "x" * 80])
def test_valid_batch_ids(batch_id: str) -> None:
    assert validate_batch_id(batch_id) == batch_id


@pytest.mark.parametrize("batch_id", ["", "x" * 81, "b/1", "b:1", "b 1", "bé", 12, ["b-1"]])
def test_invalid_batch_ids_name_the_field(batch_id: Any) -> None:
    with pytest.raises(InvalidBatchRequestError) as refused:
        validate_batch_id(batch_id)

    assert refused.value.status_code == 400
    assert refused.value.field == "batch_id"
    assert json.dumps(batch_id) in refused.value.message


def test_a_missing_batch_id_is_required() -> None:
    with pytest.raises(InvalidBatchRequestError, match=r"^batch_id is required$"):
        parse({"orders": [ORDER]})


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_json_content_types_are_accepted(content_type: str) -> None:
    assert parse({"batch_id": "b-1", "orders": [ORDER]}, content_type).batch_id == "b-1"


@pytest.mark.parametrize("content_type", [None, "", "text/plain", "application/x-www-form-urlencoded"])
def test_other_content_types_are_415(content_type: str | None) -> None:
    with pytest.raises(UnsupportedContentTypeError) as refused:
        parse({"batch_id": "b-1", "orders": [ORDER]}, content_type)

    assert refused.value.status_code == 415


def test_malformed_json_reports_the_parser_detail() -> None:
    with pytest.raises(InvalidBatchRequestError) as refused:
        parse('{"batch_id": "b-1",')

    assert refused.value.message.startswith("request body is not valid JSON: Expecting property name")
    assert "line 1 column" in refused.value.message


def test_an_empty_body_is_not_valid_json() -> None:
    with pytest.raises(InvalidBatchRequestError, match=r"^request body is not valid JSON: "):
        parse_submission(None, "application/json", LIMIT)


def test_the_size_limit_counts_utf8_bytes_of_the_canonical_input() -> None:
    document = {"batch_id": "b-1", "orders": [{"note": "é" * 100}]}
    size = len(canonical_json(document).encode("utf-8"))

    assert parse(document, limit=size).batch_id == "b-1"
    with pytest.raises(BatchTooLargeError) as refused:
        parse(document, limit=size - 1)

    assert refused.value.status_code == 413
    assert refused.value.message.startswith(f"batch b-1 is {size} bytes, over the {size - 1}-byte limit")
    assert "upload the orders to S3" in refused.value.message


def test_an_inline_batch_over_the_order_cap_is_sent_to_the_s3_path() -> None:
    orders = [{"order_id": f"o-{n}"} for n in range(4)]
    body = json.dumps({"batch_id": "b-1", "orders": orders})

    assert parse_submission(body, "application/json", LIMIT, max_inline_orders=4).batch_id == "b-1"
    with pytest.raises(BatchTooLargeError) as refused:
        parse_submission(body, "application/json", LIMIT, max_inline_orders=3)

    assert refused.value.status_code == 413
    assert refused.value.message.startswith("batch b-1 has 4 orders; inline batches hold at most 3")
    assert '"source"' in refused.value.message


def test_the_execution_arn_is_built_from_the_state_machine_arn() -> None:
    assert (
        execution_arn_for("arn:aws:states:eu-west-1:123456789012:stateMachine:OrderBatch-AbC123", "b-1")
        == "arn:aws:states:eu-west-1:123456789012:execution:OrderBatch-AbC123:b-1"
    )
    assert (
        execution_arn_for("arn:aws-cn:states:cn-north-1:123456789012:stateMachine:OrderBatch", "b_2")
        == "arn:aws-cn:states:cn-north-1:123456789012:execution:OrderBatch:b_2"
    )


def test_an_arn_that_is_not_a_state_machine_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="not a state machine ARN"):
        execution_arn_for("arn:aws:lambda:us-east-1:123456789012:function:f", "b-1")


def test_batch_status_carries_the_summary_from_the_execution_output() -> None:
    started, stopped = datetime(2025, 1, 1, 12, tzinfo=UTC), datetime(2025, 1, 1, 12, 5, tzinfo=UTC)
    summary = {"batch_id": "b-1", "total": 1, "succeeded": 1}
    execution: Any = {
        "executionArn": "arn:aws:states:us-east-1:1:execution:OrderBatch:b-1",
        "status": "SUCCEEDED",
        "startDate": started,
        "stopDate": stopped,
        "output": json.dumps({"summary": summary}),
        "redriveCount": 0,
        "redriveStatus": "NOT_REDRIVABLE",
        "redriveStatusReason": "Execution is SUCCEEDED and cannot be redriven",
    }

    status = batch_status("b-1", execution)

    assert status == {
        "batch_id": "b-1",
        "execution_arn": "arn:aws:states:us-east-1:1:execution:OrderBatch:b-1",
        "status": "SUCCEEDED",
        "started_at": "2025-01-01T12:00:00+00:00",
        "stopped_at": "2025-01-01T12:05:00+00:00",
        "summary": summary,
        "error": None,
        "cause": None,
        "redrive_count": 0,
        "redrive_date": None,
        "redrive_status": "NOT_REDRIVABLE",
        "redrive_status_reason": "Execution is SUCCEEDED and cannot be redriven",
    }
    assert batch_status("b-1", {**execution, "output": json.dumps(summary)})["summary"] == summary


def test_a_failed_execution_reports_its_error_and_cause_without_a_summary() -> None:
    execution: Any = {
        "executionArn": "arn:aws:states:us-east-1:1:execution:OrderBatch:b-1",
        "status": "FAILED",
        "startDate": datetime(2025, 1, 1, tzinfo=UTC),
        "stopDate": datetime(2025, 1, 1, 0, 1, tzinfo=UTC),
        "error": "States.ExceedToleratedFailureThreshold",
        "cause": "too many orders failed",
    }

    status = batch_status("b-1", execution)

    assert (status["summary"], status["error"], status["cause"]) == (
        None,
        "States.ExceedToleratedFailureThreshold",
        "too many orders failed",
    )


def test_the_orchestrator_defaults_to_the_state_machine_and_stays_out_of_the_execution_input() -> None:
    default = parse({"batch_id": "b-1", "orders": [ORDER]})
    durable = parse({"batch_id": "b-1", "orders": [ORDER], "orchestrator": "durable"})

    assert default.orchestrator == "stepfunctions"
    assert durable.orchestrator == "durable"
    # The same batch either way: the durable function gets the state machine's input.
    assert durable.execution_input == default.execution_input


@pytest.mark.parametrize("orchestrator", ["airflow", "", None, 1])
def test_an_unknown_orchestrator_is_refused_naming_the_field(orchestrator: Any) -> None:
    with pytest.raises(InvalidBatchRequestError) as refused:
        parse({"batch_id": "b-1", "orders": [ORDER], "orchestrator": orchestrator})
    assert refused.value.field == "orchestrator"
    assert "stepfunctions, durable" in refused.value.message


def test_a_durable_execution_reads_as_a_described_execution() -> None:
    started, ended = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    arn = "arn:aws:lambda:us-east-1:123456789012:function:f:$LATEST/durable-execution/b-1/x"
    described = as_described_execution(
        {
            "DurableExecutionArn": arn,
            "DurableExecutionName": "b-1",
            "Status": "STOPPED",
            "InputPayload": '{"batch_id":"b-1"}',
            "StartTimestamp": started,
            "EndTimestamp": ended,
            "Error": {"ErrorType": "Stopped", "ErrorMessage": "stopped by a caller"},
        }
    )

    assert batch_status("b-1", described) | {"redrive_count": 0} == {
        "batch_id": "b-1",
        "execution_arn": arn,
        "status": "STOPPED",
        "started_at": started.isoformat(),
        "stopped_at": ended.isoformat(),
        "summary": None,
        "error": "Stopped",
        "cause": "stopped by a caller",
        "redrive_count": 0,
        "redrive_date": None,
        "redrive_status": None,
        "redrive_status_reason": None,
    }
