"""Powertools idempotency's failure modes as crash points (no time left, #4759; an in-progress record
expired while its run goes on, #8049).

Without a cloud: the crash rule's fields round-trip and are checked, the runtime strips only Powertools'
in-progress expiry, only the first invocation of an order runs out of time, and each mode finds its
point in a recorded sequence. On a local cloud (slow): Reserve with no time left is clean as shipped
and loops on IdempotencyAlreadyInProgressError once the in-progress expiry is dropped.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from orderbatch.faults.crash_cases import STEPS_BY_NAME
from orderbatch.faults.powertools_modes import (
    EXPIRED_WHILE_RUNNING,
    NO_TIME_LEFT,
    mode_point,
    render_failure_modes,
    run_failure_modes,
)
from sam_local_cloud import runtime_shim
from sam_local_cloud.faults import FaultRule, RecordedCall

CHARGE_CALLS = [
    RecordedCall(1, "dynamodb", "PutItem", ("idem",), "INPROGRESS"),
    RecordedCall(2, "dynamodb", "PutItem", ("payments",), "CHARGED"),
    RecordedCall(3, "dynamodb", "UpdateItem", ("idem",), "COMPLETED"),
]


def test_a_crash_with_no_time_left_round_trips_and_its_options_need_it() -> None:
    document = {
        "kind": "crash",
        "point": "after_call:1",
        "once": "true",
        "no_time_left": "true",
        "drop_in_progress_expiry": "yes",
        "overrun_seconds": "2.5",
    }
    rule = FaultRule.from_dict(document)

    assert rule.to_dict() == {
        "kind": "crash",
        "point": "after_call:1",
        "once": True,
        "no_time_left": True,
        "drop_in_progress_expiry": True,
        "overrun_seconds": 2.5,
    }
    assert rule.directive() == {
        "kind": "crash",
        "point": "after_call:1",
        "call": "",
        "no_time_left": True,
        "drop_in_progress_expiry": True,
        "overrun_seconds": 2.5,
    }
    with pytest.raises(ValueError, match="need no_time_left"):
        FaultRule.from_dict({"kind": "crash", "point": "after_call:1", "overrun_seconds": 1})
    with pytest.raises(ValueError, match="only a crash has a no_time_left"):
        FaultRule.from_dict({"kind": "timeout", "no_time_left": True})


def test_only_powertools_in_progress_write_loses_its_expiry() -> None:
    item = {
        "id": {"S": "k"},
        "status": {"S": "INPROGRESS"},
        "expiration": {"N": "99"},
        "in_progress_expiration": {"N": "42"},
    }
    claim = {"TableName": "idem", "Item": item, "ConditionExpression": "c"}

    stripped = runtime_shim._without_in_progress_expiry("PutItem", claim)

    assert stripped["Item"] == {"id": {"S": "k"}, "status": {"S": "INPROGRESS"}, "expiration": {"N": "99"}}
    assert stripped["ConditionExpression"] == "c"
    assert claim["Item"]["in_progress_expiration"] == {"N": "42"}, "the caller's parameters are kept"
    completed = {"TableName": "idem", "Item": {**item, "status": {"S": "COMPLETED"}}}
    assert runtime_shim._without_in_progress_expiry("PutItem", completed) is completed


def test_only_the_first_invocation_of_an_order_runs_out_of_time(tmp_path: Path) -> None:
    fault = {"kind": "crash", "point": "before_body", "no_time_left": True, "overrun_seconds": 3}
    marked = {**fault, runtime_shim.ONCE_MARKER: str(tmp_path / "crash-o-1")}
    event = {"batch_id": "b"}

    first = runtime_shim.Invocation(marked, event)
    racing = runtime_shim.Invocation(marked, event)

    assert (first.no_time_left, first.overrun_seconds) == (True, 3.0)
    assert (racing.no_time_left, racing.overrun_seconds) == (False, 0.0)
    assert runtime_shim.Invocation(fault, event).no_time_left, "without once, every invocation"


def test_the_runtime_context_reports_no_time_left_to_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.client import BaseClient

    # The shim wraps botocore's calls for good in a runtime; here the wrapper goes with the test.
    monkeypatch.setattr(BaseClient, "_make_api_call", BaseClient._make_api_call)
    monkeypatch.setattr(runtime_shim, "_current", None)
    seen = []

    def handler(event: dict[str, object], context: SimpleNamespace) -> dict[str, object]:
        seen.append(context.get_remaining_time_in_millis())
        return {}

    fault = {"kind": "crash", "point": "response_lost", "no_time_left": True}
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 8000)
    runtime_shim.with_faults(handler)({runtime_shim.FAULT_EVENT_KEY: fault}, context)
    runtime_shim.with_faults(handler)({}, SimpleNamespace(get_remaining_time_in_millis=lambda: 8000))

    assert seen == [0, 8000]


def test_each_mode_finds_its_point_and_none_without_an_idempotency_record() -> None:
    no_time = mode_point(NO_TIME_LEFT, CHARGE_CALLS)
    expired = mode_point(EXPIRED_WHILE_RUNNING, CHARGE_CALLS)

    assert no_time is not None
    assert expired is not None
    assert (no_time[0].point, no_time[1]) == ("after_call:1", CHARGE_CALLS[0])
    assert (expired[0].point, expired[1]) == ("before_call:3", CHARGE_CALLS[2])
    assert mode_point(NO_TIME_LEFT, CHARGE_CALLS[1:2]) is None


@pytest.mark.e2e
@pytest.mark.slow
def test_no_time_left_is_clean_as_shipped_and_loops_without_the_in_progress_expiry() -> None:
    result = run_failure_modes([STEPS_BY_NAME["reserve"]], [NO_TIME_LEFT], parallel=2)
    print(render_failure_modes(result))

    (mode,) = result.modes
    assert [(case.verdict, case.crashes) for case in mode.shipped] == [("ok", 1)]
    assert [case.verdict for case in mode.control] == [
        "LOOP: IdempotencyAlreadyInProgressError until the retries ran out"
    ]
    assert result.ok
