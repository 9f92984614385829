"""What keeps the local cloud's cost per order small and flat, each checked by what a user would see.

Emulators the Docker API starts never share a port, forked runtimes live and die with their environment,
the number of live environments is bounded, Lambda Tasks called in-process get boto3's own answers, cancelled
transactions put back exactly what they touched, finished histories survive being spilled to disk, Map
workers run any number of items, and a batch too large to send inline goes through S3.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from served_lambda import FIXTURE_FUNCTIONS

from orderbatch.app_batches import audit_local_batch, local_cloud_config
from orderbatch.bench.history import read_history
from orderbatch.cli import main
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import LocalCloud, wait_for_execution
from sam_local_cloud.dynamodb import CATALOGUE, tables_named
from sam_local_cloud.lambda_service import FunctionSpec, backends
from sam_local_cloud.lambda_service.emulator import PortAllocator, listens_on
from sam_local_cloud.moto_seam.installers import install_dynamodb, install_model_registry
from sam_local_cloud.moto_seam.stepfunctions import stepfunctions_parser_backends
from sam_local_cloud.moto_seam.testing import mock_aws
from sam_local_cloud.stepfunctions import HistoryStore, histories

pytestmark = pytest.mark.e2e

Serve = Callable[..., Any]
Probe = Callable[..., Any]
TEMPLATE = PROJECT_ROOT / "template.yaml"


# -- emulator ports (the Docker API's) ---------------------------------------------------------------


class ScriptedPorts(PortAllocator):
    """The kernel's answers to a port probe, scripted: the same free port offered twice in a row."""

    def __init__(self, offers: list[int]) -> None:
        super().__init__()
        self.offers = offers

    def _probe(self) -> int:
        return self.offers.pop(0)


def test_a_port_offered_again_is_not_given_to_a_second_live_environment() -> None:
    ports = ScriptedPorts([41000, 41000, 41001, 41000])

    first, second = ports.take(), ports.take()
    ports.give_back(first)
    third = ports.take()

    assert (first, second, third) == (41000, 41001, 41000)


def test_a_connection_counts_only_when_the_emulator_itself_listens_on_the_port() -> None:
    with socket.socket() as ours:
        ours.bind(("127.0.0.1", 0))
        ours.listen()
        port = ours.getsockname()[1]
        other_process = subprocess.Popen(["sleep", "30"])
        try:
            assert listens_on(os.getpid(), port)
            assert not listens_on(other_process.pid, port)
        finally:
            other_process.kill()
            other_process.wait()


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_a_dual_stack_listener_counts_as_listening() -> None:
    """Go serves 0.0.0.0 (SAM CLI's durable function containers) from one IPv6 socket, listed in tcp6."""
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as ours:
        ours.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        ours.bind(("::", 0))
        ours.listen()
        port = ours.getsockname()[1]

        assert listens_on(os.getpid(), port)


