"""Bad input through the local cloud's HTTP API: each case answered clearly, no other order lost or doubled.

One batch mixes every per-order case with good orders; the request-level cases are separate calls.
docs/bad-input.md tabulates the same cases and outcomes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, local_cloud_config
from orderbatch.audit import AuditReport, BatchLocations
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, wait_for_execution

pytestmark = pytest.mark.e2e

TEMPLATE = PROJECT_ROOT / "template.yaml"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    config = local_cloud_config(
        TEMPLATE,
        account_concurrency=10,
        parameter_overrides={"MapMaxConcurrency": "8"},
    )
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def api(cloud: LocalCloud) -> BatchesApiClient:
    session = boto3.Session(**DUMMY_CREDENTIALS, region_name="us-east-1")
    return BatchesApiClient(cloud.api_url, session=session)


def order(order_id: Any, *lines: tuple[Any, Any, Any], **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "order_id": order_id,
        "customer_id": "c-1",
        "currency": "USD",
        "items": [{"sku": sku, "quantity": quantity, "unit_price": price} for sku, quantity, price in lines],
    }
    document.update(fields)
    return {key: value for key, value in document.items() if value is not None}


GOOD_LINE = ("SKU-001", 1, "2.50")
LONG_ID = "x" * 65

# (order, expected outcome, expected code, words the reason must contain)
MIXED_BATCH: list[tuple[dict[str, Any], str, str | None, tuple[str, ...]]] = [
    (order("bad-good-1", GOOD_LINE), "SUCCEEDED", None, ()),
    (order("bad-dup", GOOD_LINE), "SUCCEEDED", None, ()),
    (order("bad-conflict", GOOD_LINE), "SUCCEEDED", None, ()),
    (order(None, GOOD_LINE), "REJECTED", "INVALID_ORDER", ("item 3", "order_id", "required")),
    (order("bad id!", GOOD_LINE), "REJECTED", "INVALID_ORDER", ("item 4", "order_id")),
    (order(LONG_ID, GOOD_LINE), "REJECTED", "INVALID_ORDER", ("item 5", "order_id")),
    (
        order("bad-qty-zero", ("SKU-001", 0, "1.00")),
        "REJECTED",
        "INVALID_ORDER",
        ("bad-qty-zero", "quantity"),
    ),
    (order("bad-qty-neg", ("SKU-001", -2, "1.00")), "REJECTED", "INVALID_ORDER", ("bad-qty-neg", "quantity")),
    (
        order("bad-price-neg", ("SKU-001", 1, "-1.00")),
        "REJECTED",
        "INVALID_ORDER",
        ("bad-price-neg", "unit_price"),
    ),
    (
        order("bad-price-nan", ("SKU-001", 1, "abc")),
        "REJECTED",
        "INVALID_ORDER",
        ("bad-price-nan", "unit_price"),
    ),
    (order("bad-sku", ("SKU-NOPE", 1, "1.00")), "REJECTED", "UNKNOWN_SKU", ("bad-sku", "SKU-NOPE")),
    (order("bad-stock", ("SKU-LOW", 6, "1.00")), "FAILED", "OUT_OF_STOCK", ("bad-stock", "SKU-LOW")),
    (order("bad-good-2", GOOD_LINE, ("SKU-LOW", 1, "1.00")), "SUCCEEDED", None, ()),
    # Second occurrences last: the item that claims the ID first keeps it. Items run concurrently, so
    # "first" is the claim order, which with the pairs this far apart is the batch order in practice.
    (order("bad-dup", GOOD_LINE), "DUPLICATE", "DUPLICATE_ORDER", ("bad-dup",)),
    (order("bad-conflict", ("SKU-002", 2, "3.00")), "REJECTED", "CONFLICTING_ORDER", ("bad-conflict",)),
]
PAIRS = {"bad-dup": (1, 13), "bad-conflict": (2, 14)}


def wait_for(cloud: LocalCloud, batch_id: str, timeout: float = 240.0) -> str:
    arn = BatchLocations.from_outputs(cloud.stack.outputs).execution_arn(batch_id)
    return wait_for_execution(cloud.client("stepfunctions"), arn, timeout=timeout)


def audit(cloud: LocalCloud, batch_id: str) -> AuditReport:
    report: AuditReport = audit_local_batch(cloud, batch_id)
    return report


def outcomes_by_index(api: BatchesApiClient, batch_id: str) -> dict[int, dict[str, Any]]:
    status = api.status(batch_id)
    assert status.status == 200, status.body
    return {o["item_index"]: o for o in status.body["summary"]["orders"]}


def test_one_batch_of_bad_orders_rejects_each_by_name_and_runs_the_good_ones_once(
    cloud: LocalCloud, api: BatchesApiClient
) -> None:
    batch_id = "bad-input-mixed"
    submitted = api.submit({"batch_id": batch_id, "orders": [case[0] for case in MIXED_BATCH]})
    assert submitted.status == 202, submitted.body
    assert wait_for(cloud, batch_id) == "SUCCEEDED"

    outcomes = outcomes_by_index(api, batch_id)
    for index, got in sorted(outcomes.items()):
        print(f"item {index}: {got['outcome']} {got['code']} {got['reason']}")
    paired = {index for pair in PAIRS.values() for index in pair}
    for index, (_order, outcome, code, words) in enumerate(MIXED_BATCH):
        if index in paired:
            continue
        got = outcomes[index]
        assert (got["outcome"], got["code"]) == (outcome, code), got
        for word in words:
            assert word in (got["reason"] or ""), got
    for order_id, (first, second) in PAIRS.items():
        expected = {
            (MIXED_BATCH[first][1], MIXED_BATCH[first][2]),
            (MIXED_BATCH[second][1], MIXED_BATCH[second][2]),
        }
        got_pair = {(outcomes[i]["outcome"], outcomes[i]["code"]) for i in (first, second)}
        assert got_pair == expected, f"{order_id}: {got_pair}"
        loser = next(outcomes[i] for i in (first, second) if outcomes[i]["outcome"] != "SUCCEEDED")
        assert order_id in loser["reason"]
    report = audit(cloud, batch_id)
    assert report.lost == []
    assert report.doubled == []
    assert report.violations == []
    assert report.outcomes == {"SUCCEEDED": 4, "REJECTED": 9, "FAILED": 1, "DUPLICATE": 1}
    stock = cloud.client("dynamodb").get_item(
        TableName=cloud.stack.outputs["InventoryTableName"], Key={"sku": {"S": "SKU-LOW"}}
    )
    assert stock["Item"]["stock"]["N"] == "4", "the out-of-stock order must reserve nothing"


def test_a_malformed_row_of_an_s3_csv_is_rejected_with_its_line_number(
    cloud: LocalCloud, api: BatchesApiClient
) -> None:
    bucket = cloud.stack.outputs["BatchBucketName"]
    key = "incoming/bad-input-rows.csv"
    rows = [
        "order_id,customer_id,currency,items",
        "bad-csv-1,c-1,USD,SKU-001:1:2.50",
        "bad-csv-2,c-1,USD,SKU-001:two:2.50",
        "bad-csv-3,c-1,USD,SKU-002:1:1.00;SKU-003:2:4.00",
    ]
    cloud.client("s3").put_object(Bucket=bucket, Key=key, Body="\n".join(rows).encode() + b"\n")

    submitted = api.submit({"batch_id": "bad-input-csv", "source": {"bucket": bucket, "key": key}})
    assert submitted.status == 202, submitted.body
    assert wait_for(cloud, "bad-input-csv") == "SUCCEEDED"

    report = audit(cloud, "bad-input-csv")
    assert report.violations == []
    assert report.outcomes == {"SUCCEEDED": 2, "REJECTED": 1}
    summary = json.loads(
        cloud.client("s3").get_object(Bucket=bucket, Key="batches/bad-input-csv/summary.json")["Body"].read()
    )
    rejected = [o for o in summary["orders"] if o["outcome"] == "REJECTED"]
    assert len(rejected) == 1
    assert rejected[0]["code"] == "INVALID_ORDER"
    assert "bad-csv-2" in rejected[0]["reason"]
    assert "line 3" in rejected[0]["reason"]
    assert "quantity" in rejected[0]["reason"]


def test_request_level_mistakes_get_a_specific_answer_and_start_nothing(
    cloud: LocalCloud, api: BatchesApiClient
) -> None:
    good = {"batch_id": "bad-input-request", "orders": [order("bad-req-1", GOOD_LINE)]}
    bucket = cloud.stack.outputs["BatchBucketName"]
    big = {"batch_id": "bad-input-big", "orders": [order(f"big-{n:05d}", GOOD_LINE) for n in range(2500)]}
    cases = {
        "malformed JSON": api.request("POST", "/batches", b'{"batch_id": "x", "orders": ['),
        "wrong content type": api.request(
            "POST", "/batches", json.dumps(good).encode(), content_type="text/plain"
        ),
        "missing batch_id": api.submit({"orders": good["orders"]}),
        "empty batch": api.submit({"batch_id": "bad-input-empty", "orders": []}),
        "over 256 KiB inline": api.submit(big),
        "S3 source missing": api.submit(
            {"batch_id": "bad-input-nos3", "source": {"bucket": bucket, "key": "incoming/nope.json"}}
        ),
        "first submission": api.submit(good),
        "same batch again": api.submit(good),
        "same batch ID, different content": api.submit({**good, "orders": [order("bad-req-2", GOOD_LINE)]}),
        "unsigned": api.request("POST", "/batches", json.dumps(good).encode(), sign=False),
        "unknown route": api.request("GET", "/nowhere"),
    }
    for name, response in cases.items():
        print(f"{name}: {response.status} {response.body}")

    assert cases["malformed JSON"].status == 400
    assert cases["malformed JSON"].body["message"].startswith("request body is not valid JSON")
    assert cases["wrong content type"].status == 415
    assert cases["wrong content type"].body["field"] == "Content-Type"
    assert cases["missing batch_id"].status == 400
    assert cases["missing batch_id"].body == {"message": "batch_id is required", "field": "batch_id"}
    assert cases["empty batch"].status == 400
    assert cases["empty batch"].body["message"] == "batch bad-input-empty has no orders"
    assert cases["over 256 KiB inline"].status == 413
    assert "upload the orders to S3" in cases["over 256 KiB inline"].body["message"]
    assert cases["S3 source missing"].status == 400
    assert "does not exist" in cases["S3 source missing"].body["message"]
    assert cases["first submission"].status == 202
    assert cases["same batch again"].status == 200
    assert cases["same batch again"].body["submitted"] is False
    assert cases["same batch again"].body["execution_arn"] == cases["first submission"].body["execution_arn"]
    assert cases["same batch ID, different content"].status == 409
    assert "different content" in cases["same batch ID, different content"].body["message"]
    assert cases["unsigned"].status == 403
    assert cases["unsigned"].body == {"message": "Forbidden"}
    assert cases["unknown route"].status == 404

    sfn = cloud.client("stepfunctions")
    machine = BatchLocations.from_outputs(cloud.stack.outputs).state_machine_arn
    started = {e["name"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]}
    assert "bad-input-request" in started
    assert not started & {"bad-input-empty", "bad-input-big", "bad-input-nos3"}
    assert wait_for(cloud, "bad-input-request") == "SUCCEEDED"
    report = audit(cloud, "bad-input-request")
    assert report.violations == []
    assert report.outcomes == {"SUCCEEDED": 1}
