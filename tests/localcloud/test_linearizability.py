"""The local cloud's DynamoDB is linearizable: conditional writes and transactions are atomic under races.

Fast tests hold the checker and the model to histories built by hand; the slow ones record a thousand
random histories against a real local cloud (0 anomalies), and show that the same check catches the race
when the table lock is taken away.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import boto3
import pytest
from werkzeug.serving import WSGIRequestHandler, make_server

from orderbatch.faults.dynamodb_wire import DynamoDBWireClient
from orderbatch.faults.linearizability import (
    CONDITION_FAILED,
    FAIL,
    INFO,
    OK,
    REASON_CONDITION,
    REASON_NONE,
    TRANSACTION_CANCELED,
    Operation,
    Outcome,
    Request,
    apply,
    check,
    freeze,
    partitions,
)
from orderbatch.faults.linearizability_workload import (
    TABLE_LOGICAL_ID,
    TEMPLATE,
    RunSummary,
    Target,
    Workload,
    send,
)
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig
from sam_local_cloud.data_plane import DataPlaneApp
from sam_local_cloud.dynamodb import TableLocks
from sam_local_cloud.dynamodb_service import DynamoDBApp
from sam_local_cloud.moto_seam.installers import install_dynamodb, install_request_caches


def item(**attributes: Any) -> Any:
    return freeze(attributes)


def op(client: str, invoked: int, returned: int, request: Request, outcome: Outcome) -> Operation:
    return Operation(client, invoked, returned, request, outcome)


CREATED = op("a", 0, 10, Request("put_new", "k", owner="a"), Outcome(OK))
V1 = item(pk="k", version=1, counter=0, owner="a")


# ---------------------------------------------------------------------------------------------- model
def test_the_model_answers_each_request_as_dynamodb_does() -> None:
    absent: dict[str, dict[str, Any]] = {}
    state, answer = apply(absent, Request("put_new", "k", owner="a"))
    assert answer == Outcome(OK)
    assert state == {"k": dict(V1)}

    _, answer = apply(state, Request("put_new", "k", owner="b"))
    assert answer == Outcome(FAIL, CONDITION_FAILED, item=V1)

    added, answer = apply(state, Request("add_if_version", "k", version=1, amount=5))
    assert answer == Outcome(OK, item=item(pk="k", version=2, counter=5, owner="a"))  # ALL_NEW
    _, answer = apply(added, Request("add_if_version", "k", version=1, amount=5))
    assert answer == Outcome(FAIL, CONDITION_FAILED, item=item(pk="k", version=2, counter=5, owner="a"))

    created_by_add, answer = apply(absent, Request("add", "n", amount=3))
    assert answer == Outcome(OK, item=item(pk="n", counter=3))
    assert created_by_add == {"n": {"pk": "n", "counter": 3}}

    replaced, answer = apply(state, Request("put_if_version", "k", version=1, amount=7, owner="b"))
    assert answer == Outcome(OK, item=V1)  # ALL_OLD
    assert replaced["k"] == {"pk": "k", "version": 2, "counter": 7, "owner": "b"}

    _, answer = apply(state, Request("delete_if_version", "k", version=3))
    assert answer == Outcome(FAIL, CONDITION_FAILED, item=V1)
    deleted, answer = apply(state, Request("delete", "k"))
    assert answer == Outcome(OK, item=V1)
    assert deleted == {}
    _, answer = apply(deleted, Request("delete_if_version", "k", version=1))
    assert answer == Outcome(FAIL, CONDITION_FAILED, item=None)  # no Item when there is none

    assert (
        apply(state, Request("get", "k"))[1] == apply(state, Request("query", "k"))[1] == Outcome(OK, item=V1)
    )
    assert apply(absent, Request("query", "k"))[1] == Outcome(OK, item=None)


def test_a_transaction_is_all_or_nothing_with_a_reason_per_item() -> None:
    state = {"k": dict(V1)}
    both = Request(
        "transact",
        parts=(Request("add_if_version", "k", version=1, amount=2), Request("put_new", "m", owner="a")),
    )
    after, answer = apply(state, both)
    assert answer == Outcome(OK)
    assert after["k"]["counter"] == 2
    assert after["m"]["owner"] == "a"

    refused = Request(
        "transact", parts=(Request("add_if_exists", "k", amount=2), Request("check_version", "m", version=1))
    )
    after, answer = apply(state, refused)
    assert answer == Outcome(
        FAIL, TRANSACTION_CANCELED, reasons=((REASON_NONE, None), (REASON_CONDITION, None))
    )
    assert after == state  # the first item's passing condition wrote nothing


# ---------------------------------------------------------------------------------------------- checker
def test_a_linearizable_history_with_overlapping_writes_and_an_indeterminate_one_is_accepted() -> None:
    history = [
        CREATED,
        # b's write overlaps a's: b went first, so a's condition was refused with b's item
        op(
            "a",
            20,
            50,
            Request("add_if_version", "k", version=1, amount=2),
            Outcome(FAIL, CONDITION_FAILED, item=item(pk="k", version=2, counter=3, owner="a")),
        ),
        op(
            "b",
            25,
            40,
            Request("add_if_version", "k", version=1, amount=3),
            Outcome(OK, item=item(pk="k", version=2, counter=3, owner="a")),
        ),
        # c's ADD timed out: applied, as the later read shows
        op("c", 30, 35, Request("add", "k", amount=4), Outcome(INFO, "ReadTimeoutError")),
        op("d", 60, 70, Request("get", "k"), Outcome(OK, item=item(pk="k", version=2, counter=7, owner="a"))),
        # and a put of another key, checked on its own
        op("d", 80, 90, Request("put_new", "other", owner="d"), Outcome(OK)),
    ]

    verdict = check(history)

    assert verdict.linearizable
    assert verdict.partitions == 2
    assert verdict.operations == 6


def test_a_lost_update_is_an_anomaly_and_its_window_is_the_two_writes() -> None:
    history = [
        CREATED,
        op(
            "a",
            20,
            40,
            Request("add_if_version", "k", version=1, amount=2),
            Outcome(OK, item=item(pk="k", version=2, counter=2, owner="a")),
        ),
        op(
            "b",
            21,
            41,
            Request("add_if_version", "k", version=1, amount=3),
            Outcome(OK, item=item(pk="k", version=2, counter=3, owner="a")),
        ),
        op("c", 50, 60, Request("get", "k"), Outcome(OK, item=item(pk="k", version=2, counter=3, owner="a"))),
    ]

    verdict = check(history)

    assert not verdict.linearizable
    (anomaly,) = verdict.anomalies
    assert sorted(o.client for o in anomaly.window) == ["a", "b"]
    assert anomaly.before == 1  # the put that created the item is before the window
    assert anomaly.failing.response_ns == 41
    assert "add_if_version(k, v=1, +3) -> ok" in anomaly.describe()


def test_two_winners_of_one_attribute_not_exists_put_are_an_anomaly() -> None:
    history = [
        op("a", 0, 10, Request("put_new", "k", owner="a"), Outcome(OK)),
        op("b", 1, 11, Request("put_new", "k", owner="b"), Outcome(OK)),
        op("c", 2, 12, Request("put_new", "k", owner="c"), Outcome(FAIL, CONDITION_FAILED, item=V1)),
    ]

    verdict = check(history)

    (anomaly,) = verdict.anomalies
    assert {o.client for o in anomaly.window} >= {"a", "b"}
    assert check([history[0], history[2]]).linearizable  # one winner, one refused: fine


def test_a_stale_consistent_read_is_an_anomaly() -> None:
    history = [
        CREATED,
        op(
            "a",
            20,
            30,
            Request("add", "k", amount=5),
            Outcome(OK, item=item(pk="k", version=1, counter=5, owner="a")),
        ),
        # after the ADD was acknowledged, a consistent read must see it
        op("b", 40, 50, Request("query", "k"), Outcome(OK, item=V1)),
    ]

    verdict = check(history)

    (anomaly,) = verdict.anomalies
    assert anomaly.failing.client == "b"
    assert [o.client for o in anomaly.window] == ["b"]  # from any state the ADD leaves, the read is stale
    # The same read overlapping the ADD could have gone first.
    assert check([*history[:2], op("b", 25, 50, Request("query", "k"), Outcome(OK, item=V1))]).linearizable


def test_a_transaction_couples_the_keys_it_touches_into_one_partition() -> None:
    pair = Request(
        "transact", parts=(Request("check_version", "x", version=1), Request("add_if_exists", "y", amount=1))
    )
    history = [
        op("a", 0, 1, Request("get", "x"), Outcome(OK)),
        op("a", 2, 3, Request("get", "y"), Outcome(OK)),
        op("a", 4, 5, Request("get", "z"), Outcome(OK)),
        op(
            "b",
            0,
            5,
            pair,
            Outcome(FAIL, TRANSACTION_CANCELED, reasons=((REASON_CONDITION, None), (REASON_CONDITION, None))),
        ),
    ]

    groups = sorted(sorted(o.request.keys()[0] for o in group) for group in partitions(history))

    assert groups == [["x", "x", "y"], ["z"]]
    assert check(history).linearizable
    # A transaction that claims to have applied on absent items cannot be.
    applied = op("b", 0, 5, pair, Outcome(OK))
    assert not check([*history[:3], applied]).linearizable


# ---------------------------------------------------------------------------------------------- stores
@pytest.fixture(scope="module")
def local_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCloud, str]]:
    directory = tmp_path_factory.mktemp("linearizability")
    template = directory / "template.yaml"
    template.write_text(TEMPLATE)
    config = LocalCloudConfig(template=template, enforce_iam=False, state_dir=directory / "state")
    with LocalCloud(config) as cloud:
        yield cloud, cloud.stack.table_name(TABLE_LOGICAL_ID)


class QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        """An access line per call would bury a failure's report."""