def test_concurrent_cold_starts_each_answer_their_own_invocation(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    # A long timeout: 24 cold starts at once on two loaded cores may take longer than the default 3 s,
    # and a timed-out answer would say nothing about whose invocation each environment answered.
    served = serve_lambda([probe_function("Probe", timeout_seconds=60)], account_concurrency=24)

    def invoke(number: int) -> dict[str, Any]:
        result = served.service.invoke("Probe", json.dumps({"number": number, "sleep": 0.2}).encode())
        answer: dict[str, Any] = json.loads(result.payload)
        return answer

    with ThreadPoolExecutor(max_workers=24) as pool:
        answers = list(pool.map(invoke, range(24)))

    assert [answer for answer in answers if "event" not in answer] == []
    assert [answer["event"]["number"] for answer in answers] == list(range(24))
    assert len({answer["pid"] for answer in answers}) == 24  # 24 environments, one runtime each


# -- forked runtimes and the bound on environments ----------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_forked_runtime_runs_the_handler_as_lambda_would_and_dies_with_its_environment(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Probe", environment={"GREETING": "hello"})])

    answer = json.loads(served.service.invoke("Probe", b'{"x": 1}').payload)
    forked_from = int(Path(f"/proc/{answer['pid']}/stat").read_text().split()[3])
    fork_server_pid = served.service.backend.fork_server_for(served.service.resolve("Probe")).pid()
    served.service.close()

    assert answer["module"] == "probe"
    assert answer["environment"]["GREETING"] == "hello"
    assert answer["environment"]["AWS_LAMBDA_FUNCTION_NAME"] == "Probe"
    assert forked_from == fork_server_pid
    deadline = time.monotonic() + 5
    while _alive(answer["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(answer["pid"])


@pytest.mark.parametrize("fork_runtimes", [True, False])
def test_forked_runtimes_read_the_sdk_data_their_server_parsed_and_fresh_ones_parse_their_own(
    serve_lambda: Serve, fork_runtimes: bool
) -> None:
    sdk_probe = FunctionSpec("Sdk", "sdk_probe.handler", FIXTURE_FUNCTIONS)
    served = serve_lambda([sdk_probe], fork_runtimes=fork_runtimes)

    answer = json.loads(served.service.invoke("Sdk", b"{}").payload)

    # Two Sessions' clients (the handler's and Powertools') share one parsed model only when forked
    assert answer["same_parsed_model"] is fork_runtimes
    assert answer["operations"] > 50  # DynamoDB's whole API, whichever way it was loaded
    assert answer["endpoint"] == served.endpoint


def test_past_the_bound_a_cold_start_stops_the_least_recently_used_rested_environment(
    serve_lambda: Serve, probe_function: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "EVICTION_MIN_IDLE_SECONDS", 0.0)
    functions = [probe_function(name) for name in ("A", "B", "C")]
    served = serve_lambda(functions, account_concurrency=2, max_environments=2)

    for name in ("A", "B", "C", "B"):
        served.service.invoke(name, b"{}")
    counts = served.service.backend.environments()
    functions_stats = served.service.stats(include_timeseries=False)["functions"]

    assert sum(count["idle"] + count["busy"] for count in counts.values()) == 2
    assert counts["A"]["evicted"] == 1
    cold_starts = {name: functions_stats[name]["cold_starts"] for name in ("A", "B", "C")}
    assert cold_starts == {"A": 1, "B": 1, "C": 1}


def test_an_environment_used_moments_ago_is_not_stopped_and_the_bound_returns_once_it_rests(
    serve_lambda: Serve, probe_function: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "EVICTION_MIN_IDLE_SECONDS", 1.0)
    functions = [probe_function(name) for name in ("A", "B", "C")]
    served = serve_lambda(functions, account_concurrency=2, max_environments=2)

    for name in ("A", "B", "C"):
        served.service.invoke(name, b"{}")
    right_after = served.service.backend.environments()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rested = served.service.backend.environments()
        if sum(count["idle"] + count["busy"] for count in rested.values()) == 2:
            break
        time.sleep(0.2)

    assert sum(count["idle"] + count["busy"] for count in right_after.values()) == 3
    assert sum(count["evicted"] for count in right_after.values()) == 0
    assert sum(count["idle"] + count["busy"] for count in rested.values()) == 2
    assert rested["A"]["evicted"] == 1  # the least recently used


def test_a_batch_moving_between_steps_slower_than_a_second_reuses_its_environments(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    # Given four steps of 0.4 s each, two orders at a time, and a bound of one environment per slot:
    # between two uses an environment rests for three other steps (1.2 s)
    steps = ("Validate", "Reserve", "Charge", "Confirm")
    served = serve_lambda(
        [probe_function(name) for name in steps],
        account_concurrency=2,
        max_environments=2,
        latency=dict.fromkeys(steps, 0.4),
    )

    def order(_: int) -> None:
        for _round in range(3):
            for name in steps:
                served.service.invoke(name, b"{}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(order, range(2)))
    stats = served.service.stats(include_timeseries=False)["functions"]

    # Then the bound gives way while the batch runs: no environment is stopped and started again
    # (measured before: a 100-order batch at quota 10 cold-started on every one of its 400 invocations).
    # Two orders need at most two environments of a step; one when the orders drift apart enough that the
    # second arrives after the first has left the step (a loaded machine), never more than two.
    cold_starts = {name: stats[name]["cold_starts"] for name in steps}
    assert all(1 <= count <= 2 for count in cold_starts.values()), cold_starts
    environments = served.service.backend.environments()
    stopped = ("evicted", "reaped", "discarded")
    assert sum(count[kind] for count in environments.values() for kind in stopped) == 0


# -- Lambda Tasks in-process --------------------------------------------------------------------------


def _error_fields(error: ClientError) -> dict[str, Any]:
    response = error.response
    return {
        "Error": response["Error"],
        "status": response["ResponseMetadata"]["HTTPStatusCode"],
        "Type": response.get("Type"),
        "Reason": response.get("Reason"),
    }


def test_the_in_process_client_answers_as_boto3_does_over_http(
    serve_lambda: Serve, probe_function: Probe
) -> None:
    served = serve_lambda([probe_function("Probe"), probe_function("Reserved", reserved_concurrency=0)])
    in_process, over_http = served.service.in_process_client(), served.client()

    answers = [
        client.invoke(FunctionName="Probe", Payload=b'{"raise": "boom"}')
        for client in (in_process, over_http)
    ]
    errors = []
    for function in ("Reserved", "Missing"):
        for client in (in_process, over_http):
            with pytest.raises(ClientError) as raised:
                client.invoke(FunctionName=function, Payload=b"{}")
            errors.append(_error_fields(raised.value))

    payloads = [json.loads(answer["Payload"].read()) for answer in answers]
    assert [answer["FunctionError"] for answer in answers] == ["Unhandled", "Unhandled"]
    assert [payload["errorType"] for payload in payloads] == ["LookupError", "LookupError"]
    assert errors[0] == errors[1]
    assert errors[0]["Error"]["Code"] == "TooManyRequestsException"
    assert errors[0]["Reason"] == "ReservedFunctionConcurrentInvocationLimitExceeded"
    assert errors[0]["status"] == 429
    assert errors[2] == errors[3]
    assert errors[2]["Error"]["Code"] == "ResourceNotFoundException"


# -- DynamoDB ------------------------------------------------------------------------------------------


def test_each_call_locks_exactly_the_tables_it_names() -> None:
    transaction = {
        "TransactItems": [
            {"Update": {"TableName": "Inventory", "Key": {}}},
            {"Put": {"TableName": "Reservations", "Item": {}}},
            {"ConditionCheck": {"TableName": "Inventory", "Key": {}}},
        ]
    }

    assert tables_named("TransactWriteItems", json.dumps(transaction).encode()) == [
        "Inventory",
        "Reservations",
    ]
    assert tables_named("BatchWriteItem", b'{"RequestItems": {"B": [], "A": []}}') == ["A", "B"]
    assert tables_named("PutItem", b'{"TableName": "Orders"}') == ["Orders"]
    assert tables_named("ListTables", b"{}") == [CATALOGUE]
    assert tables_named("CreateTable", b'{"TableName": "New"}') == [CATALOGUE, "New"]


@mock_aws
def test_a_cancelled_transaction_puts_back_exactly_what_it_touched() -> None:
    install_dynamodb()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="Stock",
        KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "sku", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for sku in ("A", "B"):
        dynamodb.put_item(TableName="Stock", Item={"sku": {"S": sku}, "stock": {"N": "1"}})
    take_both = {
        "TransactItems": [
            {
                "Update": {
                    "TableName": "Stock",
                    "Key": {"sku": {"S": sku}},
                    "UpdateExpression": "SET stock = stock - :one",
                    "ConditionExpression": "stock >= :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
            for sku in ("A", "B")
        ]
        + [{"Put": {"TableName": "Stock", "Item": {"sku": {"S": "receipt"}, "stock": {"N": "0"}}}}]
    }

    dynamodb.transact_write_items(**take_both)
    take_both["TransactItems"][2]["Put"]["Item"]["sku"]["S"] = "second-receipt"
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(**take_both)
    items = {item["sku"]["S"]: item["stock"]["N"] for item in dynamodb.scan(TableName="Stock")["Items"]}

    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert items == {"A": "0", "B": "0", "receipt": "0"}


# -- the local cloud as a whole --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    config = local_cloud_config(
        TEMPLATE,
        account_concurrency=10,
        # A small inline cap for the API function, so a batch past it is quick to make.
        function_environment={"MAX_INLINE_ORDERS": "20"},
        history_events_in_memory=40,
    )
    with LocalCloud(config) as running:
        yield running


def test_concurrent_conditional_writes_to_one_item_let_exactly_one_through(cloud: LocalCloud) -> None:
    dynamodb = cloud.client("dynamodb", max_pool_connections=20)
    table = cloud.stack.table_name("OrdersTable")

    def claim(number: int) -> str:
        try:
            dynamodb.put_item(
                TableName=table,
                Item={"order_id": {"S": "contended"}, "claimed_by": {"N": str(number)}},
                ConditionExpression="attribute_not_exists(order_id)",
            )
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "claimed"

    with ThreadPoolExecutor(max_workers=20) as pool:
        claims = list(pool.map(claim, range(20)))

    assert sorted(set(claims)) == ["ConditionalCheckFailedException", "claimed"]
    assert claims.count("claimed") == 1


MANY_PASSES = {
    "StartAt": "Each",
    "States": {
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "MaxConcurrency": 1,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Pass it on",
                "States": {"Pass it on": {"Type": "Pass", "End": True}},
            },
            "End": True,
        }
    },
}


def test_one_map_worker_runs_more_items_than_the_recursion_limit_and_old_histories_come_back(
    cloud: LocalCloud,
) -> None:
    sfn = cloud.client("stepfunctions")
    machine = sfn.create_state_machine(
        name="many-passes", definition=json.dumps(MANY_PASSES), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    items = list(range(1200))

    first = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"items": items}))["executionArn"]
    status = wait_for_execution(sfn, first, timeout=60)
    finished = sfn.describe_execution(executionArn=first)
    events_then = read_history(sfn, first)
    second = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"items": [1]}))["executionArn"]
    wait_for_execution(sfn, second, timeout=60)
    counts = cloud.history_store.counts()
    events_now = read_history(sfn, first)

    assert status == "SUCCEEDED"
    assert json.loads(finished["output"]) == items
    assert counts["histories_on_disk"] >= 1  # the first history no longer fits the budget of 40 events
    assert [event["type"] for event in events_now] == [event["type"] for event in events_then]
    assert sum(event["type"] == "MapIterationSucceeded" for event in events_now) >= 999


