"""Ran twice, landed once: Powertools idempotency records and keyed effects, each shown on its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError
from task_events import an_order, map_item

from handlers import cancel_order, charge_payment, confirm_order, reserve_inventory, validate_order

# Every wait in these tests has this deadline.
DEADLINE_SECONDS = 5.0

Steps = list[tuple[str, Any]]


def steps_of_one_order(
    order_id: str, context: Any, *lines: tuple[str, int, str]
) -> dict[str, dict[str, Any]]:
    """The event each step receives for one order on its way to success."""
    events = {"validate_order": map_item(an_order(order_id, *lines))}
    state = validate_order.lambda_handler(events["validate_order"], context)
    for name, handler in (
        ("reserve_inventory", reserve_inventory),
        ("charge_payment", charge_payment),
        ("confirm_order", confirm_order),
    ):
        events[name] = state
        state = handler.lambda_handler(state, context)
    return events


HANDLERS = {
    "validate_order": validate_order,
    "reserve_inventory": reserve_inventory,
    "charge_payment": charge_payment,
    "confirm_order": confirm_order,
}


@pytest.mark.parametrize("step", list(HANDLERS))
def test_a_replay_returns_the_stored_result_without_running_the_body(
    task_env: Any, lambda_context: Any, task_log: Any, step: str
) -> None:
    events = steps_of_one_order("o-replay", lambda_context, ("SKU-001", 2, "9.99"))
    first_runs = task_log.runs(step, "o-replay")
    handler = HANDLERS[step]

    replayed = [handler.lambda_handler(events[step], lambda_context) for _ in range(3)]

    assert first_runs == 1
    assert task_log.runs(step, "o-replay") == 1
    assert replayed[0] == replayed[1] == replayed[2]
    assert task_env.stock("SKU-001") == 1_000_000 - 2
    assert [entry["entry_id"] for entry in task_env.ledger("o-replay")] == ["charge"]


def test_each_step_keys_its_records_by_its_own_body(task_env: Any, lambda_context: Any) -> None:
    """The key prefix is the Lambda function's name and the body's module and name: a record written by
    a version whose handler ran the body directly is still found (keys did not move with the code)."""
    steps_of_one_order("o-keys", lambda_context, ("SKU-001", 1, "1.00"))

    prefixes = sorted(
        record["id"].split("#")[0].split(".", 1)[1] for record in task_env.idempotency_records()
    )

    assert prefixes == [
        "handlers.charge_payment.charge",
        "handlers.confirm_order.confirm",
        "handlers.reserve_inventory.reserve",
        "handlers.validate_order.validate",
    ]


def test_dynamodb_calls_per_first_run_and_per_replay(
    task_env: Any, lambda_context: Any, dynamodb_calls: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cost of the exactly-once machinery, measured on the functions' own client."""
    measured: dict[str, tuple[int, int]] = {}
    state: dict[str, Any] = map_item(an_order("o-cost", ("SKU-001", 1, "1.00"), ("SKU-002", 1, "1.00")))
    for name, handler in HANDLERS.items():
        dynamodb_calls.reset()
        result = handler.lambda_handler(state, lambda_context)
        first = dynamodb_calls.total()
        dynamodb_calls.reset()
        assert handler.lambda_handler(state, lambda_context) == result
        measured[name] = (first, dynamodb_calls.total())
        state = result
    # A charged order that Confirm never reached, so Cancel has stock to release and a charge to refund.
    charged = map_item(an_order("o-cost-2", ("SKU-001", 1, "1.00")))
    for handler in (validate_order, reserve_inventory, charge_payment):
        charged = handler.lambda_handler(charged, lambda_context)
    failed = charged | {"error": {"Error": "States.Timeout", "Cause": "Task timed out"}}
    dynamodb_calls.reset()
    cancel_order.lambda_handler(failed, lambda_context)
    # Read the order record, claim the key, record FAILED, list and release reservations,
    # list and refund the charge, save the result.
    first_cancel = dynamodb_calls.describe()
    first = dynamodb_calls.total()
    dynamodb_calls.reset()
    cancel_order.lambda_handler(failed, lambda_context)
    measured["cancel_order"] = (first, dynamodb_calls.total())

    with capsys.disabled():
        print(
            "\nDynamoDB calls per task (first run, replay):",
            measured,
            "\ncancel_order first run:",
            first_cancel,
        )
    # Idempotency costs a conditional put and an update; the effect is one write; a replay is one failed put.
    assert measured == {
        "validate_order": (3, 1),
        "reserve_inventory": (3, 1),
        "charge_payment": (3, 1),
        "confirm_order": (3, 1),
        "cancel_order": (8, 2),
    }