@contextmanager
def data_plane_in_this_process() -> Iterator[Target]:
    """The data plane's app (table locks, DynamoDBApp, moto) served from this process, one fresh table."""
    from sam_local_cloud.moto_seam.testing import DomainDispatcherApplication, create_backend_app

    install_dynamodb()
    install_request_caches()
    app = DataPlaneApp(DynamoDBApp(DomainDispatcherApplication(create_backend_app)), iam=None, secret="test")
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    target = Target(f"http://127.0.0.1:{server.port}", f"linearizability-{time.monotonic_ns()}")
    try:
        boto3.client(
            "dynamodb", endpoint_url=target.endpoint, region_name=target.region, **DUMMY_CREDENTIALS
        ).create_table(
            TableName=target.table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield target
    finally:
        server.shutdown()
        thread.join(timeout=10)


class _CheckThenWait:
    """A condition that, once evaluated, waits before moto acts on it: the race a missing lock allows,
    made wide enough to hit every time."""

    def __init__(self, condition: Any) -> None:
        self._condition = condition

    def expr(self, current: Any) -> Any:
        holds = self._condition.expr(current)
        time.sleep(0.003)
        return holds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._condition, name)


@pytest.fixture
def no_table_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """TableLocks that hold nothing, and moto's conditions slowed between their check and their write."""
    from sam_local_cloud.moto_seam.testing import dynamodb_models

    monkeypatch.setattr(TableLocks, "holding", lambda self, operation, body: nullcontext())
    for module in (dynamodb_models, dynamodb_models.table):
        original: Callable[..., Any] = module.get_filter_expression
        monkeypatch.setattr(
            module,
            "get_filter_expression",
            lambda *args, _original=original, **kwargs: _CheckThenWait(_original(*args, **kwargs)),
        )


