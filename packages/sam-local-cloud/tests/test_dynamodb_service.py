"""DynamoDBApp answers every DynamoDB call exactly as moto's own server does.

Differential: one sequence of real, botocore-signed calls runs against moto's app and then, on fresh
backends, against DynamoDBApp (each behind a Werkzeug server on a loopback port); every response must
match in status, JSON body and the headers a client reads.
"""

from __future__ import annotations

import binascii
import json
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from werkzeug.serving import WSGIRequestHandler, make_server

from sam_local_cloud.dynamodb_service import DynamoDBApp
from sam_local_cloud.moto_seam.installers import install_dynamodb_expression_errors, install_request_caches

REGION = "eu-west-1"
ORDERS = "orders"
IDEMPOTENCY = "idempotency"
# Values that differ between two runs on fresh backends by nature (creation times, random ids).
VOLATILE_KEYS = frozenset({"CreationDateTime", "TableId", "LatestStreamLabel", "LatestStreamArn"})
# Length and CRC32 follow the body, whose volatile values differ in length: checked against the body.
HEADERS_COMPARED = ("content-type", "server", "status", "access-control-allow-origin")


@pytest.fixture(autouse=True)
def request_caches() -> None:
    """The caches DynamoDBApp runs with wherever the local cloud serves DynamoDB."""
    install_request_caches()


class Recorder:
    """A WSGI middleware keeping every (status, headers, body) the app answers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.exchanges: list[tuple[str, int, dict[str, str], bytes]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        answered: dict[str, Any] = {}

        def record_start(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            answered["status"] = int(status.split(" ", 1)[0])
            answered["headers"] = {name.lower(): value for name, value in headers}
            return start_response(status, headers, *args)

        body = b"".join(self.app(environ, record_start))
        self.exchanges.append((target, answered["status"], answered["headers"], body))
        return [body]


class QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        """An access line per call would bury a failure's report."""


