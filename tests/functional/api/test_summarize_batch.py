"""The batch summarizer through its Lambda handler, against moto S3, DynamoDB and Step Functions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyValidationError

from handlers import (
    cancel_order,
    charge_payment,
    confirm_order,
    reserve_inventory,
    summarize_batch,
    validate_order,
)
from order_processing.summary import IncompleteMapResultsError
from sam_local_cloud import wait_for_execution

if TYPE_CHECKING:
    from conftest import Cloud, FakeLambdaContext

# Requests refused before any metric is added flush an empty metric set; Powertools warns, rightly.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EXECUTING = pytest.mark.parametrize("cloud", [{"execute": True}], indirect=True, ids=["moto executes"])
EXECUTION_DEADLINE_SECONDS = 20


def order_state(
    index: int, outcome: str, code: str | None = None, reason: str | None = None
) -> dict[str, Any]:
    return {
        "batch_id": "b-1",
        "item_index": index,
        "order_id": f"o-{index}",
        "order": {"order_id": f"o-{index}", "customer_id": "c-1", "currency": "USD", "items": []},
        "total": "9.99",
        "outcome": outcome,
        "code": code,
        "reason": reason,
    }


def idempotency_records(cloud: Cloud) -> list[dict[str, Any]]:
    table = boto3.client("dynamodb").scan(TableName="orderbatch-idempotency")
    return table["Items"]


def test_inline_outcomes_are_summarized_once(cloud: Cloud, lambda_context: FakeLambdaContext) -> None:
    request = {
        "batch_id": "b-1",
        "results": [
            order_state(2, "REJECTED", "CONFLICTING_ORDER", "order o-2 was submitted with other content"),
            order_state(0, "SUCCEEDED"),
            order_state(1, "DUPLICATE", "DUPLICATE_ORDER", "order o-1 is already in batch b-0"),
            order_state(3, "FAILED", "PAYMENT_DECLINED", "order o-3: 12000.00 is over the charge limit"),
        ],
    }

    first = summarize_batch.lambda_handler(request, lambda_context)
    replayed = summarize_batch.lambda_handler(request, lambda_context)

    assert replayed == first
    assert {name: value for name, value in first.items() if name != "orders"} == {
        "batch_id": "b-1",
        "total": 4,
        "succeeded": 1,
        "failed": 1,
        "rejected": 1,
        "duplicate": 1,
        "conflicting": 1,
        "second_pass": 0,
    }
    assert [(order["order_id"], order["outcome"]) for order in first["orders"]] == [
        ("o-0", "SUCCEEDED"),
        ("o-1", "DUPLICATE"),
        ("o-2", "REJECTED"),
        ("o-3", "FAILED"),
    ]
    records = idempotency_records(cloud)
    assert len(records) == 1
    assert records[0]["status"]["S"] == "COMPLETED"
    assert "order_processing.summary.summarize_batch#" in records[0]["id"]["S"]


def emitted_metrics(output: str) -> dict[str, Any]:
    """Metric name -> values, from the CloudWatch embedded-metric-format lines Powertools prints."""
    emitted: dict[str, Any] = {}
    for line in output.splitlines():
        document = json.loads(line) if line.startswith("{") else {}
        for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
            for metric in directive["Metrics"]:
                emitted[metric["Name"]] = document[metric["Name"]]
    return emitted


def test_the_batch_totals_have_metric_names_of_their_own(
    cloud: Cloud, lambda_context: FakeLambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    request = {
        "batch_id": "b-1",
        "results": [
            order_state(0, "SUCCEEDED"),
            order_state(1, "SUCCEEDED"),
            order_state(2, "FAILED", "PAYMENT_DECLINED", "order o-2: 12000.00 is over the charge limit"),
        ],
    }
    capsys.readouterr()

    summarize_batch.lambda_handler(request, lambda_context)

    emitted = emitted_metrics(capsys.readouterr().out)
    assert emitted == {
        "BatchOrdersSucceeded": [2.0],
        "BatchOrdersFailed": [1.0],
        "BatchOrdersRejected": [0.0],
        "BatchOrdersDuplicate": [0.0],
    }
    per_order = {
        name
        for task in (validate_order, reserve_inventory, charge_payment, confirm_order, cancel_order)
        for name in task.OUTCOME_METRICS.values()
    }
    assert {"OrdersSucceeded", "OrdersFailed", "OrdersRejected", "OrdersDuplicate"} <= per_order
    assert per_order.isdisjoint(emitted)


def test_the_same_batch_with_other_outcomes_is_refused(
    cloud: Cloud, lambda_context: FakeLambdaContext
) -> None:
    summarize_batch.lambda_handler(
        {"batch_id": "b-1", "results": [order_state(0, "SUCCEEDED")]}, lambda_context
    )

    with pytest.raises(IdempotencyValidationError):
        summarize_batch.lambda_handler(
            {"batch_id": "b-1", "results": [order_state(0, "FAILED")]}, lambda_context
        )


def test_the_sample_event_summarizes(cloud: Cloud, lambda_context: FakeLambdaContext) -> None:
    event = json.loads((cloud.events / "summarize_batch.json").read_text())

    summary = summarize_batch.lambda_handler(event, lambda_context)

    assert (summary["total"], summary["succeeded"], summary["failed"]) == (2, 1, 1)


def run_distributed_batch(cloud: Cloud, orders: list[dict[str, Any]]) -> dict[str, Any]:
    """Run a Distributed Map over an S3 JSON batch in moto; its output is the summarizer's request."""
    cloud.s3.put_object(Bucket=cloud.source_bucket, Key="in/b-1.json", Body=json.dumps(orders).encode())
    definition = {
        "StartAt": "Process orders",
        "States": {
            "Process orders": {
                "Type": "Map",
                "ItemReader": {
                    "Resource": "arn:aws:states:::s3:getObject",
                    "ReaderConfig": {"InputType": "JSON"},
                    "Parameters": {"Bucket.$": "$.source.bucket", "Key.$": "$.source.key"},
                },
                "ItemSelector": {
                    "batch_id.$": "$.batch_id",
                    "item_index.$": "$$.Map.Item.Index",
                    "source_format": "json",
                    "order.$": "$$.Map.Item.Value",
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "Succeed",
                    "States": {
                        "Succeed": {
                            "Type": "Pass",
                            "Parameters": {"order_id.$": "$.order.order_id", "outcome": "SUCCEEDED"},
                            "End": True,
                        }
                    },
                },
                "ResultWriter": {
                    "Resource": "arn:aws:states:::s3:putObject",
                    "Parameters": {"Bucket": cloud.results_bucket, "Prefix": "map-results"},
                },
                "ResultPath": "$.map_result",
                "End": True,
            }
        },
    }
    cloud.sfn.update_state_machine(stateMachineArn=cloud.state_machine_arn, definition=json.dumps(definition))
    execution_arn = cloud.sfn.start_execution(
        stateMachineArn=cloud.state_machine_arn,
        name="b-1",
        input=json.dumps(
            {"batch_id": "b-1", "source": {"bucket": cloud.source_bucket, "key": "in/b-1.json"}}
        ),
    )["executionArn"]
    wait_for_execution(cloud.sfn, execution_arn, timeout=EXECUTION_DEADLINE_SECONDS, poll_seconds=0.05)
    execution = cloud.sfn.describe_execution(executionArn=execution_arn)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    return json.loads(execution["output"])