def test_the_same_order_id_with_different_content_is_refused(task_env: Any, lambda_context: Any) -> None:
    validate_order.lambda_handler(map_item(an_order("o-conflict", ("SKU-001", 1, "1.00"))), lambda_context)
    different = map_item(an_order("o-conflict", ("SKU-001", 2, "1.00")), item_index=1)
    with pytest.raises(IdempotencyValidationError):
        validate_order.lambda_handler(different, lambda_context)

    state = validate_order.lambda_handler(
        map_item(an_order("o-conflict-2", ("SKU-001", 1, "1.00"))), lambda_context
    )
    reserve_inventory.lambda_handler(state, lambda_context)
    tampered = state | {"order": state["order"] | {"customer_id": "c-other"}}
    with pytest.raises(IdempotencyValidationError):
        reserve_inventory.lambda_handler(tampered, lambda_context)
    assert task_env.stock("SKU-001") == 1_000_000 - 1


def test_a_failed_run_frees_its_key_so_the_retry_runs_again(
    task_env: Any, lambda_context: Any, task_log: Any, fail_once: Callable[[str, str], list[str]]
) -> None:
    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(map_item(an_order("o-retry", ("SKU-001", 1, "5.00"))), lambda_context),
        lambda_context,
    )
    # The charge and its order's ConditionCheck are one transaction.
    failures = fail_once("TransactWriteItems", task_env.names.payments)

    with pytest.raises(ClientError, match="injected by the test"):
        charge_payment.lambda_handler(state, lambda_context)
    assert failures == [f"TransactWriteItems {task_env.names.payments}"]
    assert [r for r in task_env.idempotency_records() if "charge" in r["id"]] == []

    result = charge_payment.lambda_handler(state, lambda_context)

    assert result["outcome"] == "CHARGED"
    assert task_log.runs("charge_payment", "o-retry") == 2
    assert [entry["entry_id"] for entry in task_env.ledger("o-retry")] == ["charge"]


