"""The Distributed Map's data plane on the local cloud, as AWS documents it (docs/fidelity.md).

Every test creates a state machine through the API and runs it: a Distributed Map whose children are Pass,
Fail or Wait states (no functions), reading from and writing to a bucket of the local cloud. What is
asserted is what boto3 sees: the execution's status, output, error and cause, and the objects written.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders, local_cloud_config
from orderbatch.audit import BatchLocations
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.deployment import LOCAL_ROLE_ARN
from sam_local_cloud.stepfunctions import distributed_map as data_plane

pytestmark = pytest.mark.e2e

# The fixture is the local cloud's own (its definition support tests deploy it too).
TEMPLATE = (
    PROJECT_ROOT / "packages" / "sam-local-cloud" / "tests" / "distributed_map_fixture" / "template.yaml"
)
BUCKET = "map-items"
ORDERS = [{"order_id": f"o-{n}", "quantity": n} for n in range(1, 6)]
_names = itertools.count()


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE, account_concurrency=10)) as running:
        s3 = running.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="orders.json", Body=json.dumps(ORDERS).encode())
        s3.put_object(
            Bucket=BUCKET, Key="orders.jsonl", Body="".join(json.dumps(o) + "\n" for o in ORDERS).encode()
        )
        yield running


def pass_through(execution_type: str = "STANDARD") -> dict[str, Any]:
    return {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": execution_type},
        "StartAt": "Echo",
        "States": {"Echo": {"Type": "Pass", "End": True}},
    }


def failing_on_quantity(quantity: int) -> dict[str, Any]:
    """Children that fail (error OrderRejected) for the item whose quantity is ``quantity``."""
    return {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.quantity", "NumericEquals": quantity, "Next": "Reject"}],
                "Default": "Accept",
            },
            "Reject": {"Type": "Fail", "Error": "OrderRejected", "Cause": f"quantity {quantity}"},
            "Accept": {"Type": "Pass", "End": True},
        },
    }


def reader(key: str, **config: Any) -> dict[str, Any]:
    return {
        "Resource": "arn:aws:states:::s3:getObject",
        "ReaderConfig": config,
        "Parameters": {"Bucket": BUCKET, "Key": key},
    }


def distributed_map(processor: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "StartAt": "Each item",
        "States": {
            "Each item": {"Type": "Map", "ItemProcessor": processor or pass_through(), "End": True, **fields}
        },
    }


def execute(cloud: LocalCloud, definition: dict[str, Any], state_input: Any = None) -> dict[str, Any]:
    sfn = cloud.client("stepfunctions")
    arn = sfn.create_state_machine(
        name=f"data-plane-{next(_names)}", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(state_input or {}))["executionArn"]
    wait_for_execution(sfn, execution, timeout=60, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution)
    return described


def output_of(described: dict[str, Any]) -> Any:
    assert described["status"] == "SUCCEEDED", described
    return json.loads(described["output"])


def s3_json(cloud: LocalCloud, key: str) -> Any:
    return json.loads(cloud.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read())


# --- ItemReader ----------------------------------------------------------------------------------------


def test_express_children_read_a_json_array_up_to_max_items(cloud: LocalCloud) -> None:
    definition = distributed_map(
        pass_through("EXPRESS"), ItemReader=reader("orders.json", InputType="JSON", MaxItems=3)
    )

    assert output_of(execute(cloud, definition)) == ORDERS[:3]


def test_json_lines_are_one_item_each(cloud: LocalCloud) -> None:
    definition = distributed_map(ItemReader=reader("orders.jsonl", InputType="JSONL"))

    assert output_of(execute(cloud, definition)) == ORDERS


@pytest.mark.parametrize(
    ("delimiter", "character"),
    [("COMMA", ","), ("PIPE", "|"), ("SEMICOLON", ";"), ("SPACE", " "), ("TAB", "\t")],
)
def test_csv_rows_become_objects_named_by_the_header_row(
    cloud: LocalCloud, delimiter: str, character: str
) -> None:
    key = f"orders-{delimiter.lower()}.csv"
    rows = [["order_id", "quantity"], ["o-1", "1"], ["o-2", "2"]]
    cloud.client("s3").put_object(
        Bucket=BUCKET, Key=key, Body="\n".join(character.join(row) for row in rows).encode()
    )
    config = {"InputType": "CSV", "CSVHeaderLocation": "FIRST_ROW", "CSVDelimiter": delimiter}
    if delimiter == "COMMA":
        del config["CSVDelimiter"]  # the default

    output = output_of(execute(cloud, distributed_map(ItemReader=reader(key, **config))))

    assert output == [{"order_id": "o-1", "quantity": "1"}, {"order_id": "o-2", "quantity": "2"}]


def test_csv_headers_can_be_given_and_max_items_read_from_the_input(cloud: LocalCloud) -> None:
    cloud.client("s3").put_object(Bucket=BUCKET, Key="headless.csv", Body=b"o-1,1\no-2,2\no-3,3\n")
    definition = distributed_map(
        ItemReader=reader(
            "headless.csv",
            InputType="CSV",
            CSVHeaderLocation="GIVEN",
            CSVHeaders=["order_id", "quantity"],
            MaxItemsPath="$.limit",
        )
    )

    output = output_of(execute(cloud, definition, {"limit": 2}))

    assert output == [{"order_id": "o-1", "quantity": "1"}, {"order_id": "o-2", "quantity": "2"}]


def test_an_s3_inventory_manifest_lists_the_objects_of_its_csv_files(cloud: LocalCloud) -> None:
    s3 = cloud.client("s3")
    for number, keys in enumerate([["photos/a.jpg", "photos/b.jpg"], ["photos/c.jpg"]]):
        buffer = io.StringIO()
        csv.writer(buffer).writerows([["source-bucket", key, "100"] for key in keys])
        s3.put_object(
            Bucket=BUCKET,
            Key=f"inventory/data/{number}.csv.gz",
            Body=gzip.compress(buffer.getvalue().encode()),
        )
    manifest = {
        "sourceBucket": "source-bucket",
        "destinationBucket": f"arn:aws:s3:::{BUCKET}",
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size",
        "files": [{"key": "inventory/data/0.csv.gz"}, {"key": "inventory/data/1.csv.gz"}],
    }
    s3.put_object(Bucket=BUCKET, Key="inventory/manifest.json", Body=json.dumps(manifest).encode())

    output = output_of(
        execute(cloud, distributed_map(ItemReader=reader("inventory/manifest.json", InputType="MANIFEST")))
    )

    assert [item["Key"] for item in output] == ["photos/a.jpg", "photos/b.jpg", "photos/c.jpg"]
    assert output[0] == {"Bucket": "source-bucket", "Key": "photos/a.jpg", "Size": "100"}


def test_an_s3_listing_gives_each_object_in_aws_shape(cloud: LocalCloud) -> None:
    s3 = cloud.client("s3")
    for name in ("x", "y", "z"):
        s3.put_object(Bucket=BUCKET, Key=f"listing/{name}.txt", Body=name.encode() * 3)
    definition = distributed_map(
        ItemReader={
            "Resource": "arn:aws:states:::s3:listObjectsV2",
            "ReaderConfig": {"MaxItems": 2},
            "Parameters": {"Bucket": BUCKET, "Prefix": "listing/"},
        }
    )

    output = output_of(execute(cloud, definition))

    assert [item["Key"] for item in output] == ["listing/x.txt", "listing/y.txt"]
    assert set(output[0]) == {"Etag", "Key", "LastModified", "Size", "StorageClass"}
    assert output[0]["Size"] == 3
    assert isinstance(output[0]["LastModified"], int)


@pytest.mark.parametrize(
    ("key", "input_type", "cause_part"),
    [("missing.json", "JSON", "NoSuchKey"), ("orders.jsonl", "JSON", "Invalid JSON")],
)
def test_an_unreadable_source_fails_the_map_with_item_reader_failed(
    cloud: LocalCloud, key: str, input_type: str, cause_part: str
) -> None:
    described = execute(cloud, distributed_map(ItemReader=reader(key, InputType=input_type)))

    assert described["status"] == "FAILED"
    assert described["error"] == "States.ItemReaderFailed"
    assert cause_part in described["cause"]


# --- ItemBatcher ---------------------------------------------------------------------------------------


def test_batches_carry_the_batch_input_and_the_selected_items(cloud: LocalCloud) -> None:
    definition = distributed_map(
        ItemReader=reader("orders.json", InputType="JSON"),
        ItemSelector={"id.$": "$$.Map.Item.Value.order_id", "batch.$": "$.batch_id"},
        ItemBatcher={"MaxItemsPerBatch": 2, "BatchInput": {"batch_id.$": "$.batch_id", "kind": "orders"}},
    )

    output = output_of(execute(cloud, definition, {"batch_id": "b-1"}))

    batch_input = {"batch_id": "b-1", "kind": "orders"}
    assert output == [
        {"BatchInput": batch_input, "Items": [{"id": "o-1", "batch": "b-1"}, {"id": "o-2", "batch": "b-1"}]},
        {"BatchInput": batch_input, "Items": [{"id": "o-3", "batch": "b-1"}, {"id": "o-4", "batch": "b-1"}]},
        {"BatchInput": batch_input, "Items": [{"id": "o-5", "batch": "b-1"}]},
    ]


def test_batches_stay_within_max_input_bytes(cloud: LocalCloud) -> None:
    # {"Items":[...]} with two orders is 77 bytes, with three 114: a 100-byte cap holds two.
    definition = distributed_map(
        ItemReader=reader("orders.json", InputType="JSON"), ItemBatcher={"MaxInputBytesPerBatch": 100}
    )

    output = output_of(execute(cloud, definition))

    assert [len(batch["Items"]) for batch in output] == [2, 2, 1]
    assert all(len(json.dumps(batch, separators=(",", ":"))) <= 100 for batch in output)
    assert "BatchInput" not in output[0]


def test_max_items_per_batch_path_is_read_from_the_input(cloud: LocalCloud) -> None:
    definition = distributed_map(ItemsPath="$.orders", ItemBatcher={"MaxItemsPerBatchPath": "$.size"})

    output = output_of(execute(cloud, definition, {"orders": ORDERS, "size": 4}))

    assert [batch["Items"] for batch in output] == [ORDERS[:4], ORDERS[4:]]


# --- Tolerated failures --------------------------------------------------------------------------------


def test_one_failed_child_fails_the_map_when_no_failure_is_tolerated(cloud: LocalCloud) -> None:
    described = execute(
        cloud, distributed_map(failing_on_quantity(2), ItemsPath="$.orders"), {"orders": ORDERS}
    )

    assert described["status"] == "FAILED"
    assert described["error"] == "States.ExceedToleratedFailureThreshold"
    assert described["cause"] == "The specified tolerated failure threshold was exceeded"


@pytest.mark.parametrize(
    "tolerance",
    [
        {"ToleratedFailureCount": 1},
        {"ToleratedFailurePercentage": 20},
        {"ToleratedFailurePercentagePath": "$.pct"},
    ],
)
def test_failures_within_the_tolerance_leave_the_failed_child_in_the_result(
    cloud: LocalCloud, tolerance: dict[str, Any]
) -> None:
    definition = distributed_map(failing_on_quantity(2), ItemsPath="$.orders", **tolerance)

    output = output_of(execute(cloud, definition, {"orders": ORDERS, "pct": 20}))

    assert output[0] == ORDERS[0]
    assert output[2:] == ORDERS[2:]
    assert output[1]["Status"] == "FAILED"
    assert (output[1]["Error"], output[1]["Cause"]) == ("OrderRejected", "quantity 2")
    assert json.loads(output[1]["Input"]) == ORDERS[1]


@pytest.mark.parametrize("tolerance", [{"ToleratedFailureCount": 0}, {"ToleratedFailurePercentage": 19.9}])
def test_failures_past_the_tolerance_fail_the_map(cloud: LocalCloud, tolerance: dict[str, Any]) -> None:
    definition = distributed_map(failing_on_quantity(2), ItemsPath="$.orders", **tolerance)

    described = execute(cloud, definition, {"orders": ORDERS})

    assert described["error"] == "States.ExceedToleratedFailureThreshold"


@pytest.mark.parametrize(("tolerated", "status"), [(3, "FAILED"), (4, "SUCCEEDED")])
def test_a_failed_batch_counts_each_of_its_items_against_the_tolerance(
    cloud: LocalCloud, tolerated: int, status: str
) -> None:
    # Batches of 2, 2 and 1 orders; the children of the two full batches fail: 4 failed items.
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Measure batch",
        "States": {
            "Measure batch": {
                "Type": "Pass",
                "Parameters": {"size.$": "States.ArrayLength($.Items)"},
                "Next": "Check batch",
            },
            "Check batch": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.size", "NumericEquals": 2, "Next": "Reject batch"}],
                "Default": "Accept batch",
            },
            "Reject batch": {"Type": "Fail", "Error": "BatchRejected"},
            "Accept batch": {"Type": "Pass", "End": True},
        },
    }
    definition = distributed_map(
        processor, ItemsPath="$.orders", ItemBatcher={"MaxItemsPerBatch": 2}, ToleratedFailureCount=tolerated
    )

    described = execute(cloud, definition, {"orders": ORDERS})

    sfn = cloud.client("stepfunctions")
    (run,) = sfn.list_map_runs(executionArn=described["executionArn"])["mapRuns"]
    map_run = sfn.describe_map_run(mapRunArn=run["mapRunArn"])
    assert described["status"] == status
    items, executions = map_run["itemCounts"], map_run["executionCounts"]
    assert (items["total"], items["failed"], items["succeeded"]) == (5, 4, 1)
    assert (executions["total"], executions["failed"], executions["running"]) == (3, 2, 0)


def test_an_express_child_past_its_time_limit_fails_with_states_timeout(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Five minutes on AWS; one second here, so the test shows the limit without waiting for it.
    monkeypatch.setattr(data_plane, "EXPRESS_CHILD_TIME_LIMIT_SECONDS", 1.0)
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
        "StartAt": "Slow or fast",
        "States": {
            "Slow or fast": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.quantity", "NumericEquals": 1, "Next": "Slow"}],
                "Default": "Fast",
            },
            "Slow": {"Type": "Wait", "Seconds": 20, "Next": "Fast"},
            "Fast": {"Type": "Pass", "End": True},
        },
    }
    definition = distributed_map(processor, ItemsPath="$.orders", ToleratedFailureCount=1)

    output = output_of(execute(cloud, definition, {"orders": ORDERS[:2]}))

    assert output[0]["Status"] == "FAILED"
    assert output[0]["Error"] == "States.Timeout"
    assert output[1] == ORDERS[1]


def test_the_map_run_takes_its_label_concurrency_and_tolerance_from_the_definition_and_input(
    cloud: LocalCloud,
) -> None:
    definition = distributed_map(
        pass_through("EXPRESS"),
        ItemsPath="$.orders",
        Label="Orders",
        MaxConcurrencyPath="$.width",
        ToleratedFailureCountPath="$.count",
        ToleratedFailurePercentagePath="$.percentage",
    )

    described = execute(cloud, definition, {"orders": ORDERS, "width": 2, "count": 3, "percentage": 10})

    sfn = cloud.client("stepfunctions")
    (run,) = sfn.list_map_runs(executionArn=described["executionArn"])["mapRuns"]
    map_run = sfn.describe_map_run(mapRunArn=run["mapRunArn"])
    assert described["status"] == "SUCCEEDED"
    assert "/Orders:" in run["mapRunArn"]
    assert map_run["maxConcurrency"] == 2
    assert (map_run["toleratedFailureCount"], map_run["toleratedFailurePercentage"]) == (3, 10.0)
    assert map_run["itemCounts"]["succeeded"] == len(ORDERS)


# --- ResultWriter --------------------------------------------------------------------------------------


def result_writer(prefix: str, **writer_config: str) -> dict[str, Any]:
    writer: dict[str, Any] = {
        "Resource": "arn:aws:states:::s3:putObject",
        "Parameters": {"Bucket": BUCKET, "Prefix": prefix},
    }
    if writer_config:
        writer["WriterConfig"] = writer_config
    return writer


def written(cloud: LocalCloud, described: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The manifest the Map wrote, and the text of each result file by status."""
    details = output_of(described)["ResultWriterDetails"]
    manifest = s3_json(cloud, details["Key"])
    s3 = cloud.client("s3")
    texts = {
        status: [s3.get_object(Bucket=BUCKET, Key=f["Key"])["Body"].read().decode() for f in files]
        for status, files in manifest["ResultFiles"].items()
    }
    return manifest, texts


