"""Crash points: found by recording each function's AWS calls, crashed once each, audited.

Without a cloud: crash points parse and validate, a ``once`` crash rides on one invocation at a time
until it has crashed, a recorded sequence enumerates its points, and a durable replay is keyed by its
execution with its checkpoints' operation updates recorded. On a local cloud: the recording finds
Reserve's and Charge's real calls in order; one point per function, crashed through the real state
machine, audits clean; the durable function's recording finds its checkpoint boundaries and a few of
them crashed, alone and with a second start under the same execution name, audit clean (the default
suite); the whole matrix with its controls, and the durable one, are marked slow.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orderbatch.app_batches import order_event_keys
from orderbatch.faults.crash_cases import (
    ALONE,
    AS_SHIPPED,
    DURABLE,
    DURABLE_STEPS,
    ORCHESTRATOR,
    STEPS,
    VARIANTS,
    WITH_DUPLICATE,
    find_steps,
)
from orderbatch.faults.crash_matrix import ConfigurationRun, run_matrix, start_cloud
from orderbatch.faults.crash_results import MatrixResult, render
from sam_local_cloud import FaultPlan, LocalCloud
from sam_local_cloud.faults import (
    FaultDecision,
    FaultInjector,
    FaultRule,
    RecordedCall,
    ResourceNames,
    enumerate_crash_points,
    idempotency_save,
)
from sam_local_cloud.runtime_shim import (
    CHECKPOINT_UPDATES,
    call_matches,
    describe_call,
    parse_crash_point,
)

NAMES = ResourceNames(
    {
        "stack-IdempotencyTable": "idempotency",
        "stack-PaymentsTable": "payments",
        "stack-OrdersTable": "orders",
    }
)
CHARGE_CALLS = [
    RecordedCall(1, "dynamodb", "PutItem", ("stack-IdempotencyTable",), "INPROGRESS"),
    RecordedCall(2, "dynamodb", "PutItem", ("stack-PaymentsTable",), "CHARGED"),
    RecordedCall(3, "dynamodb", "UpdateItem", ("stack-IdempotencyTable",), "COMPLETED"),
]


# ---------------------------------------------------------------------------------- without a cloud


def test_crash_points_parse_and_a_bad_one_is_refused_by_name() -> None:
    assert parse_crash_point("after_call:3") == ("after_call", 3)
    assert parse_crash_point("before_call:1") == ("before_call", 1)
    assert parse_crash_point("response_lost") == ("response_lost", 0)
    for bad in ("after_call", "after_call:0", "before_body:2", "sometime"):
        with pytest.raises(ValueError, match="unknown crash point"):
            parse_crash_point(bad)
    with pytest.raises(ValueError, match="fault crash: unknown crash point 'after_call:x'"):
        FaultRule.from_dict({"kind": "crash", "point": "after_call:x"})
    with pytest.raises(ValueError, match="only a crash has a point"):
        FaultRule.from_dict({"kind": "timeout", "point": "before_body"})


def test_a_crash_rule_from_a_flag_round_trips_as_in_a_plan_file() -> None:
    rule = FaultRule.from_dict(
        {"kind": "crash", "point": "after_call:2", "once": "true", "item_ids": "o-1+o-2"}
    )

    assert rule.to_dict() == {
        "kind": "crash",
        "point": "after_call:2",
        "once": True,
        "item_ids": ["o-1", "o-2"],
    }
    assert FaultPlan.from_dict({"functions": {"F": [rule.to_dict()]}}).functions["F"] == (rule,)


def decided(injector: FaultInjector, order_id: str) -> FaultDecision:
    decision = injector.decide("F", json.dumps({"batch_id": "b", "order_id": order_id}).encode())
    assert decision is not None, "F has rules: every invocation gets a decision"
    return decision


def test_a_once_crash_rides_on_every_invocation_of_its_order_until_one_crashed(tmp_path: Path) -> None:
    rule = {"kind": "crash", "point": "before_body", "once": True, "item_ids": ["o-1"]}
    plan = FaultPlan.from_dict({"functions": {"F": [rule]}})
    injector = FaultInjector(plan, marker_dir=tmp_path, event_keys=order_event_keys())

    first = decided(injector, "o-1")
    racing = decided(injector, "o-1")  # a duplicate while the first still runs: whoever gets there first
    other_order = decided(injector, "o-2")
    assert first.outcome is not None
    assert racing.outcome == first.outcome
    assert first.once_marker is not None
    assert racing.once_marker == first.once_marker, "one marker: the runtimes race for it"
    assert Path(first.once_marker).parent == tmp_path
    assert (other_order.outcome, other_order.once_marker) == (None, None)

    injector.settle("F", first, crashed=False)  # it took another path: the crash is still to come
    assert decided(injector, "o-1").outcome is not None
    injector.settle("F", racing, crashed=True)
    assert decided(injector, "o-1").outcome is None

    injector.set_plan(injector.plan)  # a new plan: its crashes happen again, with fresh markers
    again = decided(injector, "o-1")
    assert again.outcome is not None
    assert again.once_marker != first.once_marker


def test_a_crash_names_the_call_it_follows_down_to_its_tables_and_error() -> None:
    put = {"service": "dynamodb", "operation": "PutItem", "tables": ["idem"]}
    refused = {**put, "error": "ConditionalCheckFailedException"}
    recorded = RecordedCall(1, "dynamodb", "PutItem", ("idem",), "INPROGRESS")

    assert recorded.spec() == "dynamodb.PutItem:idem"
    assert call_matches(put, recorded.spec())
    assert not call_matches(refused, recorded.spec()), "a refused write is another point"
    assert call_matches(refused, "dynamodb.PutItem:idem!ConditionalCheckFailedException")
    assert call_matches(put, "dynamodb.PutItem")
    assert not call_matches({**put, "operation": "GetItem"}, "dynamodb.PutItem")
    assert not call_matches(put, "dynamodb.PutItem:orders")


def test_a_recorded_sequence_gives_every_point_labelled_by_its_call() -> None:
    points = enumerate_crash_points(CHARGE_CALLS, NAMES)

    assert [(p.point, p.label) for p in points] == [
        ("before_body", "before the body"),
        ("after_call:1", "after dynamodb.PutItem #1 (idempotency INPROGRESS)"),
        ("after_call:2", "after dynamodb.PutItem #2 (payments CHARGED)"),
        ("before_call:3", "after the body, before the save, dynamodb.UpdateItem #3 (idempotency COMPLETED)"),
        ("after_call:3", "after dynamodb.UpdateItem #3 (idempotency COMPLETED)"),
        ("before_response", "after the handler returned, before the response"),
        ("response_lost", "the response lost on its way"),
    ]
    assert idempotency_save(CHARGE_CALLS) == CHARGE_CALLS[2]
    # Without idempotency there is no save, and keys stay comparable across configurations.
    unprotected = [RecordedCall(1, "dynamodb", "PutItem", ("stack-PaymentsTable",), "CHARGED")]
    assert [p.key for p in enumerate_crash_points(unprotected, NAMES)] == [
        "before the body",
        "after dynamodb.PutItem (payments CHARGED)",
        "before the response",
        "the response lost",
    ]


def test_the_runtime_records_where_a_call_went_and_the_status_it_wrote_never_the_item() -> None:
    update = {
        "TableName": "t",
        "Key": {"id": {"S": "secret"}},
        "UpdateExpression": "SET #response_data = :response_data, #status = :status",
        "ExpressionAttributeNames": {"#status": "status", "#response_data": "data"},
        "ExpressionAttributeValues": {":status": {"S": "COMPLETED"}, ":response_data": {"S": "secret"}},
    }
    transaction = {
        "TransactItems": [
            {"Put": {"TableName": "r", "Item": {"status": {"S": "RESERVED"}}}},
            {"Update": {"TableName": "i", "UpdateExpression": "SET stock = stock - :q"}},
        ]
    }

    assert describe_call("dynamodb", "UpdateItem", update, 3) == {
        "number": 3,
        "service": "dynamodb",
        "operation": "UpdateItem",
        "tables": ["t"],
        "status": "COMPLETED",
    }
    assert describe_call("dynamodb", "TransactWriteItems", transaction, 2)["writes"] == [
        {"action": "Put", "table": "r", "status": "RESERVED"},
        {"action": "Update", "table": "i", "status": None},
    ]
    assert describe_call("s3", "PutObject", {"Bucket": "b", "Key": "k", "Body": b"x"}, 1)["bucket"] == "b"


CHECKPOINT = {
    "DurableExecutionArn": "arn:aws:lambda:us-east-1:123456789012:function:F:$LATEST/durable-execution/b-1/x",
    "CheckpointToken": "token",
    "Updates": [
        {
            "Id": "c1",
            "ParentId": "m1",
            "Type": "CHAINED_INVOKE",
            "Action": "START",
            "Name": "charge_payment",
            "Payload": '{"secret": 1}',
        },
        {"Id": "m1", "Type": "CONTEXT", "SubType": "MapIteration", "Action": "SUCCEED", "Name": "order 0"},
    ],
}


def test_a_durable_checkpoint_is_recorded_by_its_operation_updates_never_their_payloads() -> None:
    call = describe_call("lambda", "CheckpointDurableExecution", CHECKPOINT, 4)

    assert call[CHECKPOINT_UPDATES] == ["c1:START", "m1:SUCCEED"]
    assert call["operations"][0] == {
        "Id": "c1",
        "ParentId": "m1",
        "Type": "CHAINED_INVOKE",
        "Name": "charge_payment",
        "Action": "START",
    }
    assert "secret" not in json.dumps(call)
    recorded = RecordedCall.from_log(call)
    assert recorded.checkpoint == ("c1:START", "m1:SUCCEED")
    assert [operation.key for operation in recorded.operations] == ["c1:START", "m1:SUCCEED"]
    # A checkpoint boundary names the update it carries, whatever the call's number in its replay.
    assert call_matches(call, "lambda.CheckpointDurableExecution@c1:START")
    assert not call_matches(call, "lambda.CheckpointDurableExecution@c1:SUCCEED")
    assert parse_crash_point("before_checkpoint") == ("before_checkpoint", 0)
    assert parse_crash_point("after_checkpoint") == ("after_checkpoint", 0)


def test_a_durable_replay_is_keyed_by_its_execution_and_its_batch_read_from_the_executions_input(
    tmp_path: Path,
) -> None:
    arn = CHECKPOINT["DurableExecutionArn"]
    rule = {
        "kind": "crash",
        "point": "after_checkpoint",
        "once": True,
        "batch_ids": ["b-1"],
        "call": "lambda.CheckpointDurableExecution@c1:START",
    }
    injector = FaultInjector(
        FaultPlan.from_dict({"functions": {"F": [rule]}}), marker_dir=tmp_path, event_keys=order_event_keys()
    )

    def replay(token: str, batch_id: str = "b-1") -> FaultDecision | None:
        execution = {
            "Id": "e",
            "Type": "EXECUTION",
            "Status": "STARTED",
            "ExecutionDetails": {"InputPayload": json.dumps({"batch_id": batch_id, "orders": []})},
        }
        event = {
            "DurableExecutionArn": arn,
            "CheckpointToken": token,
            "InitialExecutionState": {"Operations": [execution]},
        }
        return injector.decide("F", json.dumps(event).encode())

    first, second = replay("t-1"), replay("t-2")
    assert first is not None
    assert second is not None
    assert (first.attempt, second.attempt) == (1, 2), "attempts count the execution's replays"
    assert first.item_key == arn
    assert first.batch_key == "b-1"
    directive = first.directive()
    assert directive is not None
    assert (directive["tag"], directive["batch"]) == (arn, "b-1")
    assert directive["call"] == "lambda.CheckpointDurableExecution@c1:START"
    other = replay("t-3", batch_id="b-2")
    assert other is not None
    assert other.outcome is None, "the rule names another batch"


def test_the_orchestrator_is_a_step_of_the_durable_matrix_only() -> None:
    assert find_steps(["orchestrator"]) == [ORCHESTRATOR]
    assert find_steps(["DurableOrderBatchFunction", "charge"]) == [STEPS[2], ORCHESTRATOR]
    assert "summarize" not in [step.name for step in DURABLE_STEPS]


# ---------------------------------------------------------------------------------- on a local cloud


@pytest.fixture(scope="module")
def crash_run() -> Iterator[ConfigurationRun]:
    cloud: LocalCloud = start_cloud(AS_SHIPPED)
    try:
        yield ConfigurationRun(cloud, AS_SHIPPED)
    finally:
        cloud.stop()
        shutil.rmtree(cloud.state_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def recorded(crash_run: ConfigurationRun) -> dict[str, list[RecordedCall]]:
    """Every step's calls, recorded once on the module's cloud."""
    return crash_run.record(STEPS)


@pytest.mark.e2e
def test_the_recording_finds_reserves_and_charges_calls_in_order(
    crash_run: ConfigurationRun, recorded: dict[str, list[RecordedCall]]
) -> None:

    def calls(step: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        return [
            (call.name, tuple(crash_run.names.short(t) for t in call.tables), call.statuses())
            for call in recorded[step]
        ]

    assert calls("reserve") == [
        ("dynamodb.PutItem", ("idempotency",), ("INPROGRESS",)),
        # The order's ConditionCheck rides in the transaction: nothing is reserved for a closed order.
        ("dynamodb.TransactWriteItems", ("inventory", "orders", "reservations"), ("RESERVED",)),
        ("dynamodb.UpdateItem", ("idempotency",), ("COMPLETED",)),
    ]
    assert calls("charge") == [
        ("dynamodb.PutItem", ("idempotency",), ("INPROGRESS",)),
        ("dynamodb.TransactWriteItems", ("orders", "payments"), ("CHARGED",)),
        ("dynamodb.UpdateItem", ("idempotency",), ("COMPLETED",)),
    ]
    # Cancel releases the stock and refunds the charge: two writes between its idempotency record's two.
    assert [call.name for call in recorded["cancel"]] == [
        "dynamodb.GetItem",
        "dynamodb.PutItem",
        "dynamodb.PutItem",
        "dynamodb.Query",
        "dynamodb.TransactWriteItems",
        "dynamodb.Query",
        "dynamodb.TransactWriteItems",
        "dynamodb.UpdateItem",
    ]
    assert [call.statuses() for call in recorded["summarize"]] == [("INPROGRESS",), ("COMPLETED",)]


# One point per function, the one a crash is likeliest to break: right after its effect landed (the body
# runs again and the keys must hold), between cancel's two writes, and for validate with a duplicate
# racing for the order (the holder must still be the one to process it).
ONE_POINT_EACH = {
    "validate": ("after dynamodb.PutItem (orders RECEIVED)", WITH_DUPLICATE),
    "reserve": ("after dynamodb.TransactWriteItems (inventory, orders, reservations RESERVED)", VARIANTS[0]),
    "charge": ("after dynamodb.TransactWriteItems (orders, payments CHARGED)", VARIANTS[0]),
    "confirm": ("after dynamodb.UpdateItem (orders SUCCEEDED)", VARIANTS[0]),
    "cancel": ("after dynamodb.TransactWriteItems (inventory, reservations RELEASED)", VARIANTS[0]),
    "summarize": ("the response lost", VARIANTS[0]),
}


@pytest.mark.e2e
def test_one_crash_point_per_function_loses_nothing_and_doubles_nothing(
    crash_run: ConfigurationRun, recorded: dict[str, list[RecordedCall]]
) -> None:
    cases = [
        case
        for case in crash_run.cases(recorded, STEPS, VARIANTS)
        if (case.point.key, case.variant) == ONE_POINT_EACH[case.step.name]
    ]
    assert sorted(case.step.name for case in cases) == sorted(ONE_POINT_EACH)

    results = {result.step: result for result in crash_run.run(cases)}

    for step, result in results.items():
        assert result.crashes == 1, f"{step}: {result.verdict}"
        assert (result.lost, result.doubled, result.violations) == ([], [], []), f"{step}: {result.verdict}"
        assert result.ok, f"{step}: {result.verdict}"
    assert results["cancel"].subject_outcome == "FAILED"
    assert results["confirm"].subject_outcome == "SUCCEEDED"
    # Killed after the effect, before the save: the body ran again, and the effect key held.
    assert results["reserve"].body_runs == 2
    assert results["charge"].body_runs == 2


@pytest.mark.slow
@pytest.mark.e2e
# With controls on every step and the duplicate-children row: about 10 minutes alone on two cores.
@pytest.mark.timeout(1800)
def test_the_whole_matrix_and_its_controls(capsys: pytest.CaptureFixture[str]) -> None:
    result: MatrixResult = run_matrix()
    with capsys.disabled():
        print("\n" + render(result))

    not_clean = [f"{c.step} {c.label} {c.variant}: {c.verdict}" for c in result.main.cases if not c.ok]
    assert not_clean == []
    for step in STEPS:
        calls = [p for p in result.main.points[step.name] if p["point"].startswith("after_call:")]
        assert calls, f"no AWS call recorded for {step.name}"
        runs = [c for c in result.main.cases if c.step == step.name]
        assert len(runs) == len(result.main.points[step.name]) * len(VARIANTS)
    shown = result.defences_shown()
    assert "charge: after dynamodb.TransactWriteItems (orders, payments CHARGED)" in shown["effect keys"]
    assert "charge: the response lost" in shown["idempotency"]
    doubled = [c for control in result.controls for c in control.cases if c.doubled]
    assert all(c.doubled == [c.batch_id + "-s"] for c in doubled), "the audit names the doubled subject"
    assert result.ok


# ------------------------------------------------------------------- the durable function's own points


@pytest.fixture(scope="module")
def durable_crash_run(crash_run: ConfigurationRun) -> ConfigurationRun:
    """The module's cloud, its batches run by the durable function."""
    return ConfigurationRun(crash_run.cloud, AS_SHIPPED, orchestrator=DURABLE)