class BlockedBody:
    """Holds a step's body inside its idempotency record until the test lets it go."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        original = getattr(module, name)

        def blocked(*args: Any, **kwargs: Any) -> Any:
            if not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(DEADLINE_SECONDS), "the test never released the blocked body"
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, blocked)

    def start(self, target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(target())
            except Exception as error:  # handed to the test thread to assert on
                outcome.append(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert self.entered.wait(DEADLINE_SECONDS), "the first call never reached its body"
        return thread, outcome


def test_a_concurrent_duplicate_is_refused_while_the_first_runs(
    task_env: Any,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    atomic_dynamodb: None,
    thread_safe_metrics: None,
) -> None:
    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(map_item(an_order("o-race", ("SKU-001", 1, "5.00"))), lambda_context),
        lambda_context,
    )
    body = BlockedBody(monkeypatch, charge_payment, "charge_payment")
    thread, outcome = body.start(lambda: charge_payment.lambda_handler(state, lambda_context))

    with pytest.raises(IdempotencyAlreadyInProgressError):
        charge_payment.lambda_handler(state, lambda_context)

    body.release.set()
    thread.join(DEADLINE_SECONDS)
    assert not thread.is_alive()
    assert outcome[0]["outcome"] == "CHARGED"
    assert charge_payment.lambda_handler(state, lambda_context) == outcome[0]
    assert [entry["entry_id"] for entry in task_env.ledger("o-race")] == ["charge"]


def test_an_abandoned_run_frees_its_key_when_its_invocation_time_is_up(
    task_env: Any,
    lambda_context: Any,
    task_log: Any,
    monkeypatch: pytest.MonkeyPatch,
    atomic_dynamodb: None,
    thread_safe_metrics: None,
) -> None:
    """With the Lambda context registered, an INPROGRESS record lives only as long as its invocation."""
    from dataclasses import replace

    state = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(map_item(an_order("o-stuck", ("SKU-001", 1, "5.00"))), lambda_context),
        lambda_context,
    )
    almost_out_of_time = replace(lambda_context, remaining_millis=200)
    body = BlockedBody(monkeypatch, charge_payment, "charge_payment")
    thread, outcome = body.start(lambda: charge_payment.lambda_handler(state, almost_out_of_time))

    time.sleep(0.3)  # past the first invocation's remaining time
    retried = charge_payment.lambda_handler(state, lambda_context)
    body.release.set()
    thread.join(DEADLINE_SECONDS)

    assert retried["outcome"] == outcome[0]["outcome"] == "CHARGED"
    assert task_log.runs("charge_payment", "o-stuck") == 2
    assert [entry["entry_id"] for entry in task_env.ledger("o-stuck")] == ["charge"]


def test_concurrent_reservations_never_take_more_stock_than_there_is(
    task_env: Any, lambda_context: Any, atomic_dynamodb: None, thread_safe_metrics: None
) -> None:
    quantities = [1, 2, 1, 3, 1, 2, 1, 1]
    states = [
        validate_order.lambda_handler(
            map_item(an_order(f"o-low-{n}", ("SKU-LOW", q, "1.00")), item_index=n), lambda_context
        )
        for n, q in enumerate(quantities)
    ]
    results: list[dict[str, Any]] = []
    start = threading.Barrier(len(states))

    def reserve(state: dict[str, Any]) -> None:
        start.wait(DEADLINE_SECONDS)
        results.append(reserve_inventory.lambda_handler(state, lambda_context))

    threads = [threading.Thread(target=reserve, args=(state,), daemon=True) for state in states]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS)

    assert len(results) == len(states)
    reserved = sum(
        quantities[int(result["order_id"].rsplit("-", 1)[1])]
        for result in results
        if result["outcome"] == "RESERVED"
    )
    assert {(r["outcome"], r["code"]) for r in results} <= {("RESERVED", None), ("FAILED", "OUT_OF_STOCK")}
    assert 0 < reserved <= 5
    assert task_env.stock("SKU-LOW") == 5 - reserved
    rows = [row for n in range(len(quantities)) for row in task_env.reservations(f"o-low-{n}")]
    assert sum(row["quantity"] for row in rows) == reserved


def test_keyed_effects_land_once_even_with_idempotency_disabled(
    task_env: Any, lambda_context: Any, task_log: Any, configure: Any
) -> None:
    configure(POWERTOOLS_IDEMPOTENCY_DISABLED="1")
    state = validate_order.lambda_handler(
        map_item(an_order("o-keys", ("SKU-010", 3, "2.00"))), lambda_context
    )
    reserved = [reserve_inventory.lambda_handler(state, lambda_context) for _ in range(2)]
    charged = [charge_payment.lambda_handler(reserved[0], lambda_context) for _ in range(2)]

    assert task_log.runs("reserve_inventory", "o-keys") == task_log.runs("charge_payment", "o-keys") == 2
    assert [r["outcome"] for r in reserved + charged] == ["RESERVED", "RESERVED", "CHARGED", "CHARGED"]
    assert task_env.stock("SKU-010") == 1_000_000 - 3
    assert [row["reservation_id"] for row in task_env.reservations("o-keys")] == ["line-1"]
    assert [entry["entry_id"] for entry in task_env.ledger("o-keys")] == ["charge"]
    assert task_env.idempotency_records() == []


def test_without_keys_or_idempotency_a_repeated_step_lands_twice(
    task_env: Any, lambda_context: Any, configure: Any
) -> None:
    """The EFFECT_KEYS_DISABLED control: proves that the keys are what kept the effects single."""
    configure(POWERTOOLS_IDEMPOTENCY_DISABLED="1", EFFECT_KEYS_DISABLED="true")
    state = validate_order.lambda_handler(
        map_item(an_order("o-nokeys", ("SKU-011", 3, "2.00"))), lambda_context
    )
    reserved = [reserve_inventory.lambda_handler(state, lambda_context) for _ in range(2)]
    for _ in range(2):
        charge_payment.lambda_handler(reserved[0], lambda_context)

    assert task_env.stock("SKU-011") == 1_000_000 - 6
    assert len(task_env.reservations("o-nokeys")) == 2
    assert [entry["kind"] for entry in task_env.ledger("o-nokeys")] == ["CHARGE", "CHARGE"]


def test_with_idempotency_disabled_the_order_record_still_tells_duplicates_from_conflicts(
    task_env: Any, lambda_context: Any, configure: Any
) -> None:
    configure(POWERTOOLS_IDEMPOTENCY_DISABLED="1")
    order = an_order("o-claim", ("SKU-001", 1, "1.00"))
    first = validate_order.lambda_handler(map_item(order), lambda_context)
    rerun = validate_order.lambda_handler(map_item(order), lambda_context)
    duplicate = validate_order.lambda_handler(map_item(order, item_index=1), lambda_context)
    conflict = validate_order.lambda_handler(
        map_item(an_order("o-claim", ("SKU-001", 2, "1.00")), item_index=2), lambda_context
    )
    assert [s["outcome"] for s in (first, rerun, duplicate, conflict)] == [
        "VALID",
        "VALID",
        "DUPLICATE",
        "REJECTED",
    ]
    assert conflict["code"] == "CONFLICTING_ORDER"
    assert (
        conflict["reason"] == "order o-claim was already submitted with different content by batch b-1 item 0"
    )


# ---------------------------------------------------------------- a late run after the compensation
# Found by the 2-hour soak (2026-12-02): an S3 batch's Express child ran twice. Its first run's
# reserve kept failing, so the Catch sent the order to Cancel, which recorded it FAILED with nothing to
# undo; the second run then reserved and charged it, its confirmation was refused (the record is FAILED),
# and its Cancel returned the first Cancel's stored result: stock and charge were left standing.

RESERVE_TIMED_OUT = {"Error": "States.Timeout", "Cause": "Task timed out"}


def test_a_late_run_cannot_reserve_or_charge_an_order_already_compensated(
    task_env: Any, lambda_context: Any, task_log: Any
) -> None:
    item = map_item(an_order("o-late", ("SKU-020", 2, "4.00")))
    first = validate_order.lambda_handler(item, lambda_context)
    compensated = cancel_order.lambda_handler(first | {"error": RESERVE_TIMED_OUT}, lambda_context)
    assert compensated["outcome"] == "FAILED"

    # The second run: validate replays, reserve and charge meet the closed order and land nothing.
    second = validate_order.lambda_handler(item, lambda_context)
    reserved = reserve_inventory.lambda_handler(second, lambda_context)
    charged = charge_payment.lambda_handler(second | {"outcome": "RESERVED"}, lambda_context)
    cancelled = cancel_order.lambda_handler(reserved, lambda_context)

    for refused, effect in ((reserved, "reserved"), (charged, "charged")):
        assert (refused["outcome"], refused["code"]) == ("FAILED", "ORDER_CLOSED")
        assert refused["reason"] == (
            "order o-late was already closed as FAILED by batch b-1 item 0 (another run of the order "
            f"compensated it); nothing was {effect}"
        )
    assert cancelled == compensated, "Cancel replays the first compensation"
    assert task_env.stock("SKU-020") == 1_000_000
    assert task_env.reservations("o-late") == []
    assert task_env.ledger("o-late") == []
    assert task_log.runs("reserve_inventory", "o-late") == task_log.runs("charge_payment", "o-late") == 1


def test_a_reservation_made_just_before_the_compensation_is_released_and_the_late_charge_refused(
    task_env: Any, lambda_context: Any
) -> None:
    item = map_item(an_order("o-race", ("SKU-019", 3, "4.00")))
    first = validate_order.lambda_handler(item, lambda_context)
    # The second run reserves while the order is still open; then the first run's Cancel closes it.
    late = reserve_inventory.lambda_handler(
        validate_order.lambda_handler(item, lambda_context), lambda_context
    )
    assert late["outcome"] == "RESERVED"
    cancel_order.lambda_handler(first | {"error": RESERVE_TIMED_OUT}, lambda_context)

    charged = charge_payment.lambda_handler(late, lambda_context)

    assert (charged["outcome"], charged["code"]) == ("FAILED", "ORDER_CLOSED")
    assert task_env.stock("SKU-019") == 1_000_000
    assert [row["status"] for row in task_env.reservations("o-race")] == ["RELEASED"]
    assert task_env.ledger("o-race") == []
    assert task_env.order_record("o-race")["status"] == "FAILED"