def test_results_without_writer_config_are_execution_records_with_failures_apart(cloud: LocalCloud) -> None:
    definition = distributed_map(
        failing_on_quantity(2),
        ItemsPath="$.orders",
        ToleratedFailureCount=1,
        ResultWriter=result_writer("plain"),
    )

    manifest, texts = written(cloud, execute(cloud, definition, {"orders": ORDERS}))

    assert manifest["DestinationBucket"] == BUCKET
    assert manifest["ResultFiles"]["SUCCEEDED"][0]["Key"].startswith("plain/")
    succeeded = json.loads(texts["SUCCEEDED"][0])
    assert [json.loads(record["Output"]) for record in succeeded] == [ORDERS[0], *ORDERS[2:]]
    assert {record["Status"] for record in succeeded} == {"SUCCEEDED"}
    failed = json.loads(texts["FAILED"][0])
    assert [(record["Status"], record["Error"]) for record in failed] == [("FAILED", "OrderRejected")]


def test_compact_json_lines_hold_only_the_outputs(cloud: LocalCloud) -> None:
    definition = distributed_map(
        ItemsPath="$.orders",
        ResultWriter=result_writer("compact", Transformation="COMPACT", OutputType="JSONL"),
    )

    manifest, texts = written(cloud, execute(cloud, definition, {"orders": ORDERS}))

    assert manifest["ResultFiles"]["SUCCEEDED"][0]["Key"].endswith("/SUCCEEDED_0.jsonl")
    assert [json.loads(line) for line in texts["SUCCEEDED"][0].splitlines()] == ORDERS
    assert manifest["ResultFiles"]["FAILED"] == []