@contextmanager
def serving(app: Any, access_key: str = "AKIAIOSFODNN7EXAMPLE") -> Iterator[Any]:
    recorder = Recorder(app)
    server = make_server("127.0.0.1", 0, recorder, threaded=True, request_handler=QuietRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = boto3.client(
            "dynamodb",
            region_name=REGION,
            endpoint_url=f"http://127.0.0.1:{server.port}",
            aws_access_key_id=access_key,
            aws_secret_access_key="secret",
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )
        yield client, recorder
    finally:
        server.shutdown()
        thread.join(timeout=5)


def fresh_backends() -> None:
    from sam_local_cloud.moto_seam.testing import moto_api_backend

    moto_api_backend.reset()


def moto_app() -> Any:
    from sam_local_cloud.moto_seam.testing import DomainDispatcherApplication, create_backend_app

    return DomainDispatcherApplication(create_backend_app)


def error_of(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as raised:
        call()
    return dict(raised.value.response)


def app_calls(client: Any) -> list[Any]:
    """The calls a batch's handlers make, and the errors they can meet; returns what the client saw."""
    seen: list[Any] = []
    client.create_table(
        TableName=ORDERS,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-status",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.create_table(
        TableName=IDEMPOTENCY,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    seen.append(client.describe_table(TableName=ORDERS)["Table"]["TableStatus"])
    seen.append(
        client.update_time_to_live(
            TableName=IDEMPOTENCY, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"}
        )
    )
    seen.append(client.describe_time_to_live(TableName=IDEMPOTENCY)["TimeToLiveDescription"])

    # Powertools idempotency: the in-progress record, a second attempt meeting it, then the result.
    idempotent_put = {
        "TableName": IDEMPOTENCY,
        "Item": {
            "id": {"S": "reserve#abc"},
            "expiration": {"N": "4102444800"},
            "status": {"S": "INPROGRESS"},
            "in_progress_expiration": {"N": "4102444800000"},
        },
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
            ":now": {"N": "1764612000"},
            ":now_in_millis": {"N": "1764612000000"},
            ":inprogress": {"S": "INPROGRESS"},
        },
    }
    seen.append(client.put_item(**idempotent_put)["ResponseMetadata"]["HTTPStatusCode"])
    seen.append(
        error_of(lambda: client.put_item(**idempotent_put, ReturnValuesOnConditionCheckFailure="ALL_OLD"))
    )
    seen.append(error_of(lambda: client.put_item(**idempotent_put)))
    seen.append(
        client.update_item(
            TableName=IDEMPOTENCY,
            Key={"id": {"S": "reserve#abc"}},
            UpdateExpression="SET #response_data = :response_data, #expiry = :expiry, #status = :status",
            ExpressionAttributeNames={"#expiry": "expiration", "#response_data": "data", "#status": "status"},
            ExpressionAttributeValues={
                ":expiry": {"N": "4102444900"},
                ":response_data": {"S": '{"ok": true}'},
                ":status": {"S": "COMPLETED"},
            },
        )
    )
    seen.append(client.get_item(TableName=IDEMPOTENCY, Key={"id": {"S": "reserve#abc"}}, ConsistentRead=True))

    # Effect writes: SET/ADD/REMOVE with both kinds of ReturnValues.
    for number in range(7):
        client.put_item(
            TableName=ORDERS,
            Item={
                "pk": {"S": "batch#1"},
                "sk": {"S": f"order#{number}"},
                "status": {"S": "NEW"},
                "qty": {"N": str(number)},
                "note": {"S": "x"},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )
    seen.append(
        client.update_item(
            TableName=ORDERS,
            Key={"pk": {"S": "batch#1"}, "sk": {"S": "order#1"}},
            UpdateExpression="SET #s = :reserved, updated = :t ADD qty :one, tags :tag REMOVE note",
            ConditionExpression="#s = :new",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":reserved": {"S": "RESERVED"},
                ":t": {"N": "5"},
                ":one": {"N": "1"},
                ":tag": {"SS": ["rush"]},
                ":new": {"S": "NEW"},
            },
            ReturnValues="ALL_NEW",
        )
    )
    seen.append(
        client.update_item(
            TableName=ORDERS,
            Key={"pk": {"S": "batch#1"}, "sk": {"S": "order#2"}},
            UpdateExpression="SET qty = qty + :two",
            ExpressionAttributeValues={":two": {"N": "2"}},
            ReturnValues="UPDATED_NEW",
        )
    )
    seen.append(
        error_of(
            lambda: client.update_item(
                TableName=ORDERS,
                Key={"pk": {"S": "batch#1"}, "sk": {"S": "order#1"}},
                UpdateExpression="SET #s = :reserved",
                ConditionExpression="#s = :new",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":reserved": {"S": "RESERVED"}, ":new": {"S": "NEW"}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        )
    )
    seen.append(
        client.get_item(
            TableName=ORDERS, Key={"pk": {"S": "batch#1"}, "sk": {"S": "order#1"}}, ConsistentRead=True
        )
    )

    # Reads: key condition, filter, pagination, an index.
    pages = client.get_paginator("query").paginate(
        TableName=ORDERS,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :order)",
        FilterExpression="qty >= :min",
        ExpressionAttributeValues={":pk": {"S": "batch#1"}, ":order": {"S": "order#"}, ":min": {"N": "2"}},
        PaginationConfig={"PageSize": 3},
    )
    seen.append([page["Items"] for page in pages])
    seen.append(
        client.query(
            TableName=ORDERS,
            IndexName="by-status",
            KeyConditionExpression="#s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "RESERVED"}},
        )
    )

    # Reserve: a transaction that commits, then one cancelled with its reasons.
    def reserve(sku_condition: str) -> Any:
        return client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": ORDERS,
                        "Item": {"pk": {"S": "sku#9"}, "sk": {"S": "hold#1"}, "status": {"S": "HELD"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": ORDERS,
                        "Key": {"pk": {"S": "batch#1"}, "sk": {"S": "order#3"}},
                        "UpdateExpression": "SET #s = :held",
                        "ConditionExpression": sku_condition,
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":held": {"S": "HELD"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": ORDERS,
                        "Key": {"pk": {"S": "batch#1"}, "sk": {"S": "order#4"}},
                        "ConditionExpression": "attribute_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            ]
        )

    seen.append(reserve("attribute_exists(pk)")["ResponseMetadata"]["HTTPStatusCode"])
    seen.append(error_of(lambda: reserve("attribute_exists(pk)")))

    seen.append(
        client.batch_write_item(
            RequestItems={
                ORDERS: [
                    {
                        "PutRequest": {
                            "Item": {
                                "pk": {"S": "batch#2"},
                                "sk": {"S": f"order#{n}"},
                                "status": {"S": "NEW"},
                            }
                        }
                    }
                    for n in range(3)
                ]
                + [{"DeleteRequest": {"Key": {"pk": {"S": "batch#1"}, "sk": {"S": "order#6"}}}}]
            }
        )
    )
    seen.append(
        client.delete_item(
            TableName=ORDERS,
            Key={"pk": {"S": "batch#2"}, "sk": {"S": "order#0"}},
            ConditionExpression="#s = :new",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":new": {"S": "NEW"}},
            ReturnValues="ALL_OLD",
        )
    )
    seen.append(
        error_of(
            lambda: client.delete_item(
                TableName=ORDERS,
                Key={"pk": {"S": "batch#2"}, "sk": {"S": "order#1"}},
                ConditionExpression="#s = :held",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":held": {"S": "HELD"}},
            )
        )
    )

    # Errors from validation and from a missing table.
    seen.append(error_of(lambda: client.put_item(TableName=ORDERS, Item={"pk": {"S": ""}, "sk": {"S": "a"}})))
    seen.append(error_of(lambda: client.get_item(TableName="no-such-table", Key={"pk": {"S": "a"}})))
    seen.append(
        error_of(
            lambda: client.update_item(
                TableName=ORDERS,
                Key={"pk": {"S": "a"}, "sk": {"S": "b"}},
                UpdateExpression="SET a = :v",
                ExpressionAttributeValues={":v": {"S": "1"}, ":unused": {"S": "2"}},
            )
        )
    )
    seen.append(
        error_of(
            lambda: client.update_item(
                TableName=ORDERS,
                Key={"pk": {"S": "a"}, "sk": {"S": "b"}},
                UpdateExpression="SET = :v",
                ExpressionAttributeValues={":v": {"S": "1"}},
            )
        )
    )
    seen.append(client.list_tables())
    return seen


def without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: "<volatile>" if key in VOLATILE_KEYS else without_volatile(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [without_volatile(item) for item in value]
    return value


def comparable(exchange: tuple[str, int, dict[str, str], bytes]) -> tuple[Any, ...]:
    target, status, headers, body = exchange
    compared = {name: headers.get(name) for name in HEADERS_COMPARED}
    return target, status, sorted(headers), compared, without_volatile(json.loads(body))


def run_against(
    app: Any, access_key: str = "AKIAIOSFODNN7EXAMPLE"
) -> tuple[list[Any], list[tuple[str, int, dict[str, str], bytes]]]:
    fresh_backends()
    with serving(app, access_key) as (client, recorder):
        seen = app_calls(client)
    return seen, recorder.exchanges


def moto_s_answers(access_key: str) -> tuple[list[Any], list[tuple[str, int, dict[str, str], bytes]]]:
    """The reference, from a process where DynamoDBApp's caches were never patched into moto."""
    return run_against(moto_app(), access_key)


# An access key moto reads in the signature, and the SDKs' usual dummy one, which it does not.
@pytest.mark.parametrize("access_key", ["AKIAIOSFODNN7EXAMPLE", "testing"])
def test_every_response_matches_moto_s_own_server(access_key: str) -> None:
    with multiprocessing.get_context("spawn").Pool(1) as reference:
        seen_by_moto, moto_exchanges = reference.apply_async(moto_s_answers, (access_key,)).get(timeout=120)
    lean = DynamoDBApp(moto_app())
    seen_lean, lean_exchanges = run_against(lean, access_key)

    assert lean.handled == len(lean_exchanges)
    assert lean.passed_on == 0
    assert len(lean_exchanges) == len(moto_exchanges) > 30
    for by_moto, by_lean in zip(moto_exchanges, lean_exchanges, strict=True):
        assert comparable(by_lean) == comparable(by_moto)
        assert by_lean[2]["x-amz-crc32"] == str(binascii.crc32(by_lean[3]))
        assert by_lean[2]["content-length"] == str(len(by_lean[3]))
        assert by_lean[2]["x-amzn-requestid"]
        if by_lean[3] == by_moto[3]:
            assert by_lean[2]["x-amz-crc32"] == by_moto[2]["x-amz-crc32"]
            assert by_lean[2]["content-length"] == by_moto[2]["content-length"]
    assert without_volatile(_metadata_free(seen_lean)) == without_volatile(_metadata_free(seen_by_moto))


def test_errors_carry_what_clients_read() -> None:
    seen, _ = run_against(DynamoDBApp(moto_app()))
    condition_failed_with_item, condition_failed = seen[4], seen[5]
    assert condition_failed_with_item["Error"]["Code"] == "ConditionalCheckFailedException"
    assert condition_failed_with_item["Item"]["status"] == {"S": "INPROGRESS"}
    assert condition_failed["Error"]["Code"] == "ConditionalCheckFailedException"
    assert "Item" not in condition_failed
    cancelled = next(
        s
        for s in seen
        if isinstance(s, dict) and s.get("Error", {}).get("Code") == "TransactionCanceledException"
    )
    assert [reason["Code"] for reason in cancelled["CancellationReasons"]] == [
        "ConditionalCheckFailed",
        "None",
        "None",
    ]
    missing = next(
        s
        for s in seen
        if isinstance(s, dict) and s.get("Error", {}).get("Code") == "ResourceNotFoundException"
    )
    assert missing["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_other_services_and_operations_go_to_the_fallback() -> None:
    lean = DynamoDBApp(moto_app())
    fresh_backends()
    with serving(lean) as (client, _):
        # Not DynamoDB: moto's dispatcher answers it.
        sqs = boto3.client(
            "sqs",
            region_name=REGION,
            endpoint_url=client.meta.endpoint_url,
            aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
            aws_secret_access_key="secret",
        )
        assert sqs.create_queue(QueueName="q")["QueueUrl"].endswith("/q")
        client.list_tables()
    assert (lean.passed_on, lean.handled) == (1, 1)


def test_method_names_follow_methods_patched_in_later() -> None:
    from sam_local_cloud.moto_seam.testing import core_utils

    method_names_from_class = core_utils.method_names_from_class

    class Handler:
        def known(self) -> None:
            """Present from the start."""

    assert "known" in method_names_from_class(Handler)
    assert "added" not in method_names_from_class(Handler)
    Handler.added = lambda self: None  # type: ignore[attr-defined]
    assert "added" in method_names_from_class(Handler)


def test_update_expressions_parse_once_and_stay_unchanged_by_updates() -> None:
    from sam_local_cloud.moto_seam.testing import UpdateExpressionParser

    expression = "SET #a = :a ADD visits :one"
    tree = UpdateExpressionParser.make(expression)
    assert UpdateExpressionParser.make(expression) is tree
    rendered = repr(tree)
    fresh_backends()
    with serving(DynamoDBApp(moto_app())) as (client, _):
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for value in ("first", "second"):
            client.update_item(
                TableName="t",
                Key={"k": {"S": "1"}},
                UpdateExpression=expression,
                ExpressionAttributeNames={"#a": "a"},
                ExpressionAttributeValues={":a": {"S": value}, ":one": {"N": "1"}},
            )
        item = client.get_item(TableName="t", Key={"k": {"S": "1"}})["Item"]
    assert item == {"k": {"S": "1"}, "a": {"S": "second"}, "visits": {"N": "2"}}
    assert repr(UpdateExpressionParser.make(expression)) == rendered
    with pytest.raises(Exception, match="Invalid UpdateExpression"):
        UpdateExpressionParser.make("SET = :v")


def test_the_validator_s_copy_of_a_tree_is_whole_and_shares_no_node() -> None:
    from sam_local_cloud.moto_seam.services import UpdateNode, update_validators
    from sam_local_cloud.moto_seam.testing import UpdateExpressionParser

    install_request_caches()
    tree = UpdateExpressionParser.make("SET a = :a, c = if_not_exists(c, :z) + :n REMOVE d[1] ADD #e :one")
    copied = update_validators.deepcopy(tree)

    def pairs(original: Any, copy: Any) -> Iterator[tuple[Any, Any]]:
        yield original, copy
        for child, copied_child in zip(original.children or [], copy.children or [], strict=True):
            if isinstance(child, UpdateNode):
                assert copied_child.parent is copy
                yield from pairs(child, copied_child)
            else:
                assert copied_child == child

    nodes = list(pairs(tree, copied))
    assert len(nodes) > 10
    assert all(type(a) is type(b) and a is not b and a.children is not b.children for a, b in nodes)
    assert copied.parent is None


def _metadata_free(seen: list[Any]) -> list[Any]:
    """What the client saw, without the request ids and dates botocore copies from the headers."""
    cleaned = []
    for entry in seen:
        if isinstance(entry, dict):
            entry = {key: value for key, value in entry.items() if key != "ResponseMetadata"}
        cleaned.append(entry)
    return cleaned


def test_a_condition_tokenised_once_still_reads_each_call_s_names_and_values() -> None:
    install_dynamodb_expression_errors()  # as wherever the local cloud serves DynamoDB
    fresh_backends()
    with serving(DynamoDBApp(moto_app())) as (client, _):
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="t", Item={"k": {"S": "1"}, "colour": {"S": "red"}, "size": {"S": "big"}})

        def put_if(name: str, value: str) -> Any:
            return client.put_item(
                TableName="t",
                Item={"k": {"S": "1"}, "colour": {"S": "red"}, "size": {"S": "big"}},
                ConditionExpression="#attribute = :expected",
                ExpressionAttributeNames={"#attribute": name},
                ExpressionAttributeValues={":expected": {"S": value}},
            )

        assert put_if("colour", "red")["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert error_of(lambda: put_if("colour", "big"))["Error"]["Code"] == "ConditionalCheckFailedException"
        assert put_if("size", "big")["ResponseMetadata"]["HTTPStatusCode"] == 200
        for _attempt in range(2):
            invalid = error_of(
                lambda: client.put_item(
                    TableName="t", Item={"k": {"S": "2"}}, ConditionExpression="k = :v ! x"
                )
            )
            # Refused as DynamoDB refuses it, each time: the failure is not remembered as tokens.
            assert invalid["ResponseMetadata"]["HTTPStatusCode"] == 400
            assert invalid["Error"]["Code"] == "ValidationException"
            assert invalid["Error"]["Message"].startswith("Invalid ConditionExpression: Syntax error; ")


def test_what_it_does_not_handle_goes_to_moto_s_app_unchanged() -> None:
    from werkzeug.test import Client

    reached_fallback: list[str] = []

    def fallback(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        reached_fallback.append(environ.get("HTTP_X_AMZ_TARGET", ""))
        start_response("418 I'M A TEAPOT", [("Content-Type", "text/plain")])
        return [b"moto"]

    lean = DynamoDBApp(fallback)
    client = Client(lean)
    credential = "AKIAIOSFODNN7EXAMPLE/20260101/eu-west-1/dynamodb/aws4_request"
    signed = {"Authorization": f"AWS4-HMAC-SHA256 Credential={credential}, Signature=0"}
    json_type = "application/x-amz-json-1.0"
    # moto reads the access key of a request without one it can find in the signature from the body
    names_a_key = b'{"AWSAccessKeyId": "AKIAIOSFODNN7EXAMPLE"}'
    not_handled = [
        ({"X-Amz-Target": "DynamoDB_20120810.NoSuchOperation", **signed}, b"{}"),
        ({"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Encoding": "gzip", **signed}, b"{}"),
        ({"X-Amz-Target": "DynamoDB_20120810.ListTables", "Origin": "http://example.com", **signed}, b"{}"),
        ({"X-Amz-Target": "DynamoDB_20120810.ListTables"}, names_a_key),
        ({"X-Amz-Target": "DynamoStreams_20120810.ListStreams", **signed}, b"{}"),
    ]
    for headers, body in not_handled:
        assert client.post("/", data=body, headers=headers, content_type=json_type).status_code == 418
    assert (
        client.get("/", headers={"X-Amz-Target": "DynamoDB_20120810.ListTables", **signed}).status_code == 418
    )
    assert len(reached_fallback) == len(not_handled) + 1
    fresh_backends()
    listed = client.post(
        "/",
        data=b"{}",
        headers={"X-Amz-Target": "DynamoDB_20120810.ListTables", **signed},
        content_type=json_type,
    )
    assert (listed.status_code, json.loads(listed.data)) == (200, {"TableNames": []})
    unsigned = client.post(
        "/", data=b"{}", headers={"X-Amz-Target": "DynamoDB_20120810.ListTables"}, content_type=json_type
    )
    assert unsigned.status_code == 200  # no key anywhere: moto's "AKIAEXAMPLE", answered here as by moto
    assert (lean.handled, lean.passed_on) == (2, len(not_handled) + 1)
