"""The benchmark's arithmetic and rewrites, without a local cloud."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from orderbatch.bench.history import analyse_history
from orderbatch.bench.scenarios import SCENARIOS, select
from orderbatch.capacity.model import (
    MeasuredWork,
    Neighbour,
    UnitPrices,
    cost_per_million_orders,
    lower_bound_seconds,
)
from orderbatch.capacity.retriers import DOCS_RETRIER, task_states
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud.dynamodb import write_units
from sam_local_cloud.stack import load_stack


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    stack = load_stack(PROJECT_ROOT / "template.yaml")
    return dict(json.loads(stack.state_machine().definition))


def test_the_bound_is_the_work_over_the_quota_or_one_order_end_to_end() -> None:
    assert lower_bound_seconds(200, 4, 0.5, 10) == pytest.approx(40.0)
    assert lower_bound_seconds(5, 4, 0.5, 10) == pytest.approx(2.0)
    assert lower_bound_seconds(200, 4, 0.5, 10, max_concurrency=5) == pytest.approx(80.0)


def test_the_bound_counts_only_the_capacity_the_neighbour_leaves() -> None:
    # 400 slot-seconds: 60 s at 5 slots gives 300, the last 100 at 10 slots take 10 s.
    neighbour = Neighbour(slots=5, start_seconds=0.0, duration_seconds=60.0)
    assert lower_bound_seconds(200, 4, 0.5, 10, neighbour=neighbour) == pytest.approx(70.0)
    short = Neighbour(slots=5, start_seconds=10.0, duration_seconds=1000.0)
    assert lower_bound_seconds(200, 4, 0.5, 10, neighbour=short) == pytest.approx(10 + 300 / 5)


def test_the_docs_retrier_replaces_every_task_retry_list(definition: dict[str, Any]) -> None:
    rewritten = SCENARIOS["docs-retrier"].definition_transform("OrderBatchStateMachine", definition)  # type: ignore[misc]
    tasks = list(task_states(rewritten))
    # 5 per-order steps in each of the 3 Maps and the 2 second passes, 2 summaries and the S3 set-aside
    assert len(tasks) == 28
    assert all(task["Retry"] == [DOCS_RETRIER] for task in tasks)
    assert "Lambda.TooManyRequestsException" not in json.dumps(rewritten)
    assert any(t["Retry"] != [DOCS_RETRIER] for t in task_states(definition)), "the original is untouched"


def test_no_jitter_changes_only_the_throttle_retriers(definition: dict[str, Any]) -> None:
    rewritten = SCENARIOS["no-jitter"].definition_transform("OrderBatchStateMachine", definition)  # type: ignore[misc]
    for original, changed in zip(task_states(definition), task_states(rewritten), strict=True):
        for before, after in zip(original["Retry"], changed["Retry"], strict=True):
            if "Lambda.TooManyRequestsException" in before["ErrorEquals"]:
                assert before["JitterStrategy"] == "FULL"
                assert after == {**before, "JitterStrategy": "NONE"}
            else:
                assert after == before


def test_scenarios_are_chosen_by_name_and_unknown_names_are_refused() -> None:
    assert [s.name for s in select(["no-jitter", "tuned"])] == ["no-jitter", "tuned"]
    assert SCENARIOS["oversubscribed"].max_concurrency(10) == 30
    with pytest.raises(ValueError, match="unknown scenarios \\['fast'\\]"):
        select(["fast"])


def _event(kind: str, seconds: float, **details: Any) -> dict[str, Any]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    event: dict[str, Any] = {"type": kind, "timestamp": start + timedelta(seconds=seconds)}
    if details:
        event["detailsEventDetails"] = details
    return event


def test_history_counts_states_entered_and_retries_as_billed_transitions() -> None:
    events = [
        _event("ExecutionStarted", 0),
        _event("MapStateEntered", 0, name="Process"),
        _event("MapIterationStarted", 0.1, index=0),
        _event("TaskStateEntered", 0.1, name="Validate"),
        _event("TaskScheduled", 0.1),
        _event("TaskFailed", 0.2, error="Lambda.TooManyRequestsException"),
        _event("TaskScheduled", 1.2),
        _event("TaskSucceeded", 1.8),
        _event("PassStateEntered", 1.9, name="Done"),
        _event("MapIterationSucceeded", 2.0, index=0),
        _event("ExecutionSucceeded", 2.5),
    ]
    figures = analyse_history(events, top_level_states=["Process"])
    assert figures.transitions == 4  # Map, Task, Pass entered, plus one retry
    assert figures.retries == 1
    assert figures.top_level_transitions == 1
    assert figures.throttle_failures == 1
    assert figures.throttle_times == [pytest.approx(0.2)]
    assert figures.makespan_seconds == pytest.approx(2.5)
    assert figures.iteration_seconds() == [pytest.approx(1.9)]


def test_cost_per_million_orders_from_measured_work() -> None:
    work = MeasuredWork(
        orders=100,
        transitions=1000,
        top_level_transitions=4,
        lambda_requests=400,
        lambda_gb_seconds=50.0,
        dynamodb_write_units=1500,
        per_order_seconds=[2.01] * 100,
    )
    cost = cost_per_million_orders(work, UnitPrices())
    assert cost["step_functions_standard"] == pytest.approx(250.0)  # 10 transitions x $0.025/1000 x 1M
    assert cost["lambda"] == pytest.approx(0.8 + 8.33, abs=0.01)
    assert cost["dynamodb"] == pytest.approx(9.38, abs=0.01)
    # (4 + 100) transitions, 100 requests and 100 x 2.1 s x 64 MB, per 100 orders.
    express = (104 * 0.025 / 1000 + 100 / 1e6 + 210 * 0.0625 * 0.00001667) * 10_000
    assert cost["step_functions_express_children"] == pytest.approx(express, abs=0.01)
    assert cost["total_standard"] == pytest.approx(cost["lambda"] + cost["dynamodb"] + 250.0, abs=0.02)


def test_write_units_follow_dynamodb_on_demand_billing() -> None:
    assert write_units("PutItem", b"{}") == 1
    transaction: dict[str, Any] = {"TransactItems": [{"Put": {}}, {"Update": {}}, {"ConditionCheck": {}}]}
    assert write_units("TransactWriteItems", json.dumps(transaction).encode()) == 6
    batch: dict[str, Any] = {"RequestItems": {"a": [{}, {}], "b": [{}]}}
    assert write_units("BatchWriteItem", json.dumps(batch).encode()) == 3
    assert write_units("GetItem", b"{}") == 0


def test_the_longest_throttle_streak_follows_each_orders_thread_through_interleaved_iterations() -> None:
    def linked(number: int, previous: int, kind: str, **details: Any) -> dict[str, Any]:
        return {**_event(kind, number / 10, **details), "id": number, "previousEventId": previous}

    throttled = {"error": "Lambda.TooManyRequestsException"}
    events = [
        linked(1, 0, "ExecutionStarted"),
        linked(2, 1, "MapIterationStarted", index=0),
        linked(3, 1, "MapIterationStarted", index=1),
        # order 0: three 429s in a row; order 1: 429, success, 429 (two streaks of one)
        linked(4, 2, "TaskFailed", **throttled),
        linked(5, 3, "TaskFailed", **throttled),
        linked(6, 4, "TaskScheduled"),
        linked(7, 5, "TaskSucceeded"),
        linked(8, 6, "TaskFailed", **throttled),
        linked(9, 7, "TaskFailed", **throttled),
        linked(10, 8, "TaskScheduled"),
        linked(11, 10, "TaskFailed", **throttled),
        linked(12, 11, "ExecutionSucceeded"),
    ]

    figures = analyse_history(events, top_level_states=[])

    assert figures.throttle_failures == 5
    assert figures.longest_throttle_streak == 3


def test_the_old_policy_has_no_catch_for_throttles_alone_and_no_state_left_unreachable(
    definition: dict[str, Any],
) -> None:
    scenario = SCENARIOS["noisy-neighbour-no-second-pass"]
    rewritten = scenario.definition_transform("OrderBatchStateMachine", definition)  # type: ignore[misc]

    tasks = list(task_states(rewritten))
    assert len(tasks) == 28
    for task in tasks:
        assert all(c["ErrorEquals"] != ["Lambda.TooManyRequestsException"] for c in task.get("Catch", []))
        # The retriers are the app's: only the second pass is gone.
        assert task["Retry"][0]["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
    inline = rewritten["States"]["Process inline orders"]["ItemProcessor"]["States"]
    assert "Validation throttled" not in inline
    assert inline["Validate order"]["Catch"][0]["Next"] == "Report conflicting order"
    second = rewritten["States"]["Run deferred orders again"]["ItemProcessor"]["States"]
    assert "Resume order (second pass)" in second
    assert not [name for name in second if name.endswith("throttled (second pass)")]
    assert "Validation throttled" in definition["States"]["Process inline orders"]["ItemProcessor"]["States"]
