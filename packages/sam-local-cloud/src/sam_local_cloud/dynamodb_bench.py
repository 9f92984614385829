"""CPU per DynamoDB request: moto's own WSGI app against DynamoDBApp, on the calls a task makes.

Each round sends what one task of the app sends (the Powertools idempotency put with its condition,
a transaction reserving stock, the idempotency record's update, a consistent read) in-process through
a WSGI call, first to moto's app, then to DynamoDBApp on fresh backends, and reports the CPU time per
request of each and their ratio. Every answer must be a 200, so both apps did the same work.

    python -m sam_local_cloud.dynamodb_bench --rounds 300

``--read-sizes 1000 10000`` also measures what reads cost as the table grows: a Query of one partition
(two items) and a page of a Scan (100 items), each on tables of those sizes. AWS's cost is in proportion
to the items read, so the CPU per request should not grow with the table.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

REGION = "eu-west-1"
ORDERS = "orders"
IDEMPOTENCY = "idempotency"
_AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/eu-west-1/dynamodb/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + "0" * 64
)


@dataclass(frozen=True)
class Measurement:
    requests: int
    cpu_seconds: float
    wall_seconds: float

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_seconds / self.requests

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.wall_seconds


def environ_for(operation: str, request: dict[str, Any]) -> dict[str, Any]:
    """The WSGI environ a Werkzeug server builds for a botocore DynamoDB call."""
    body = json.dumps(request).encode()
    return {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "REQUEST_URI": "/",
        "RAW_URI": "/",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "4566",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": "application/x-amz-json-1.0",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:4566",
        "HTTP_X_AMZ_TARGET": f"DynamoDB_20120810.{operation}",
        "HTTP_X_AMZ_DATE": "20260101T000000Z",
        "HTTP_AUTHORIZATION": _AUTHORIZATION,
        "HTTP_USER_AGENT": "Boto3/1.43 md/Botocore#1.43 Botocore/1.43",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def setup_calls() -> Iterator[tuple[str, dict[str, Any]]]:
    string_key = [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ]
    yield (
        "CreateTable",
        {
            "TableName": ORDERS,
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": string_key,
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    yield (
        "CreateTable",
        {
            "TableName": IDEMPOTENCY,
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    yield (
        "PutItem",
        {
            "TableName": ORDERS,
            "Item": {"pk": {"S": "sku#1"}, "sk": {"S": "stock"}, "on_hand": {"N": "1000000"}},
        },
    )


def task_calls(task: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """What one task's handler sends, in order."""
    key = {"id": {"S": f"reserve#{task}"}}
    yield (
        "PutItem",
        {
            "TableName": IDEMPOTENCY,
            "Item": {**key, "expiration": {"N": "4102444800"}, "status": {"S": "INPROGRESS"}},
            "ConditionExpression": (
                "attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress"
                " AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
            ),
            "ExpressionAttributeNames": {
                "#id": "id",
                "#expiry": "expiration",
                "#in_progress_expiry": "in_progress_expiration",
                "#status": "status",
            },
            "ExpressionAttributeValues": {
                ":now": {"N": "1767225600"},
                ":now_in_millis": {"N": "1767225600000"},
                ":inprogress": {"S": "INPROGRESS"},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    )
    yield (
        "TransactWriteItems",
        {
            "TransactItems": [
                {
                    "Update": {
                        "TableName": ORDERS,
                        "Key": {"pk": {"S": "sku#1"}, "sk": {"S": "stock"}},
                        "UpdateExpression": "SET on_hand = on_hand - :one",
                        "ConditionExpression": "on_hand >= :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
                {
                    "Put": {
                        "TableName": ORDERS,
                        "Item": {"pk": {"S": f"order#{task}"}, "sk": {"S": "hold"}, "qty": {"N": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        },
    )
    yield (
        "UpdateItem",
        {
            "TableName": IDEMPOTENCY,
            "Key": key,
            "UpdateExpression": "SET #response_data = :response_data, #expiry = :expiry, #status = :status",
            "ExpressionAttributeNames": {
                "#expiry": "expiration",
                "#response_data": "data",
                "#status": "status",
            },
            "ExpressionAttributeValues": {
                ":expiry": {"N": "4102444900"},
                ":response_data": {"S": '{"reserved": true}'},
                ":status": {"S": "COMPLETED"},
            },
        },
    )
    yield "GetItem", {"TableName": IDEMPOTENCY, "Key": key, "ConsistentRead": True}


def call(app: Callable[..., Any], operation: str, request: dict[str, Any]) -> int:
    answered: list[str] = []
    b"".join(app(environ_for(operation, request), lambda status, headers, *_: answered.append(status)))
    return int(answered[0].split(" ", 1)[0])


def measure(app: Callable[..., Any], rounds: int) -> Measurement:
    from sam_local_cloud.moto_seam.services import moto_api_backend

    moto_api_backend.reset()
    for operation, request in setup_calls():
        call(app, operation, request)
    calls = [call_ for task in range(rounds) for call_ in task_calls(task)]
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    statuses = [call(app, operation, request) for operation, request in calls]
    measured = Measurement(len(calls), time.process_time() - cpu_started, time.perf_counter() - wall_started)
    refused = [status for status in statuses if status != 200]
    if refused:
        raise RuntimeError(
            f"{len(refused)} of {len(calls)} calls were not answered 200: {sorted(set(refused))}"
        )
    return measured


def read_calls(
    table_items: int, reads: int
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """Puts filling the orders table with ``table_items`` items (two per order partition), then ``reads``
    Queries of one partition and ``reads`` Scan pages of 100 items each, resumed from spread-out keys."""
    orders = max(table_items // 2, 1)
    fill = [
        ("PutItem", {"TableName": ORDERS, "Item": {"pk": {"S": f"order#{n:06d}"}, "sk": {"S": part}}})
        for n in range(orders)
        for part in ("hold", "record")
    ]
    step = max(orders // reads, 1)
    queries = [
        (
            "Query",
            {
                "TableName": ORDERS,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": f"order#{(n * step) % orders:06d}"}},
                "ConsistentRead": True,
            },
        )
        for n in range(reads)
    ]
    scans = [
        (
            "Scan",
            {
                "TableName": ORDERS,
                "Limit": 100,
                "ExclusiveStartKey": {"pk": {"S": f"order#{(n * step) % orders:06d}"}, "sk": {"S": "hold"}},
            },
        )
        for n in range(reads)
    ]
    return fill, queries + scans


def measure_reads(app: Callable[..., Any], table_items: int, reads: int = 200) -> dict[str, float]:
    """CPU ms per Query and per Scan page on a table of ``table_items`` items."""
    from sam_local_cloud.moto_seam.services import moto_api_backend

    moto_api_backend.reset()
    for operation, request in setup_calls():
        call(app, operation, request)
    fill, read = read_calls(table_items, reads)
    for operation, request in fill:
        call(app, operation, request)
    cpu_ms: dict[str, float] = {}
    for operation in ("Query", "Scan"):
        calls = [(name, request) for name, request in read if name == operation]
        started = time.process_time()
        statuses = [call(app, name, request) for name, request in calls]
        cpu_ms[operation] = 1000 * (time.process_time() - started) / len(calls)
        if any(status != 200 for status in statuses):
            raise RuntimeError(f"{operation}: not every read was answered 200: {sorted(set(statuses))}")
    return cpu_ms


def main(argv: list[str] | None = None) -> None:
    import logging

    from sam_local_cloud.dynamodb_service import DynamoDBApp
    from sam_local_cloud.moto_seam.installers import (
        install_dynamodb,
        install_model_registry,
        install_request_caches,
    )
    from sam_local_cloud.moto_seam.services import DomainDispatcherApplication, create_backend_app

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300, help="tasks' worth of calls (4 requests each)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each app; the fastest counts")
    parser.add_argument(
        "--read-sizes", type=int, nargs="*", default=[], help="table sizes (items) to measure reads on"
    )
    args = parser.parse_args(argv)
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    # moto as the local cloud runs it: without these, whole-table copies per transaction dominate.
    install_dynamodb()
    install_model_registry()
    moto_app = DomainDispatcherApplication(create_backend_app)
    measure(moto_app, 5)  # builds moto's Flask app for DynamoDB before the clock runs
    by_moto = _fastest(lambda: measure(moto_app, args.rounds), args.repeat)
    install_request_caches()  # from here on moto's parsers and method lists are cached for both apps
    lean = DynamoDBApp(moto_app)
    by_lean, by_moto_cached = _fastest_of_each(
        [lambda: measure(lean, args.rounds), lambda: measure(moto_app, args.rounds)], args.repeat
    )
    for name, measured in (
        ("moto's app", by_moto),
        ("moto's app, caches on", by_moto_cached),
        ("DynamoDBApp", by_lean),
    ):
        print(
            f"{name:22} {measured.requests} requests  {measured.cpu_ms_per_request:.3f} ms CPU/request"
            f"  {measured.requests_per_second:.0f} requests/s"
        )
    ratio = by_moto.cpu_ms_per_request / by_lean.cpu_ms_per_request
    print(f"ratio: {ratio:.2f}x less CPU per request than moto's app")
    reads = {size: measure_reads(lean, size) for size in args.read_sizes}
    for size, cpu_ms in reads.items():
        print(
            f"reads on {size:,} items: Query {cpu_ms['Query']:.3f} ms CPU/request,"
            f" Scan page of 100 {cpu_ms['Scan']:.3f} ms CPU/request"
        )
    if len(reads) > 1:
        smallest, largest = min(reads), max(reads)
        for operation in ("Query", "Scan"):
            growth = reads[largest][operation] / reads[smallest][operation]
            print(f"{operation}: {growth:.2f}x the CPU on a table {largest / smallest:.0f}x as large")


def _fastest(run: Callable[[], Measurement], repeat: int) -> Measurement:
    return min((run() for _ in range(repeat)), key=lambda measured: measured.cpu_seconds)


def _fastest_of_each(runs: list[Callable[[], Measurement]], repeat: int) -> list[Measurement]:
    """Alternates the runs, so that a busy moment of the machine does not fall on one of them only."""
    measured: list[list[Measurement]] = [[] for _ in runs]
    for _ in range(repeat):
        for index, run in enumerate(runs):
            measured[index].append(run())
    return [min(each, key=lambda one: one.cpu_seconds) for each in measured]


if __name__ == "__main__":
    main()
