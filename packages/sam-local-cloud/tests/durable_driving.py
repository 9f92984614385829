"""A durable execution driven step by step on the local cloud's executor: no cloud, no runtime, no timer.

The executor's hand-offs are replaced (replays asked for are recorded, chained targets are answered by the
test, the clock is moved by the test), so an interleaving of checkpoints, target answers and the handler's
return runs exactly as a test writes it. Used by the durable executor's regression and view tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationOutput, InvocationStatus
from aws_durable_execution_sdk_python.lambda_service import ErrorObject, OperationStatus, OperationUpdate
from aws_durable_execution_sdk_python_testing.invoker import InvokeResponse
from aws_durable_execution_sdk_python_testing.model import StartDurableExecutionInput
from aws_durable_execution_sdk_python_testing.worker.status import InvocationState

from sam_local_cloud.lambda_service.durable import DurableExecutions
from sam_local_cloud.lambda_service.functions import FunctionSpec

ORCHESTRATOR = "Orchestrator"
TASK = "ValidateOrder"


class ManualClock:
    """The executor's clock, moved by the test: a wait ends when the test says so, and no timer fires."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment

    def arm(self, wake: datetime) -> float:
        return 3600.0


class Driven:
    """The executor with its hand-offs replaced: replays asked for are recorded, chained targets are answered
    by the test, and one execution created but never launched, so every step runs when the test takes it."""

    def __init__(self, executions: DurableExecutions) -> None:
        # Any: the test replaces the executor's hand-offs with its own.
        self.executor: Any = cast(Any, executions.executor)
        self.replays: list[tuple[str, float]] = []
        self.executor._invoke_execution = lambda execution_arn, delay=0: self.replays.append(
            (execution_arn, delay)
        )
        self.executor.on_chained_invoke_started = lambda *_args, **_kwargs: None
        self.clock = ManualClock()
        self.executor._clock = self.clock
        started = self.executor._create_execution(
            StartDurableExecutionInput(
                account_id="123456789012",
                function_name=ORCHESTRATOR,
                function_qualifier="$LATEST",
                execution_name="batch-1",
                execution_timeout_seconds=600,
                execution_retention_period_days=1,
                input="{}",
            )
        )
        self.arn: str = started.durable_execution_arn
        self.token = ""
        self.invocation_seq: int | None = None

    def begin(self) -> None:
        claim = self.executor._begin_invocation(self.arn)
        assert claim is not None, "no invocation was in flight"
        _, invocation_input, self.invocation_seq = claim
        self.token = invocation_input.checkpoint_token

    def checkpoint(self, *updates: OperationUpdate) -> list[str]:
        """A checkpoint of the running handler; returns the operations its answer delivered."""
        answer = self.executor._checkpoint_execution(self.arn, self.token, list(updates))
        self.token = answer.checkpoint_token
        return [operation.operation_id for operation in answer.new_execution_state.operations]

    def target_answers(self, operation_id: str, status: OperationStatus) -> None:
        """A chained target ends while the handler still runs: its re-invoke meets the busy gate."""
        error = None if status is OperationStatus.SUCCEEDED else runtime_exit()
        result = '{"outcome": "VALID"}' if status is OperationStatus.SUCCEEDED else None
        self.executor._apply_chained_invoke_completion(self.arn, operation_id, status, result, error)
        assert self.executor._begin_invocation(self.arn) is None

    def handler_returns_pending(self) -> None:
        output = DurableExecutionInvocationOutput(status=InvocationStatus.PENDING)
        now = self.clock.now()
        self.executor._finish_invocation(
            self.arn, InvokeResponse(output, "request-1"), now, now, self.invocation_seq
        )

    @property
    def execution(self) -> Any:
        return self.executor.get_execution(self.arn)

    @property
    def gate(self) -> InvocationState:
        state: InvocationState = self.executor._invocation_gate(self.arn)
        return state


def never_invoked(name: str, *_: object) -> Any:
    raise AssertionError(f"nothing is invoked here: {name}")


@contextmanager
def executions_without_sweeper(resolve: Any = never_invoked) -> Iterator[DurableExecutions]:
    """Durable executions on a fresh executor whose sweeper is stopped, so that a test drives every sweep
    and wake-up itself; nothing may be invoked. Closed afterwards."""
    executions = DurableExecutions(
        resolve=resolve, run_invocation=never_invoked, region="us-east-1", account_id="123456789012"
    )
    executions.executor._sweeper_stop.set()
    try:
        yield executions
    finally:
        executions.close()


@contextmanager
def driven_execution() -> Iterator[Driven]:
    """One execution of ORCHESTRATOR on a fresh executor whose sweeper is stopped (not part of these
    interleavings); the executor is closed afterwards."""

    def resolve(name: str) -> FunctionSpec:
        durable = {"ExecutionTimeout": 600} if name.startswith(ORCHESTRATOR) else None
        return FunctionSpec(name.split(":")[0], "handler.run", Path("."), durable_config=durable)

    with executions_without_sweeper(resolve) as executions:
        yield Driven(executions)


def runtime_exit() -> ErrorObject:
    return ErrorObject(message="Runtime exited", type="Runtime.ExitError", data=None, stack_trace=None)
