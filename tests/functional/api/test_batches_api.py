"""POST /batches and GET /batches/{batch_id} through the Lambda handler, against moto."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from handlers import batches_api, clients
from order_processing.batches import BatchConflictError, BatchSubmission, canonical_json, submit_batch

if TYPE_CHECKING:
    from conftest import Cloud, FakeLambdaContext

# Requests refused before any metric is added flush an empty metric set; Powertools warns, rightly.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SOURCE_BUCKET = "orderbatch-uploads"  # created by the cloud fixture

EventFactory = Callable[..., dict[str, Any]]


def an_order(order_id: str, quantity: int = 1) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "customer_id": "c-1",
        "currency": "USD",
        "items": [{"sku": "SKU-001", "quantity": quantity, "unit_price": "9.99"}],
    }


def call(event: dict[str, Any], context: FakeLambdaContext) -> tuple[int, dict[str, Any]]:
    response = batches_api.lambda_handler(event, context)
    assert response["headers"]["Content-Type"] == "application/json"
    return response["statusCode"], json.loads(response["body"])


def post(http_event: EventFactory, context: FakeLambdaContext, body: Any, **kwargs: Any) -> tuple[int, dict]:
    return call(http_event("POST", "/batches", body, **kwargs), context)


def test_a_new_batch_starts_one_execution_named_after_it(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    status, body = post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})

    assert status == 202
    assert body == {
        "batch_id": "b-1",
        "execution_arn": cloud.state_machine_arn.replace(":stateMachine:", ":execution:") + ":b-1",
        "status": "RUNNING",
        "submitted": True,
        "orchestrator": "stepfunctions",
    }
    started = cloud.sfn.describe_execution(executionArn=body["execution_arn"])
    assert json.loads(started["input"]) == {"batch_id": "b-1", "orders": [an_order("o-1")]}
    assert started["input"] == json.dumps(
        {"batch_id": "b-1", "orders": [an_order("o-1")]}, sort_keys=True, separators=(",", ":")
    )


def test_the_same_batch_again_answers_with_its_execution_and_starts_nothing(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    first_status, first = post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})
    # Same content, other key order and formatting: still the same batch.
    again = (
        '{ "orders": [ {"items": [{"unit_price": "9.99", "quantity": 1, "sku": "SKU-001"}], '
        '"currency": "USD", "customer_id": "c-1", "order_id": "o-1"} ], "batch_id": "b-1" }'
    )
    second_status, second = post(http_event, lambda_context, again)

    assert (first_status, second_status) == (202, 200)
    assert second == {
        "batch_id": "b-1",
        "execution_arn": first["execution_arn"],
        "status": "RUNNING",
        "submitted": False,
        "orchestrator": "stepfunctions",
        "message": "batch b-1 was already submitted; this is its execution",
    }
    assert [execution["name"] for execution in cloud.executions()] == ["b-1"]


def test_the_same_batch_after_its_execution_closed_reports_the_closed_execution(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    _, first = post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})
    cloud.sfn.stop_execution(executionArn=first["execution_arn"])

    status, body = post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})

    assert (status, body["status"], body["submitted"]) == (200, "ABORTED", False)
    assert len(cloud.executions()) == 1


def test_the_same_batch_id_with_other_content_is_a_conflict(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})

    status, body = post(
        http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1", quantity=2)]}
    )

    assert status == 409
    assert body == {
        "message": "batch b-1 was already submitted with different content; use a new batch_id",
        "field": "batch_id",
    }
    assert len(cloud.executions()) == 1


class RacingStepFunctions:
    """Hides the execution from the first DescribeExecution, as if another submitter started it just after."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._hidden = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def describe_execution(self, **kwargs: Any) -> Any:
        if self._hidden:
            self._hidden = False
            error = {"Error": {"Code": "ExecutionDoesNotExist", "Message": "Execution Does Not Exist"}}
            raise self._client.exceptions.ExecutionDoesNotExist(error, "DescribeExecution")
        return self._client.describe_execution(**kwargs)