def child_record(
    index: int, status: str, output: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A child execution as AWS's ResultWriter writes it (Transformation NONE); Input/Output are strings."""
    item = {
        "batch_id": "b-1",
        "item_index": index,
        "source_format": "json",
        "order": {"order_id": f"o-{index}"},
    }
    record: dict[str, Any] = {
        "ExecutionArn": f"arn:aws:states:us-east-1:123456789012:execution:OrderBatch/Process-orders:{index}",
        "Input": json.dumps(item),
        "InputDetails": {"Included": True},
        "Name": f"child-{index}",
        "RedriveCount": 0,
        "RedriveStatus": "NOT_REDRIVABLE",
        "StartDate": "2025-01-01T00:00:00.000Z",
        "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:OrderBatch/Process-orders",
        "Status": status,
        "StopDate": "2025-01-01T00:00:01.000Z",
        **extra,
    }
    if output is not None:
        record["Output"] = json.dumps(output)
        record["OutputDetails"] = {"Included": True}
    return record


@EXECUTING
def test_a_distributed_batch_is_summarized_from_the_result_files(
    cloud: Cloud, lambda_context: FakeLambdaContext
) -> None:
    request = run_distributed_batch(cloud, [{"order_id": f"o-{index}"} for index in range(3)])
    manifest_key = request["map_result"]["ResultWriterDetails"]["Key"]
    prefix = manifest_key.rsplit("/", 1)[0]
    # moto writes the manifest but no result files; write what AWS writes for this map run.
    succeeded_key, failed_key = f"{prefix}/SUCCEEDED_0.json", f"{prefix}/FAILED_0.json"
    cloud.s3.put_object(
        Bucket=cloud.results_bucket,
        Key=succeeded_key,
        Body=json.dumps(
            [
                child_record(
                    2, "SUCCEEDED", order_state(2, "DUPLICATE", "DUPLICATE_ORDER", "order o-2 again")
                ),
                child_record(0, "SUCCEEDED", order_state(0, "SUCCEEDED")),
            ]
        ).encode(),
    )
    cloud.s3.put_object(
        Bucket=cloud.results_bucket,
        Key=failed_key,
        Body=json.dumps(
            [child_record(1, "FAILED", Error="Lambda.TooManyRequestsException", Cause="Rate Exceeded.")]
        ).encode(),
    )
    manifest = json.loads(cloud.s3.get_object(Bucket=cloud.results_bucket, Key=manifest_key)["Body"].read())
    manifest["ResultFiles"]["SUCCEEDED"] = [{"Key": succeeded_key, "Size": 1}]
    manifest["ResultFiles"]["FAILED"] = [{"Key": failed_key, "Size": 1}]
    cloud.s3.put_object(Bucket=cloud.results_bucket, Key=manifest_key, Body=json.dumps(manifest).encode())

    summary = summarize_batch.lambda_handler(request, lambda_context)

    location = f"s3://{cloud.results_bucket}/batches/b-1/summary.json"
    assert summary == {
        "batch_id": "b-1",
        "total": 3,
        "succeeded": 1,
        "failed": 1,
        "rejected": 0,
        "duplicate": 1,
        "conflicting": 0,
        "second_pass": 0,
        "orders_location": location,
    }
    stored = json.loads(
        cloud.s3.get_object(Bucket=cloud.results_bucket, Key="batches/b-1/summary.json")["Body"].read()
    )
    assert {name: value for name, value in stored.items() if name != "orders"} == {
        name: value for name, value in summary.items() if name != "orders_location"
    }
    assert stored["orders"] == [
        {"order_id": "o-0", "item_index": 0, "outcome": "SUCCEEDED", "code": None, "reason": None},
        {
            "order_id": "o-1",
            "item_index": 1,
            "outcome": "FAILED",
            "code": "TASK_FAILED",
            "reason": "order o-1 failed: Lambda.TooManyRequestsException: Rate Exceeded.",
        },
        {
            "order_id": "o-2",
            "item_index": 2,
            "outcome": "DUPLICATE",
            "code": "DUPLICATE_ORDER",
            "reason": "order o-2 again",
        },
    ]


@EXECUTING
def test_a_manifest_missing_results_is_refused_rather_than_summarized_as_no_orders(
    cloud: Cloud, lambda_context: FakeLambdaContext
) -> None:
    request = run_distributed_batch(cloud, [{"order_id": "o-0"}, {"order_id": "o-1"}])
    details = request["map_result"]["ResultWriterDetails"]
    manifest = json.loads(cloud.s3.get_object(Bucket=details["Bucket"], Key=details["Key"])["Body"].read())
    # What moto's own ResultWriter writes (the local cloud patches it to write the real files).
    manifest["ResultFiles"] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
    cloud.s3.put_object(Bucket=details["Bucket"], Key=details["Key"], Body=json.dumps(manifest).encode())

    with pytest.raises(
        IncompleteMapResultsError, match=r"lists 0 child results but map run .* processed 2 items"
    ):
        summarize_batch.lambda_handler(request, lambda_context)

    assert "Contents" not in cloud.s3.list_objects_v2(Bucket=cloud.results_bucket, Prefix="batches/")
    assert idempotency_records(cloud) == []  # a failed summary leaves nothing behind, so a retry runs again


def test_json_lines_result_files_and_a_missing_map_run_arn_are_read(
    cloud: Cloud, lambda_context: FakeLambdaContext
) -> None:
    lines = "\n".join(json.dumps(order_state(index, "SUCCEEDED")) for index in (1, 0))  # COMPACT + JSONL
    cloud.s3.put_object(
        Bucket=cloud.results_bucket, Key="map-results/run/SUCCEEDED_0.json", Body=lines.encode()
    )
    manifest = {
        "DestinationBucket": cloud.results_bucket,
        "ResultFiles": {
            "FAILED": [],
            "PENDING": [],
            "SUCCEEDED": [{"Key": "map-results/run/SUCCEEDED_0.json"}],
        },
    }
    cloud.s3.put_object(
        Bucket=cloud.results_bucket, Key="map-results/run/manifest.json", Body=json.dumps(manifest)
    )
    request = {
        "batch_id": "b-1",
        "source": {"bucket": cloud.source_bucket, "key": "in/b-1.json", "format": "json"},
        "map_result": {
            "ResultWriterDetails": {"Bucket": cloud.results_bucket, "Key": "map-results/run/manifest.json"}
        },
    }

    summary = summarize_batch.lambda_handler(request, lambda_context)

    assert (summary["total"], summary["succeeded"]) == (2, 2)
    stored = json.loads(
        cloud.s3.get_object(Bucket=cloud.results_bucket, Key="batches/b-1/summary.json")["Body"].read()
    )
    assert [order["item_index"] for order in stored["orders"]] == [0, 1]


def deferred_state(index: int, step: str) -> dict[str, Any]:
    """What a first-pass child returns when ``step`` was throttled until its retrier ran out."""
    return {
        "order_id": None,
        "item_index": index,
        "outcome": "DEFERRED",
        "code": "THROTTLED",
        "reason": f"{step} was throttled until its retrier ran out; the second pass runs it again",
        "resume_at": step,
        "resume_input": {"batch_id": "b-1", "item_index": index, "order": {"order_id": f"o-{index}"}},
    }


def write_result_files(cloud: Cloud, run: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A ResultWriter manifest and one SUCCEEDED file of child records, without a map run to check."""
    key = f"map-results/{run}/SUCCEEDED_0.json"
    cloud.s3.put_object(Bucket=cloud.results_bucket, Key=key, Body=json.dumps(records).encode())
    manifest = {"DestinationBucket": cloud.results_bucket, "ResultFiles": {"SUCCEEDED": [{"Key": key}]}}
    manifest_key = f"map-results/{run}/manifest.json"
    cloud.s3.put_object(Bucket=cloud.results_bucket, Key=manifest_key, Body=json.dumps(manifest).encode())
    return {"ResultWriterDetails": {"Bucket": cloud.results_bucket, "Key": manifest_key}}


def test_an_s3_batch_s_deferred_orders_are_set_aside_for_the_second_pass_and_counted_once(
    cloud: Cloud, lambda_context: FakeLambdaContext
) -> None:
    first_pass = write_result_files(
        cloud,
        "first",
        [
            child_record(0, "SUCCEEDED", order_state(0, "SUCCEEDED")),
            child_record(1, "SUCCEEDED", deferred_state(1, "Charge payment")),
            child_record(2, "SUCCEEDED", deferred_state(2, "Validate order")),
        ],
    )
    request = {"action": "set_aside_deferred_orders", "batch_id": "b-1", "map_result": first_pass}

    set_aside = summarize_batch.lambda_handler(request, lambda_context)

    key = "batches/b-1/deferred-orders.json"
    assert set_aside == {"Bucket": cloud.results_bucket, "Key": key, "count": 2}
    stored = json.loads(cloud.s3.get_object(Bucket=cloud.results_bucket, Key=key)["Body"].read())
    # Every field is kept: the second pass's ItemReader reads resume_at and resume_input from them.
    assert stored == [deferred_state(1, "Charge payment"), deferred_state(2, "Validate order")]

    second_pass = write_result_files(
        cloud,
        "second",
        [
            child_record(1, "SUCCEEDED", order_state(1, "SUCCEEDED")),
            child_record(2, "SUCCEEDED", order_state(2, "FAILED", "TASK_FAILED", "throttled twice")),
        ],
    )
    summary = summarize_batch.lambda_handler(
        {"batch_id": "b-1", "source": {}, "map_result": first_pass, "second_pass_result": second_pass},
        lambda_context,
    )

    assert (summary["total"], summary["succeeded"], summary["failed"], summary["second_pass"]) == (3, 2, 1, 2)


def test_an_unknown_action_is_refused_by_name(cloud: Cloud, lambda_context: FakeLambdaContext) -> None:
    with pytest.raises(ValueError, match="unknown action 'reticulate'; the only action is"):
        summarize_batch.lambda_handler({"action": "reticulate", "batch_id": "b-1"}, lambda_context)