def test_flatten_spreads_each_batch_result_into_one_list(cloud: LocalCloud) -> None:
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
        "StartAt": "Items only",
        "States": {"Items only": {"Type": "Pass", "OutputPath": "$.Items", "End": True}},
    }
    definition = distributed_map(
        processor,
        ItemsPath="$.orders",
        ItemBatcher={"MaxItemsPerBatch": 2},
        ResultWriter=result_writer("flat", Transformation="FLATTEN"),
    )

    _, texts = written(cloud, execute(cloud, definition, {"orders": ORDERS}))

    assert json.loads(texts["SUCCEEDED"][0]) == ORDERS


def test_a_writer_config_alone_makes_the_transformed_results_the_state_output(cloud: LocalCloud) -> None:
    definition = distributed_map(
        ItemsPath="$.orders",
        ItemBatcher={"MaxItemsPerBatch": 2},
        ResultWriter={"WriterConfig": {"Transformation": "NONE", "OutputType": "JSON"}},
    )

    output = output_of(execute(cloud, definition, {"orders": ORDERS}))

    assert [record["Status"] for record in output] == ["SUCCEEDED"] * 3
    assert json.loads(output[0]["Output"]) == {"Items": ORDERS[:2]}


def test_a_finished_map_holds_no_child_input_or_output(cloud: LocalCloud) -> None:
    written_to_s3 = distributed_map(
        failing_on_quantity(2),
        ItemsPath="$.orders",
        ToleratedFailureCount=1,
        ResultWriter=result_writer("held"),
    )
    in_the_state_output = distributed_map(pass_through("EXPRESS"), ItemsPath="$.orders")
    past_the_tolerance = distributed_map(failing_on_quantity(2), ItemsPath="$.orders")

    statuses = [
        execute(cloud, definition, {"orders": ORDERS})["status"]
        for definition in (written_to_s3, in_the_state_output, past_the_tolerance)
    ]

    assert statuses == ["SUCCEEDED", "SUCCEEDED", "FAILED"]
    # Each run's record lives as long as moto keeps its execution; the children's payloads must not.
    assert data_plane.child_outcomes_held() == 0