@pytest.mark.parametrize(
    ("stop_first", "resubmitted_orders", "expected_status"),
    [
        pytest.param(True, [an_order("o-1")], 200, id="same content: ExecutionAlreadyExists, then found"),
        pytest.param(
            False, [an_order("o-2")], 409, id="other content: ExecutionAlreadyExists, then conflict"
        ),
    ],
)
def test_a_submission_losing_the_race_to_start_still_gets_the_right_answer(
    cloud: Cloud, stop_first: bool, resubmitted_orders: list[dict[str, Any]], expected_status: int
) -> None:
    def submission(orders: list[dict[str, Any]]) -> BatchSubmission:
        return BatchSubmission("b-1", canonical_json({"batch_id": "b-1", "orders": orders}))

    first = submit_batch(
        submission([an_order("o-1")]), state_machine_arn=cloud.state_machine_arn, sfn_client=cloud.sfn
    )
    if stop_first:
        # moto (like AWS) answers StartExecution of a RUNNING execution with the same input by returning it,
        # and raises ExecutionAlreadyExists once it has closed.
        cloud.sfn.stop_execution(executionArn=first.execution_arn)
    racing = RacingStepFunctions(cloud.sfn)

    if expected_status == 409:
        with pytest.raises(BatchConflictError):
            submit_batch(
                submission(resubmitted_orders), state_machine_arn=cloud.state_machine_arn, sfn_client=racing
            )
    else:
        outcome = submit_batch(
            submission(resubmitted_orders), state_machine_arn=cloud.state_machine_arn, sfn_client=racing
        )
        assert (outcome.submitted, outcome.execution_arn, outcome.status) == (
            False,
            first.execution_arn,
            "ABORTED",
        )
    assert len(cloud.executions()) == 1