@pytest.mark.slow
def test_the_check_catches_a_store_without_its_table_lock(no_table_lock: None) -> None:
    with (
        data_plane_in_this_process() as target,
        Workload(target, threads=6, seed=7, tag="broken") as workload,
    ):
        summary = RunSummary()
        workload.contended_puts(2, summary)
        workload.run(1, 120, summary)

    print(summary.render())
    assert summary.double_winners >= 1
    assert len(summary.anomalies) >= 1
    assert any("put_new" in anomaly.describe() for anomaly in summary.anomalies)


@pytest.mark.slow
def test_the_same_workload_in_the_same_process_with_the_lock_is_linearizable() -> None:
    with (
        data_plane_in_this_process() as target,
        Workload(target, threads=6, seed=7, tag="locked") as workload,
    ):
        summary = RunSummary()
        workload.contended_puts(2, summary)
        workload.run(1, 120, summary)

    assert summary.histories == 3
    assert summary.operations >= 120 + 2 * 6
    assert summary.ok, summary.render()


@pytest.mark.parametrize("kind", ["boto3", "wire"])
def test_what_the_client_sees_is_what_the_model_answers(
    local_cloud: tuple[LocalCloud, str], kind: str
) -> None:
    """boto3's client and the workloads' own wire client see the same answers, the model's."""
    cloud, table = local_cloud
    target = Target(cloud.endpoint, table, cloud.stack.region)
    client = target.client() if kind == "boto3" else target.wire_client()
    state: dict[str, dict[str, Any]] = {}
    prefix = f"m-{kind}"
    requests = [
        Request("put_new", f"{prefix}-k", owner="a"),
        Request("put_new", f"{prefix}-k", owner="b"),
        Request("add_if_version", f"{prefix}-k", version=1, amount=4),
        Request("add", f"{prefix}-n", amount=2),
        Request("put_if_version", f"{prefix}-k", version=2, amount=9, owner="c"),
        Request(
            "transact",
            parts=(
                Request("check_version", f"{prefix}-k", version=3),
                Request("add_if_exists", f"{prefix}-n", amount=1),
            ),
        ),
        Request(
            "transact",
            parts=(
                Request("check_version", f"{prefix}-k", version=1),
                Request("put_new", f"{prefix}-o", owner="d"),
            ),
        ),
        Request("delete_if_version", f"{prefix}-k", version=9),
        Request("delete", f"{prefix}-n"),
        Request("get", f"{prefix}-k"),
        Request("query", f"{prefix}-n"),
    ]
    for request in requests:
        state, expected = apply(state, request)
        assert send(client, table, request) == expected, request.describe()