def test_a_batch_past_the_inline_cap_is_uploaded_and_runs_through_the_distributed_map(
    cloud: LocalCloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in cloud.environment().items():  # what `eval "$(orderbatch local env)"` sets
        monkeypatch.setenv(name, value)
    code = main(
        [
            *("submit", "--generate", "30", "--batch-id", "past-the-cap", "--endpoint", cloud.endpoint),
            *("--wait", "--timeout", "240", "--json"),
        ]
    )
    printed = capsys.readouterr().out
    document = json.loads(printed[printed.index("{") :])
    report = audit_local_batch(cloud, "past-the-cap")

    assert code == 0
    assert "uploaded 30 orders to s3://" in printed
    assert document["status"] == "SUCCEEDED"
    assert document["succeeded"] == 30
    assert document["response"]["summary"]["orders_location"].startswith("s3://")
    assert report.orders_in_input == 30
    assert report.lost == []
    assert report.doubled == []


def test_the_history_store_spills_the_oldest_histories_and_reads_them_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "histories", max_events_in_memory=5)
    histories = {
        f"arn:{n}": [{"id": i, "type": "PassStateEntered", "n": n} for i in range(3)] for n in range(3)
    }

    for arn, events in histories.items():
        store.keep(arn, events)

    assert store.counts() == {"histories_in_memory": 1, "events_in_memory": 3, "histories_on_disk": 2}
    assert all(store.events(arn) == events for arn, events in histories.items())
    assert store.events("arn:unknown") is None