def test_a_batch_in_s3_starts_with_its_source_and_inferred_format(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    cloud.s3.put_object(
        Bucket=SOURCE_BUCKET, Key="in/orders.CSV", Body=b"order_id,customer_id,currency,items\n"
    )

    status, body = post(
        http_event,
        lambda_context,
        {"batch_id": "b-s3", "source": {"bucket": SOURCE_BUCKET, "key": "in/orders.CSV"}},
    )

    assert status == 202
    started = cloud.sfn.describe_execution(executionArn=body["execution_arn"])
    assert json.loads(started["input"]) == {
        "batch_id": "b-s3",
        "source": {"bucket": SOURCE_BUCKET, "key": "in/orders.CSV", "format": "csv"},
    }


def test_a_missing_s3_source_is_refused_and_starts_nothing(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    for bucket in (SOURCE_BUCKET, "no-such-bucket"):
        status, body = post(
            http_event,
            lambda_context,
            {"batch_id": "b-s3", "source": {"bucket": bucket, "key": "absent.json"}},
        )
        assert status == 400
        assert body == {"message": f"S3 source s3://{bucket}/absent.json does not exist", "field": "source"}
    assert cloud.executions() == []


@pytest.mark.parametrize(
    ("body", "kwargs", "expected_status", "expected_message", "expected_field"),
    [
        pytest.param(
            '{"batch_id": "b-1", "orders": [',
            {},
            400,
            "request body is not valid JSON: Expecting value",
            None,
            id="malformed JSON",
        ),
        pytest.param(
            {"batch_id": "b-1", "orders": [{}]},
            {"content_type": "text/plain"},
            415,
            "Content-Type must be application/json, got text/plain",
            "Content-Type",
            id="wrong content type",
        ),
        pytest.param(
            {"batch_id": "b-1", "orders": [{}]},
            {"content_type": None},
            415,
            "Content-Type must be application/json, got none",
            "Content-Type",
            id="no content type",
        ),
        pytest.param(["b-1"], {}, 400, "request body must be a JSON object", None, id="not an object"),
        pytest.param({"orders": [{}]}, {}, 400, "batch_id is required", "batch_id", id="no batch_id"),
        pytest.param(
            {"batch_id": "b 1", "orders": [{}]},
            {},
            400,
            "batch_id must be 1-80 characters",
            "batch_id",
            id="batch_id with a space",
        ),
        pytest.param(
            {"batch_id": "b" * 81, "orders": [{}]},
            {},
            400,
            "batch_id must be 1-80 characters",
            "batch_id",
            id="batch_id too long",
        ),
        pytest.param(
            {"batch_id": 7, "orders": [{}]},
            {},
            400,
            "batch_id must be 1-80 characters",
            "batch_id",
            id="batch_id not a string",
        ),
        pytest.param(
            {"batch_id": "b-1"},
            {},
            400,
            "batch b-1 needs orders (an inline array) or source",
            "orders",
            id="neither orders nor source",
        ),
        pytest.param(
            {"batch_id": "b-1", "orders": [{}], "source": {"bucket": "x", "key": "y.json"}},
            {},
            400,
            "batch b-1 has both orders and source",
            "source",
            id="both orders and source",
        ),
        pytest.param(
            {"batch_id": "b-1", "orders": []}, {}, 400, "batch b-1 has no orders", "orders", id="empty orders"
        ),
        pytest.param(
            {"batch_id": "b-1", "orders": {"order_id": "o-1"}},
            {},
            400,
            "orders of batch b-1 must be a JSON array",
            "orders",
            id="orders not a list",
        ),
        pytest.param(
            {"batch_id": "b-1", "order": [{}]},
            {},
            400,
            "unknown field order",
            "order",
            id="unknown field",
        ),
        pytest.param(
            {"batch_id": "b-1", "source": {"key": "orders.json"}},
            {},
            400,
            "source.bucket is required",
            "source.bucket",
            id="source without bucket",
        ),
        pytest.param(
            {"batch_id": "b-1", "source": {"bucket": SOURCE_BUCKET}},
            {},
            400,
            "source.key is required",
            "source.key",
            id="source without key",
        ),
        pytest.param(
            {"batch_id": "b-1", "source": {"bucket": SOURCE_BUCKET, "key": "orders.xlsx"}},
            {},
            400,
            f"cannot tell the format of s3://{SOURCE_BUCKET}/orders.xlsx",
            "source.format",
            id="source format not inferable",
        ),
        pytest.param(
            {"batch_id": "b-1", "source": {"bucket": SOURCE_BUCKET, "key": "o.json", "format": "jsonl"}},
            {},
            400,
            'source.format must be "json" or "csv", got "jsonl"',
            "source.format",
            id="unsupported source format",
        ),
    ],
)
def test_a_malformed_request_is_refused_naming_what_is_wrong(
    cloud: Cloud,
    http_event: EventFactory,
    lambda_context: FakeLambdaContext,
    body: Any,
    kwargs: dict[str, Any],
    expected_status: int,
    expected_message: str,
    expected_field: str | None,
) -> None:
    status, answer = post(http_event, lambda_context, body, **kwargs)

    assert status == expected_status
    assert answer["message"].startswith(expected_message)
    assert answer.get("field") == expected_field
    assert cloud.executions() == []


def test_a_batch_too_large_for_an_execution_input_is_sent_to_s3(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    # Under the 500-order cap, over 256 KiB; orders are validated one by one later, so padding passes here.
    orders = [{**an_order(f"o-{index:05d}"), "note": "x" * 700} for index in range(400)]

    status, body = post(http_event, lambda_context, {"batch_id": "b-big", "orders": orders})

    assert status == 413
    assert "over the 262144-byte limit" in body["message"]
    assert 'submit {"batch_id": ..., "source": {"bucket": ..., "key": ...}}' in body["message"]
    assert cloud.executions() == []


def test_base64_encoded_bodies_are_decoded(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    event = http_event("POST", "/batches", {"batch_id": "b-64", "orders": [an_order("o-1")]})
    event["body"] = base64.b64encode(event["body"].encode()).decode()
    event["isBase64Encoded"] = True

    status, body = call(event, lambda_context)

    assert (status, body["submitted"]) == (202, True)


def test_get_an_unknown_batch_is_404(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    status, body = call(http_event("GET", "/batches/b-missing"), lambda_context)

    assert status == 404
    assert body == {"message": "batch b-missing not found", "field": "batch_id"}


def test_get_a_batch_with_an_invalid_id_is_400(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    status, body = call(http_event("GET", "/batches/b.1"), lambda_context)

    assert status == 400
    assert body["field"] == "batch_id"


def test_get_a_running_batch_shows_its_status_without_a_summary(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext
) -> None:
    _, submitted = post(http_event, lambda_context, {"batch_id": "b-1", "orders": [an_order("o-1")]})

    status, body = call(http_event("GET", "/batches/b-1"), lambda_context)

    assert status == 200
    assert body["batch_id"] == "b-1"
    assert body["execution_arn"] == submitted["execution_arn"]
    assert body["status"] == "RUNNING"
    assert body["started_at"] is not None
    assert (body["stopped_at"], body["summary"], body["error"], body["cause"]) == (None, None, None, None)


def test_the_sample_events_work_against_the_handler(cloud: Cloud, lambda_context: FakeLambdaContext) -> None:
    post_status, posted = call(
        json.loads((cloud.events / "batches_api_post.json").read_text()), lambda_context
    )
    get_status, got = call(json.loads((cloud.events / "batches_api_get.json").read_text()), lambda_context)

    assert (post_status, get_status) == (202, 200)
    assert got["execution_arn"] == posted["execution_arn"]


def test_the_handler_reuses_its_clients_across_invocations(
    cloud: Cloud, http_event: EventFactory, lambda_context: FakeLambdaContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: Counter[str] = Counter()
    build_client = clients.boto3.client

    def counting(service_name: str, *args: Any, **kwargs: Any) -> Any:
        created[service_name] += 1
        return build_client(service_name, *args, **kwargs)

    monkeypatch.setattr(clients.boto3, "client", counting)
    cloud.s3.put_object(Bucket=SOURCE_BUCKET, Key="in/orders.json", Body=b"[]")

    answers = [
        post(
            http_event,
            lambda_context,
            {"batch_id": batch, "source": {"bucket": SOURCE_BUCKET, "key": "in/orders.json"}},
        )
        for batch in ("b-1", "b-2")
    ]
    answers += [call(http_event("GET", f"/batches/{batch}"), lambda_context) for batch in ("b-1", "b-2")]

    assert [status for status, _ in answers] == [202, 202, 200, 200]
    assert created == Counter({"stepfunctions": 1, "s3": 1})