def test_a_call_without_an_answer_is_indeterminate_as_botos_would_be() -> None:
    """No listener, or a listener that never answers: the outcome is INFO (it may have applied)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused_port = closed.getsockname()[1]
    closed.close()
    try:
        for port, error in (
            (silent.getsockname()[1], "ReadTimeoutError"),
            (refused_port, "EndpointConnectionError"),
        ):
            client = DynamoDBWireClient(
                f"http://127.0.0.1:{port}",
                region="us-east-1",
                access_key="k",
                secret_key="s",
                read_timeout=0.2,
            )
            assert send(client, "t", Request("get", "k")) == Outcome(INFO, error)
    finally:
        silent.close()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_thousand_random_histories_on_a_local_cloud_are_linearizable(
    local_cloud: tuple[LocalCloud, str],
) -> None:
    cloud, table = local_cloud
    assert cloud.data_plane is not None
    summary = RunSummary()
    started = time.monotonic()
    # Most histories straight to the data plane, as functions call it; some through the endpoint, which
    # forwards; some from two processes at once.
    direct = Target(cloud.data_plane.endpoint, table, cloud.stack.region)
    forwarded = Target(cloud.endpoint, table, cloud.stack.region)
    with Workload(direct, threads=6, seed=1, tag="threads") as workload:
        workload.run(850, 200, summary, progress=print)
        workload.contended_puts(50, summary)
        workload.counter_sum(40, summary)
    with Workload(forwarded, threads=6, seed=2, tag="forwarded") as workload:
        workload.run(50, 200, summary)
    with Workload(direct, threads=3, processes=2, seed=3, tag="processes") as workload:
        workload.run(100, 200, summary)
    seconds = time.monotonic() - started

    print(summary.render(), f"\nwall time {seconds:.0f} s")
    assert summary.histories == 1000 + 50 + 1
    assert summary.operations >= 1000 * 200
    assert summary.contended_puts == 50
    assert summary.double_winners == 0
    assert not summary.counter_mismatches
    assert summary.ok, summary.render()
