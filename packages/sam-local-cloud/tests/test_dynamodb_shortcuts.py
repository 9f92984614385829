"""moto's DynamoDB with the local cloud's shortcuts (condition parses kept by shape, update walks by
class and structure checks once, a table's key names once per put, attribute values written as they are)
answers exactly as moto's own code does.

Differential: one sequence of conditional writes and updates of every kind runs against moto's app in a
process where nothing but the refusals of malformed expressions (which change moto's answers on purpose,
``dynamodb_expression_errors``) was hooked into moto, then against DynamoDBApp here (hooks installed);
every answer the client sees must match. The sequence repeats each condition shape with other values, so
most of its parses come from a kept tree.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from test_dynamodb_service import _metadata_free, fresh_backends, moto_app, serving, without_volatile

from sam_local_cloud.dynamodb_service import DynamoDBApp
from sam_local_cloud.moto_seam.installers import install_dynamodb_expression_errors, install_request_caches

TABLE = "things"


def answer_of(call: Callable[[], Any]) -> dict[str, Any]:
    """What the client got: the response, or the error's code and message."""
    try:
        return {key: value for key, value in call().items() if key != "ResponseMetadata"}
    except ClientError as error:
        return {"Error": error.response["Error"]}


class Calls:
    """Requests to the table, each answer kept in ``seen``."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.seen: list[dict[str, Any]] = []

    def call(self, operation: str, **request: Any) -> None:
        self.seen.append(answer_of(lambda: getattr(self.client, operation)(TableName=TABLE, **request)))

    def put(
        self, item: dict[str, Any], condition: str, names: dict[str, str] | None, values: dict[str, Any]
    ) -> None:
        request: dict[str, Any] = {"Item": item, "ConditionExpression": condition}
        if names:
            request["ExpressionAttributeNames"] = names
        if values:
            request["ExpressionAttributeValues"] = values
        self.call("put_item", **request, ReturnValuesOnConditionCheckFailure="ALL_OLD")

    def update(self, key: str, expression: str, values: dict[str, Any] | None = None, **more: Any) -> None:
        request: dict[str, Any] = {"Key": {"k": {"S": key}}, "UpdateExpression": expression, **more}
        if values:
            request["ExpressionAttributeValues"] = values
        self.call("update_item", **request, ReturnValues="ALL_NEW")


def expression_calls(client: Any) -> list[dict[str, Any]]:
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    calls = Calls(client)
    condition_calls(calls)
    update_calls(calls)
    calls.call("get_item", Key={"k": {"S": "a"}}, ConsistentRead=True)
    every_type = {
        "k": {"S": "types"},
        "n": {"N": "-1.50"},
        "b": {"B": b"\x00\x01binary"},
        "bs": {"BS": [b"one", b"two"]},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "yes": {"BOOL": True},
        "no": {"BOOL": False},
        "nothing": {"NULL": True},
        "empty": {"S": ""},
        "deep": {"M": {"l": {"L": [{"N": "1"}, {"M": {"b": {"B": b"x"}, "s": {"S": "y"}}}, {"L": []}]}}},
    }
    calls.call("put_item", Item=every_type)
    calls.call("get_item", Key={"k": {"S": "types"}}, ConsistentRead=True)
    calls.call("get_item", Key={"k": {"S": "types"}}, ProjectionExpression="deep.l[1], ns")
    calls.call("scan")
    calls.call("query", KeyConditionExpression="k = :k", ExpressionAttributeValues={":k": {"S": "types"}})
    return calls.seen


BASE = {"k": {"S": "a"}, "n": {"N": "5"}, "s": {"S": "red"}, "tags": {"SS": ["x", "y"]}}


def condition_calls(calls: Calls) -> None:
    put, base = calls.put, BASE
    calls.call("put_item", Item=base)
    # Empty sets are refused wherever they sit in an item.
    for empty in ({"SS": []}, {"M": {"inner": {"NS": []}}}, {"L": [{"SS": []}]}):
        calls.call("put_item", Item={"k": {"S": "e"}, "v": empty})
    # The idempotency record's condition, with the clock's values changing each call.
    idempotent = (
        "attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress"
        " AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
    )
    names = {"#id": "k", "#expiry": "n", "#status": "s", "#in_progress_expiry": "m"}
    for now in ("1", "4", "6", "10"):
        put(
            base,
            idempotent,
            names,
            {":now": {"N": now}, ":now_in_millis": {"N": now + "000"}, ":inprogress": {"S": "red"}},
        )
    # One shape, values of other content: true, false, true again.
    for colour in ("red", "blue", "red"):
        put(
            base,
            "s = :colour AND n BETWEEN :low AND :high",
            None,
            {":colour": {"S": colour}, ":low": {"N": "1"}, ":high": {"N": "9"}},
        )
    # The same text, a value of another type: moto refuses a NULL bound, every time.
    for _attempt in range(2):
        put(base, "n BETWEEN :low AND :high", None, {":low": {"NULL": True}, ":high": {"N": "9"}})
    # Functions, IN, NOT, nesting; a list of values; a value used twice.
    for size in ("1", "3"):
        put(
            base,
            "size(tags) > :size AND begins_with(s, :prefix) AND NOT contains(tags, :absent)"
            " AND s IN (:prefix, :other, :again) AND (n <> :size OR n = :size)",
            None,
            {
                ":size": {"N": size},
                ":prefix": {"S": "re"},
                ":absent": {"S": "z"},
                ":other": {"S": "red"},
                ":again": {"S": "blue"},
            },
        )
    put(base, "attribute_type(s, :type)", None, {":type": {"S": "S"}})
    put(base, "attribute_type(s, :type)", None, {":type": {"S": "N"}})
    # Errors: an undefined value, an unused one, a malformed text (twice each: never kept).
    for _attempt in range(2):
        put(base, "s = :missing", None, {":other": {"S": "red"}})
        put(base, "s = :v", None, {":v": {"S": "red"}, ":unused": {"S": "x"}})
        put(base, "s = = :v", None, {":v": {"S": "red"}})


def update_calls(calls: Calls) -> None:
    update = calls.update
    # Updates of each kind, each twice with other values.
    for step in ("1", "2"):
        update("a", "SET n = n + :step, s = :s", {":step": {"N": step}, ":s": {"S": "v" + step}})
        update("a", "ADD hits :step, tags :more", {":step": {"N": step}, ":more": {"SS": ["t" + step]}})
        update("a", "DELETE tags :gone", {":gone": {"SS": ["x"]}})
        update(
            "a",
            "SET #l = list_append(if_not_exists(#l, :empty), :items), nested = :map",
            {":empty": {"L": []}, ":items": {"L": [{"S": step}]}, ":map": {"M": {"depth": {"N": step}}}},
            ExpressionAttributeNames={"#l": "log"},
        )
        update(
            "a",
            "SET nested.#d = nested.#d + :step, #l[0] = :first",
            {":step": {"N": step}, ":first": {"S": "f" + step}},
            ExpressionAttributeNames={"#l": "log", "#d": "depth"},
        )
        update(
            "a",
            "REMOVE #l[0], #m SET s = :s",
            {":s": {"S": "r" + step}},
            ExpressionAttributeNames={"#l": "log"},
        )
    # One text whose names make it update a key attribute, or two paths overlap, only some of the time:
    # its structure passing once does not let it pass with other names.
    for attribute in ("s", "k", "s"):
        update("a", "SET #a = :v", {":v": {"S": "w"}}, ExpressionAttributeNames={"#a": attribute})
    for first, second in (("s", "n"), ("n", "n"), ("s", "n")):
        update(
            "a",
            "SET #a = :v, #b = :w",
            {":v": {"S": "x"}, ":w": {"N": "3"}},
            ExpressionAttributeNames={"#a": first, "#b": second},
        )
    # Update errors: a key attribute, a type mismatch, a path overlap, a malformed expression.
    update("a", "SET k = :v", {":v": {"S": "b"}})
    update("a", "SET n = n + :v", {":v": {"S": "text"}})
    update("a", "SET n = :v, n = :w", {":v": {"N": "1"}, ":w": {"N": "2"}})
    update("a", "SET = :v", {":v": {"N": "1"}})
    update("a", "SET n = :v REMOVE n", {":v": {"N": "1"}})


def expression_answers(app: Any) -> list[dict[str, Any]]:
    fresh_backends()
    with serving(app) as (client, _):
        return expression_calls(client)


def moto_s_expression_answers() -> list[dict[str, Any]]:
    """The reference, from a process where only the refusals of malformed expressions are hooked into moto."""
    install_dynamodb_expression_errors()
    return expression_answers(moto_app())


def test_kept_parses_and_class_walks_answer_as_moto_does() -> None:
    with multiprocessing.get_context("spawn").Pool(1) as reference:
        by_moto = reference.apply_async(moto_s_expression_answers).get(timeout=120)
    install_dynamodb_expression_errors()
    install_request_caches()
    by_lean = expression_answers(DynamoDBApp(moto_app()))

    assert len(by_lean) == len(by_moto) > 30
    for number, (lean, moto) in enumerate(zip(by_lean, by_moto, strict=True)):
        assert without_volatile(_metadata_free([lean])) == without_volatile(_metadata_free([moto])), number
    # The sequence meant what it says: conditions both held and failed, and updates were refused.
    codes = [answer["Error"]["Code"] for answer in by_lean if "Error" in answer]
    assert "ConditionalCheckFailedException" in codes
    assert "ValidationException" in codes
    assert sum(1 for answer in by_lean if "Error" not in answer) >= 20


def test_a_kept_tree_is_never_handed_out() -> None:
    from sam_local_cloud.moto_seam.services import ConditionExpressionParser

    install_request_caches()

    def parsed(value: str) -> Any:
        return ConditionExpressionParser("s = :v", None, {":v": {"S": value}}).parse()

    first, second = parsed("red"), parsed("blue")
    assert first is not second
    assert first.rhs.value == "red"
    assert second.rhs.value == "blue"
    first.rhs.value = "changed by a caller"
    assert parsed("green").rhs.value == "green"


@pytest.mark.parametrize("values", [{":v": {"S": "x"}}, {":v": {"N": "1"}}])
def test_a_parse_that_raises_raises_every_time(values: dict[str, Any]) -> None:
    from sam_local_cloud.moto_seam.services import ConditionExpressionParser

    install_dynamodb_expression_errors()
    install_request_caches()
    for _attempt in range(3):
        with pytest.raises(Exception, match="attribute value: :absent") as raised:
            ConditionExpressionParser("s = :absent", None, values).parse()
        assert type(raised.value).__name__ == "InvalidConditionExpression"