# --- The app's own template with Express children ------------------------------------------------------


@pytest.mark.slow
def test_the_app_runs_an_s3_batch_on_express_children_with_a_clean_audit() -> None:
    app_template = PROJECT_ROOT / "template.yaml"
    config = local_cloud_config(
        app_template, account_concurrency=10, parameter_overrides={"ChildExecutionType": "EXPRESS"}
    )
    with LocalCloud(config) as app:
        batch_id = "express-children"
        orders = generate_orders(30, fixture_skus(app_template), prefix=batch_id)
        locations = BatchLocations.from_outputs(app.stack.outputs)
        bucket, key = app.stack.outputs["BatchBucketName"], f"incoming/{batch_id}.json"
        app.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(orders).encode())
        api = BatchesApiClient(
            app.api_url, session=boto3.Session(**DUMMY_CREDENTIALS, region_name="us-east-1")
        )

        submitted = api.submit({"batch_id": batch_id, "source": {"bucket": bucket, "key": key}})
        status = wait_for_execution(
            app.client("stepfunctions"), locations.execution_arn(batch_id), timeout=600
        )
        report = audit_local_batch(app, batch_id)

    assert submitted.status == 202, submitted.body
    assert status == "SUCCEEDED"
    assert report.orders_in_input == 30
    assert sum(report.outcomes.values()) == 30
    assert report.lost == []
    assert report.doubled == []
    assert report.violations == []
