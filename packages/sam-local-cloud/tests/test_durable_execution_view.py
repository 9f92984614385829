"""What the local cloud says of a durable execution that is still running: the executor's view of it (its
invocation gate, its invocation in flight and for how long, its failed attempts, ``needs_reinvoke``, the
operations it waits on and a chained invoke's target in flight), and the durable invocations throttled at
that moment. The crash matrix puts it in the verdict of a batch still running at its deadline.

The executor is driven step by step (``durable_driving``): no cloud, no runtime, and the
clock moved by the test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from aws_durable_execution_sdk_python.identifier import OperationIdentifier
from aws_durable_execution_sdk_python.lambda_service import (
    ChainedInvokeOptions,
    OperationType,
    OperationUpdate,
    WaitOptions,
)
from aws_durable_execution_sdk_python_testing.child_dispatcher import ChainedInvokeRequest, RunInvocation
from aws_durable_execution_sdk_python_testing.exceptions import ResourceNotFoundException
from durable_driving import TASK, Driven, driven_execution

from sam_local_cloud.lambda_service import FunctionSpec, LambdaService, TooManyRequestsError
from sam_local_cloud.lambda_service.durable import ServiceChildDispatcher
from sam_local_cloud.lambda_service.durable_executor import ExecutionView, WaitedOnOperation


@pytest.fixture
def driven() -> Iterator[Driven]:
    with driven_execution() as execution:
        yield execution


def test_the_view_names_the_gate_the_invocation_in_flight_and_what_the_execution_waits_on(
    driven: Driven,
) -> None:
    driven.begin()
    invoke = OperationIdentifier(
        "s-validate", "s", None, "validate_order", operation_type=OperationType.CHAINED_INVOKE
    )
    backoff = OperationIdentifier(
        "d-backoff", "d", None, "validate_order backoff", operation_type=OperationType.WAIT
    )
    driven.checkpoint(
        OperationUpdate.create_invoke_start(invoke, "{}", ChainedInvokeOptions(function_name=TASK)),
        OperationUpdate.create_wait_start(backoff, WaitOptions(wait_seconds=2)),
    )
    driven.clock.moment += timedelta(seconds=290)

    in_flight = driven.executor.execution_view(driven.arn, {"s-validate": 289.4})
    # The handler returns PENDING: the gate is free again and nothing is in flight.
    driven.handler_returns_pending()
    suspended = driven.executor.execution_view(driven.arn, {})

    assert (in_flight.status, in_flight.gate, suspended.gate) == ("RUNNING", "INVOKING", "PRE_INVOKE")
    assert in_flight.invocation_seconds is not None
    assert suspended.invocation_seconds is None
    assert in_flight.waiting_on == (
        WaitedOnOperation("CHAINED_INVOKE", "validate_order", "STARTED", 290.0, 289.4, targets_known=True),
        WaitedOnOperation(
            "WAIT",
            "validate_order backoff",
            "STARTED",
            290.0,
            None,
            targets_known=True,
            due_in_seconds=-288.0,
        ),
    )
    assert (suspended.failed_attempts, suspended.needs_reinvoke, suspended.invocations) == (0, False, 1)
    description = suspended.describe()
    assert "gate PRE_INVOKE" in description
    assert "CHAINED_INVOKE 'validate_order' STARTED for 290 s (no target invocation in flight)" in description
    assert "WAIT 'validate_order backoff' STARTED for 290 s, overdue by 288 s" in description
    assert "its target in flight for 289 s" in in_flight.describe()


def test_the_description_is_one_line_a_report_can_print() -> None:
    view = ExecutionView(
        status="RUNNING",
        gate="INVOKING",
        invocation_seconds=63.2,
        failed_attempts=2,
        needs_reinvoke=True,
        unseen_changes=False,
        wakeup_armed=False,
        invocations=14,
        waiting_on=(
            WaitedOnOperation("CHAINED_INVOKE", "validate_order", "STARTED", 291.0),
            WaitedOnOperation("WAIT", "validate_order backoff", "STARTED", 1.0, due_in_seconds=2.6),
        ),
        lane_busy=True,
    )

    assert view.describe() == (
        "RUNNING, gate INVOKING, its invocation in flight for 63 s; 2 failed invocation attempts in a row; "
        "needs_reinvoke True; no change the handler has not seen; no wake-up armed; 14 invocations ended; "
        "waiting on: CHAINED_INVOKE 'validate_order' STARTED for 291 s, "
        "WAIT 'validate_order backoff' STARTED for 1 s, due in 3 s; "
        "read off its lane, which did not answer within 5 s"
    )


def test_a_chained_invoke_target_counts_as_in_flight_while_the_service_runs_it() -> None:
    entered, release = threading.Event(), threading.Event()

    def held(_identifier: str, _payload: bytes) -> Any:
        entered.set()
        release.wait(10)
        raise TooManyRequestsError("ConcurrentInvocationLimitExceeded")

    dispatcher = ServiceChildDispatcher(
        resolve=lambda name: FunctionSpec(name, "h.run", Path(".")), run_invocation=held
    )
    request = ChainedInvokeRequest(
        parent_execution_arn="parent",
        operation_id="op-1",
        function_name=TASK,
        tenant_id=None,
        payload="{}",
        account_id="123456789012",
    )
    dispatched = dispatcher.dispatch(request)
    assert isinstance(dispatched, RunInvocation)
    worker = threading.Thread(target=dispatched.invocation)
    worker.start()
    assert entered.wait(10)

    during = dispatcher.targets_in_flight("parent")
    elsewhere = dispatcher.targets_in_flight("another")
    release.set()
    worker.join(10)

    assert list(during) == ["op-1"]
    assert during["op-1"] >= 0
    assert elsewhere == {}
    assert dispatcher.targets_in_flight("parent") == {}


def test_a_durable_invocation_throttled_counts_as_waiting_for_a_slot_until_it_gets_one(
    tmp_path: Path,
) -> None:
    service = LambdaService([], endpoint_url="http://127.0.0.1:9", log_dir=tmp_path, account_concurrency=1)
    try:
        spec = FunctionSpec(TASK, "h.run", Path("."))
        service.add_function(spec)
        held = service.accounting.acquire(TASK)
        admitted: list[Any] = []
        waiter = threading.Thread(target=lambda: admitted.append(service._acquire_with_backoff(spec)))
        waiter.start()
        while not service.durable_slot_waits() and waiter.is_alive():
            threading.Event().wait(0.01)

        waiting = service.durable_slot_waits()
        service.accounting.release(held, 0.0, error=False, timed_out=False)
        waiter.join(10)

        assert list(waiting) == [TASK]
        assert waiting[TASK][0] == 1
        assert len(admitted) == 1
        assert service.durable_slot_waits() == {}
    finally:
        service.close()


def test_the_matrix_view_of_a_stall_never_raises_and_names_the_throttled() -> None:
    class Durable:
        def execution_view(self, arn: str) -> Any:
            raise ResourceNotFoundException("Durable Execution does not exist")

    class Service:
        durable = Durable()

        def durable_slot_waits(self) -> dict[str, tuple[int, float]]:
            return {"DurableOrderBatchFunction": (1, 57.6)}

    view = LambdaService.durable_stall_view(cast(Any, Service()), "arn:missing")

    assert view == (
        "none (ResourceNotFoundException: Durable Execution does not exist); durable invocations throttled "
        "now, retrying for a slot: DurableOrderBatchFunction 1 (longest 58 s)"
    )