@mock_aws
def test_rewriting_an_item_leaves_no_old_versions_alive_and_s3_keys_stay_tracked() -> None:
    import gc

    from sam_local_cloud.moto_seam.testing import FakeKey, Item

    # Given moto's models without the registry of every instance (as the local cloud runs them)
    install_model_registry()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="Records",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

    # When one item is put and then updated 200 times (each write makes a new Item in moto)
    dynamodb.put_item(TableName="Records", Item={"id": {"S": "order-1"}, "n": {"N": "0"}})
    for _ in range(200):
        dynamodb.update_item(
            TableName="Records",
            Key={"id": {"S": "order-1"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    gc.collect()

    # Then only the current version is alive: no class-level list keeps the 200 old ones
    assert Item.instances_tracked == []
    assert sum(isinstance(o, Item) for o in gc.get_objects()) <= 3
    item = dynamodb.get_item(TableName="Records", Key={"id": {"S": "order-1"}})["Item"]
    assert item["n"] == {"N": "200"}
    # S3 keys are still tracked: moto's reset releases their buffers through that list
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="tracked")
    s3.put_object(Bucket="tracked", Key="k", Body=b"x")
    assert any(key.name == "k" for key in FakeKey.instances_tracked)


@mock_aws
def test_stored_dynamodb_values_have_no_dict_and_behave_as_before() -> None:
    from sam_local_cloud.moto_seam.testing import dynamo_type, dynamodb_models

    # Given the compact values (as the local cloud runs moto)
    install_model_registry()
    assert dynamodb_models.DynamoType is dynamo_type.DynamoType
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="Compact",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

    # When items with every kind of value are written, updated, queried and conditionally refused
    nested = {"M": {"lines": {"L": [{"M": {"sku": {"S": "SKU-1"}, "n": {"N": "2"}}}]}, "ok": {"BOOL": True}}}
    dynamodb.put_item(TableName="Compact", Item={"id": {"S": "a"}, "doc": nested, "tags": {"SS": ["x", "y"]}})
    dynamodb.update_item(
        TableName="Compact",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET #d.#l[0].#n = #d.#l[0].#n + :one, #s = :s",
        ExpressionAttributeNames={"#d": "doc", "#l": "lines", "#n": "n", "#s": "status"},
        ExpressionAttributeValues={":one": {"N": "1"}, ":s": {"S": "DONE"}},
    )
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(
            TableName="Compact", Item={"id": {"S": "a"}}, ConditionExpression="attribute_not_exists(id)"
        )
    found = dynamodb.scan(
        TableName="Compact", FilterExpression="doc.ok = :t", ExpressionAttributeValues={":t": {"BOOL": True}}
    )

    # Then the answers are DynamoDB's, and the stored values carry two slots and no __dict__
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert found["Items"] == [
        {
            "id": {"S": "a"},
            "doc": {
                "M": {"lines": {"L": [{"M": {"sku": {"S": "SKU-1"}, "n": {"N": "3"}}}]}, "ok": {"BOOL": True}}
            },
            "tags": {"SS": ["x", "y"]},
            "status": {"S": "DONE"},
        }
    ]
    backend = dynamodb_models.dynamodb_backends["123456789012"]["us-east-1"]
    (item,) = backend.tables["Compact"].all_items()
    assert all(not hasattr(value, "__dict__") for value in item.attrs.values())
    assert dynamo_type.DynamoType.__slots__ == ("type", "value")


def test_a_finished_execution_keeps_its_input_and_output_compressed_and_describes_them_as_before(
    cloud: LocalCloud,
) -> None:
    sfn = cloud.client("stepfunctions")
    machine = sfn.create_state_machine(
        name="echo-orders",
        definition=json.dumps({"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/x",
    )["stateMachineArn"]
    orders = [{"order_id": f"o-{n}", "items": [{"sku": "SKU-001", "quantity": n}]} for n in range(300)]
    given = json.dumps({"orders": orders})  # with the spaces json.dumps puts in, as a caller may send

    arn = sfn.start_execution(stateMachineArn=machine, input=given)["executionArn"]
    assert wait_for_execution(sfn, arn, timeout=60) == "SUCCEEDED"
    described = sfn.describe_execution(executionArn=arn)
    execution = cloud_execution(arn)

    assert described["input"] == given
    assert described["output"] == json.dumps({"orders": orders}, separators=(",", ":"))
    # Nothing parsed is left on the finished execution; its compressed texts are a fraction of the JSON.
    assert (execution.input_data, execution.output, execution.execution_input) == (None, None, None)
    record = histories._details.get(execution)
    assert record is not None
    assert record.input_text is not None
    assert record.output_text is not None
    assert len(record.input_text) + len(record.output_text) < len(given) / 5


def cloud_execution(arn: str) -> Any:
    """The moto execution behind the ARN (the local cloud serves moto in this process)."""
    _, _, _, region, account, *_ = arn.split(":")
    return stepfunctions_parser_backends[account][region].describe_execution(arn)


@mock_aws
def test_an_item_is_held_to_dynamodbs_400_kb_whether_written_whole_or_grown_by_an_update() -> None:
    # Given moto's DynamoDB as the local cloud runs it (a new item sized once, when complete)
    install_dynamodb()
    install_model_registry()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="Sized",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    limit = 400 * 1024

    def item(key: str, size: int) -> dict[str, Any]:
        # DynamoDB counts names and values in UTF-8 bytes: "id" and the key, "a" and its value, "b" and
        # 1,000 two-byte characters.
        rest = size - len("id") - len(key) - len("a") - len("b") - 2_000
        return {"id": {"S": key}, "a": {"S": "x" * rest}, "b": {"S": "é" * 1_000}}

    def refusal(call: Callable[[], object]) -> str | None:
        try:
            call()
        except ClientError as error:
            return str(error.response["Error"]["Message"])
        return None

    # When items of exactly the limit and one byte over are written, and a stored one grows past it
    at_limit = refusal(lambda: dynamodb.put_item(TableName="Sized", Item=item("k1", limit)))
    over = refusal(lambda: dynamodb.put_item(TableName="Sized", Item=item("k2", limit + 1)))
    dynamodb.put_item(TableName="Sized", Item=item("k3", limit - 100))
    grown = refusal(
        lambda: dynamodb.update_item(
            TableName="Sized",
            Key={"id": {"S": "k3"}},
            UpdateExpression="SET c = :c",
            ExpressionAttributeValues={":c": {"S": "y" * 200}},
        )
    )

    # Then the first is stored and the others are refused as DynamoDB refuses them, the stored one unchanged
    assert at_limit is None
    assert over == "Item size has exceeded the maximum allowed size"
    assert grown == "Item size to update has exceeded the maximum allowed size"
    stored = dynamodb.get_item(TableName="Sized", Key={"id": {"S": "k3"}})["Item"]
    assert "c" not in stored
    assert "Item" not in dynamodb.get_item(TableName="Sized", Key={"id": {"S": "k2"}})


def test_a_stopped_cloud_leaves_no_client_of_its_tasks_behind(tmp_path: Path) -> None:
    import gc

    import botocore.client

    from orderbatch.bench.startup import _run_batch

    def clients_of(port: int) -> list[str]:
        return [
            client.meta.service_model.service_name
            for client in gc.get_objects()
            if isinstance(client, botocore.client.BaseClient) and f":{port}" in client.meta.endpoint_url
        ]

    # Given a cloud whose batch ran Lambda and DynamoDB Tasks (the Tasks' clients made on first use)
    config = local_cloud_config(TEMPLATE, account_concurrency=10, state_dir=tmp_path / "state")
    with LocalCloud(config) as stopped:
        _run_batch(stopped, TEMPLATE, 3, "clients-batch")
        port = stopped.port
        assert "lambda" in clients_of(port)

    # When it has stopped, Then none of its Tasks' clients is kept by the process (a test session starts
    # many clouds: each one's clients used to stay, a Lambda client a cloud)
    del stopped
    gc.collect()
    assert clients_of(port) == []
