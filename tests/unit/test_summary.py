"""Counting per-order outcomes into the batch summary: no AWS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from order_processing.summary import (
    outcome_of_child_execution,
    outcome_of_result,
    summarize_batch,
    summarize_outcomes,
    with_second_pass,
)


def state(index: int, outcome: str, code: str | None = None, reason: str | None = None) -> dict[str, Any]:
    """An order state as the last per-order step returns it."""
    return {
        "batch_id": "b-1",
        "item_index": index,
        "order_id": f"o-{index}",
        "order": {"order_id": f"o-{index}", "items": []},
        "total": "1.00",
        "outcome": outcome,
        "code": code,
        "reason": reason,
    }


def child(index: int, status: str, output: Any = None, **extra: Any) -> dict[str, Any]:
    """A Distributed Map child execution record (ResultWriter, Transformation NONE)."""
    item = {
        "batch_id": "b-1",
        "item_index": index,
        "source_format": "json",
        "order": {"order_id": f"o-{index}"},
    }
    record = {
        "ExecutionArn": f"arn:aws:states:us-east-1:1:execution:OrderBatch/Map:{index}",
        "Input": json.dumps(item),
        "InputDetails": {"Included": True},
        "Name": str(index),
        "Status": status,
        "StartDate": "2025-01-01T00:00:00.000Z",
        "StopDate": "2025-01-01T00:00:01.000Z",
        **extra,
    }
    if output is not None:
        record["Output"] = json.dumps(output)
        record["OutputDetails"] = {"Included": True}
    return record


def test_inline_results_are_counted_and_sorted_by_item_index() -> None:
    results = [
        state(3, "DUPLICATE", "DUPLICATE_ORDER", "order o-3 was already submitted by batch b-0"),
        state(0, "SUCCEEDED"),
        state(4, "REJECTED", "CONFLICTING_ORDER", "order o-4 was submitted before with different content"),
        state(2, "FAILED", "OUT_OF_STOCK", "order o-2: SKU-001 short"),
        state(1, "REJECTED", "INVALID_ORDER", "order o-1: currency missing"),
        state(5, "SUCCEEDED"),
    ]

    summary = summarize_batch(request={"batch_id": "b-1", "results": results}, results_bucket="")

    assert {name: value for name, value in summary.items() if name != "orders"} == {
        "batch_id": "b-1",
        "total": 6,
        "succeeded": 2,
        "failed": 1,
        "rejected": 2,
        "duplicate": 1,
        "conflicting": 1,
        "second_pass": 0,
    }
    assert [order["item_index"] for order in summary["orders"]] == [0, 1, 2, 3, 4, 5]
    assert summary["orders"][4] == {
        "order_id": "o-4",
        "item_index": 4,
        "outcome": "REJECTED",
        "code": "CONFLICTING_ORDER",
        "reason": "order o-4 was submitted before with different content",
    }


def test_a_non_final_outcome_counts_as_a_failed_task_so_the_counts_add_up() -> None:
    summary = summarize_outcomes(
        "b-1", [outcome_of_result(state(0, "CHARGED")), outcome_of_result(state(1, "SUCCEEDED"))]
    )

    assert (summary["total"], summary["succeeded"], summary["failed"]) == (2, 1, 1)
    assert summary["orders"][0]["code"] == "TASK_FAILED"
    assert (
        summary["orders"][0]["reason"]
        == "order o-0 failed: its workflow ended in the non-final outcome CHARGED"
    )


def test_a_succeeded_child_execution_gives_its_output() -> None:
    assert outcome_of_child_execution(
        child(7, "SUCCEEDED", output=state(7, "DUPLICATE", "DUPLICATE_ORDER"))
    ) == {
        "order_id": "o-7",
        "item_index": 7,
        "outcome": "DUPLICATE",
        "code": "DUPLICATE_ORDER",
        "reason": None,
    }


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_a_child_execution_that_did_not_succeed_is_a_failed_task_named_from_its_input(status: str) -> None:
    record = child(9, status, Error="Lambda.TooManyRequestsException", Cause="Rate Exceeded.")

    outcome = outcome_of_child_execution(record)

    assert outcome == {
        "order_id": "o-9",
        "item_index": 9,
        "outcome": "FAILED",
        "code": "TASK_FAILED",
        "reason": "order o-9 failed: Lambda.TooManyRequestsException: Rate Exceeded.",
    }


def test_a_failed_csv_child_without_an_order_id_is_named_by_its_line() -> None:
    record = child(4, "FAILED", Error="States.Timeout", Cause="")
    record["Input"] = json.dumps({"batch_id": "b-1", "item_index": 4, "source_format": "csv", "order": {}})

    outcome = outcome_of_child_execution(record)

    assert (outcome["order_id"], outcome["item_index"]) == (None, 4)
    assert outcome["reason"] == "the order on CSV line 6 failed: States.Timeout: "


def test_a_very_long_cause_is_shortened() -> None:
    outcome = outcome_of_child_execution(child(1, "FAILED", Error="E", Cause="x" * 5_000))

    assert len(outcome["reason"]) < 600
    assert outcome["reason"].endswith("...")


def test_compact_results_and_error_outputs_are_read_too() -> None:
    outcomes = [
        outcome_of_result(state(1, "SUCCEEDED")),
        outcome_of_result({"Error": "States.TaskFailed", "Cause": "boom"}),
        outcome_of_result("a string"),
    ]

    summary = summarize_outcomes("b-1", outcomes)

    assert (summary["total"], summary["succeeded"], summary["failed"]) == (3, 1, 2)
    assert summary["orders"][0]["item_index"] == 1  # known positions first
    assert summary["orders"][1]["reason"] == "an order of unknown position failed: States.TaskFailed: boom"


def test_a_request_without_outcomes_is_an_error() -> None:
    with pytest.raises(ValueError, match="neither results nor map_result"):
        summarize_batch(request={"batch_id": "b-1"}, results_bucket="")
    with pytest.raises(ValueError, match="no batch_id"):
        summarize_batch(request={"results": []}, results_bucket="")


def deferred(index: int, step: str) -> dict[str, Any]:
    """What a throttled state of the first pass returns."""
    return {
        "order_id": None,
        "item_index": index,
        "outcome": "DEFERRED",
        "code": "THROTTLED",
        "reason": f"{step} was throttled until its retrier ran out; the second pass runs it again",
        "resume_at": step,
        "resume_input": {"batch_id": "b-1", "item_index": index},
    }


def test_the_second_pass_outcomes_count_in_place_of_the_first_pass_deferrals() -> None:
    finished = [state(0, "SUCCEEDED"), state(2, "SUCCEEDED")]
    second_pass = [state(1, "SUCCEEDED"), state(3, "FAILED", "TASK_FAILED", "throttled twice")]

    summary = summarize_batch(
        request={"batch_id": "b-1", "results": finished, "second_pass": second_pass}, results_bucket=""
    )

    assert (summary["total"], summary["succeeded"], summary["failed"], summary["second_pass"]) == (4, 3, 1, 2)
    assert [order["item_index"] for order in summary["orders"]] == [0, 1, 2, 3]


def test_a_deferral_the_second_pass_did_not_account_for_is_a_failure_not_a_lost_order() -> None:
    first_pass = [outcome_of_result(state(0, "SUCCEEDED")), outcome_of_result(deferred(1, "Charge payment"))]
    first_pass.append(outcome_of_result(deferred(2, "Validate order")))

    outcomes = with_second_pass(first_pass, [outcome_of_result(state(2, "SUCCEEDED"))])

    assert [(o["item_index"], o["outcome"]) for o in outcomes] == [
        (0, "SUCCEEDED"),
        (1, "FAILED"),
        (2, "SUCCEEDED"),
    ]
    assert outcomes[1]["code"] == "TASK_FAILED"
    assert "non-final outcome DEFERRED" in outcomes[1]["reason"]
