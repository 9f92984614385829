"""A durable handler that suspends past operations a checkpoint answer showed it complete is replayed at once
(a replay is what Lambda would run) and is never failed for it.

The SDK's map keeps a branch that suspended on an invoke suspended until the invocation ends, even when a
later checkpoint answer (another branch's, or the flush while the handler stops) shows that invoke complete.
The handler then returns PENDING with nothing pending. The testing SDK's executor refused that answer
("Cannot return PENDING status with no pending operations"), replayed only after its retry delay, counted
the refusal as a failed attempt and failed the execution at the third such invocation in a row. The
interleaving is driven here step by step on the executor itself: no cloud, no runtime, no sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from aws_durable_execution_sdk_python.identifier import OperationIdentifier
from aws_durable_execution_sdk_python.lambda_service import (
    ChainedInvokeOptions,
    OperationStatus,
    OperationType,
    OperationUpdate,
    WaitOptions,
)
from aws_durable_execution_sdk_python_testing.worker.status import InvocationState
from durable_driving import TASK, Driven, driven_execution


@pytest.fixture
def driven() -> Iterator[Driven]:
    with driven_execution() as execution:
        yield execution


def invoke_start(operation_id: str, branch: str) -> OperationUpdate:
    identifier = OperationIdentifier(
        operation_id, "ChainedInvoke", branch, "validate_order", operation_type=OperationType.CHAINED_INVOKE
    )
    return OperationUpdate.create_invoke_start(identifier, "{}", ChainedInvokeOptions(function_name=TASK))


def branch_start(operation_id: str) -> OperationUpdate:
    identifier = OperationIdentifier(
        operation_id, "MapIteration", None, f"order {operation_id}", operation_type=OperationType.CONTEXT
    )
    return OperationUpdate.create_context_start(identifier)


def a_round_of_the_race(driven: Driven, round_number: int) -> None:
    """The durable matrix's "validate, after the handler returned, before the response, with duplicate": a
    batch with its subject twice; both branches invoke validate and suspend; the subject's runtime is killed
    after its handler returned (FAILED) and the duplicate's answers (SUCCEEDED), both while the orchestrator
    still runs; a third branch's checkpoint answer carries both results back, but the two branches that
    invoked stay suspended, and the orchestrator returns PENDING."""
    subject, duplicate, bystander = (f"{name}{round_number}" for name in ("s", "d", "b"))
    driven.begin()
    driven.checkpoint(
        branch_start(subject),
        invoke_start(f"{subject}-validate", subject),
        branch_start(duplicate),
        invoke_start(f"{duplicate}-validate", duplicate),
    )
    driven.target_answers(f"{subject}-validate", OperationStatus.FAILED)
    driven.target_answers(f"{duplicate}-validate", OperationStatus.SUCCEEDED)
    delivered = driven.checkpoint(branch_start(bystander))
    assert {f"{subject}-validate", f"{duplicate}-validate"} <= set(delivered)
    driven.handler_returns_pending()


def test_a_handler_that_suspends_past_invokes_a_checkpoint_answer_showed_complete_is_replayed_at_once(
    driven: Driven,
) -> None:
    a_round_of_the_race(driven, 0)

    execution = driven.execution
    assert execution.current_status().value == "RUNNING"
    assert driven.replays == [(driven.arn, 0)], "replayed at once, not after the retry delay"
    assert execution.consecutive_failed_invocation_attempts == 0, "not counted as a failed invocation"
    assert driven.gate is InvocationState.PRE_INVOKE, "the replay finds the gate free"
    assert not execution.needs_reinvoke, "the replay is the only one asked for"


def test_three_such_invocations_in_a_row_never_fail_the_execution(driven: Driven) -> None:
    for round_number in range(3):
        a_round_of_the_race(driven, round_number)

    execution = driven.execution
    assert execution.current_status().value == "RUNNING", execution.result
    assert driven.replays == [(driven.arn, 0)] * 3
    assert execution.consecutive_failed_invocation_attempts == 0


def test_a_wait_a_checkpoint_answer_showed_ended_is_replayed_at_once_too(driven: Driven) -> None:
    driven.begin()
    backoff = OperationIdentifier(
        "s0-backoff", "Wait", "s0", "validate_order backoff", operation_type=OperationType.WAIT
    )
    driven.checkpoint(
        branch_start("s0"), OperationUpdate.create_wait_start(backoff, WaitOptions(wait_seconds=2))
    )
    # The wait is due when another branch checkpoints: the answer ends it and delivers it, and its branch,
    # waiting in the SDK for its own resume time, never sees it before the handler stops.
    driven.clock.moment += timedelta(seconds=3)
    assert "s0-backoff" in driven.checkpoint(branch_start("b0"))
    driven.handler_returns_pending()

    assert driven.replays == [(driven.arn, 0)]
    assert driven.execution.consecutive_failed_invocation_attempts == 0


def test_a_pending_with_nothing_pending_and_nothing_completed_since_its_input_is_still_refused(
    driven: Driven,
) -> None:
    driven.begin()
    driven.checkpoint(branch_start("s0"))
    driven.handler_returns_pending()

    execution = driven.execution
    retry_delay = driven.executor.RETRY_BACKOFF_SECONDS
    assert driven.replays == [(driven.arn, retry_delay)], "the SDK's refusal and retry stand"
    assert execution.consecutive_failed_invocation_attempts == 1