@pytest.mark.e2e
def test_the_durable_functions_checkpoint_boundaries_crashed_lose_nothing_and_double_nothing(
    durable_crash_run: ConfigurationRun,
) -> None:
    updates = durable_crash_run.record_checkpoints()
    named = {(update.type, update.action, update.name) for update in updates}
    # The Map, each order's branch and its invokes, the failing confirmation's backoff and its cancel.
    assert ("CONTEXT", "START", "process orders") in named
    assert ("CONTEXT", "SUCCEED", "process orders") in named
    assert {("CONTEXT", "START", f"order {index}") for index in range(4)} <= named
    for step in ("validate_order", "reserve_inventory", "charge_payment", "confirm_order", "cancel_order"):
        assert ("CHAINED_INVOKE", "START", step) in named, step
    assert ("WAIT", "START", "confirm_order backoff") in named

    cases = durable_crash_run.orchestrator_cases(updates, VARIANTS)
    assert len(cases) == (2 * len(updates) + 3) * len(VARIANTS)
    wanted = {
        ("before the body", ALONE),
        ("before START map 'process orders'", WITH_DUPLICATE),
        ("after START invoke 'charge_payment' in 'order 0'", ALONE),
        ("after START invoke 'cancel_order' in 'order 3'", WITH_DUPLICATE),
        ("the response lost", ALONE),
    }
    picked = [case for case in cases if (case.point.key, case.variant) in wanted]
    assert {(case.point.key, case.variant) for case in picked} == wanted

    results = durable_crash_run.run(picked)

    for result in results:
        assert result.crashes == 1, f"{result.label} {result.variant}: {result.verdict}"
        assert (result.lost, result.doubled, result.violations) == ([], [], []), result.verdict
        assert result.ok, f"{result.label} {result.variant}: {result.verdict}"
        assert result.subject_outcome == "SUCCEEDED"


@pytest.mark.slow
@pytest.mark.e2e
# Every task function's points under the durable function, then its own checkpoint boundaries, both
# variants: about 10 minutes alone on two cores.
@pytest.mark.timeout(1800)
def test_the_whole_durable_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    result: MatrixResult = run_matrix([*DURABLE_STEPS, ORCHESTRATOR], orchestrator=DURABLE)
    with capsys.disabled():
        print("\n" + render(result))

    not_clean = [f"{c.step} {c.label} {c.variant}: {c.verdict}" for c in result.main.cases if not c.ok]
    assert not_clean == []
    assert result.main.orchestrator == DURABLE
    assert result.controls == []
    boundaries = [p for p in result.main.points[ORCHESTRATOR.name] if p["update"]]
    assert len(boundaries) >= 2 * 20, "before and after each update of a 4-order batch"
    for step in [*DURABLE_STEPS, ORCHESTRATOR]:
        runs = [c for c in result.main.cases if c.step == step.name]
        assert len(runs) == len(result.main.points[step.name]) * len(VARIANTS), step.name
    assert result.ok
