"""How a ``states:startExecution.sync`` Task learns that its child execution ended, and with whose rights.

Step Functions tracks a ``.sync`` child through the EventBridge managed rule
``StepFunctionsGetEventsForStepFunctionsExecutionRule``, which the parent's role must be allowed to put and
describe (``events:PutTargets``, ``events:PutRule``, ``events:DescribeRule``). moto polls DescribeExecution
instead, signed as the parent's role, so a role that AWS lets track its children through the managed rule
but that has no ``states:DescribeExecution`` was denied locally. Here the poll stands in for the managed
rule: it is made with the interpreter's own rights when the role may use that rule, and as the role
otherwise (so a role with neither is still denied, as on AWS).

An EXPRESS child has no such description: AWS answers DescribeExecution of an ``express:`` ARN with
InvalidArn, so moto's poll failed the parent with ``StepFunctions.InvalidArnException`` where AWS waits for
the child. Step Functions follows that child itself; here the parent waits for the Express execution to
end and receives it in DescribeExecution's shape (``Output`` a JSON string for ``.sync``, JSON for
``.sync:2``), or fails with ``States.TaskFailed`` and the child's description, its Error and Cause, as its
cause, as it does for a Standard child.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sam_local_cloud.accounts import parts_for_arn
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.stepfunctions import express
from sam_local_cloud.stepfunctions.service_errors import task_failure

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Environment


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskServiceSfn

    for name, sync2 in (("_build_sync_resolver", False), ("_build_sync2_resolver", True)):
        listener = functools.partial(_tracking_as_the_managed_rule, sync2=sync2)
        hooks.around(StateTaskServiceSfn, name, concern="sync_tracking")(listener)


def _tracking_as_the_managed_rule(
    proceed: Callable[..., Any],
    self: Any,
    env: Environment,
    resource_runtime_part: Any,
    normalised_parameters: dict[str, Any],
    state_credentials: Any,
    *,
    sync2: bool,
) -> Any:
    submission = env.stack[-1] if env.stack else None
    child_arn = submission.get("ExecutionArn") if isinstance(submission, dict) else None
    if express.is_top_level_express_arn(child_arn):
        env.stack.pop()
        return _express_child_resolver(self, env, str(child_arn), sync2=sync2)
    role_arn = getattr(state_credentials, "role_arn", None)
    # The cloud's check by role ARN; with none, every poll is signed as the role.
    parts = parts_for_arn(role_arn)
    tracked_by_events = parts.tracked_by_events if parts is not None else None
    if role_arn and tracked_by_events is not None and tracked_by_events(role_arn):
        state_credentials = None  # the interpreter's own rights, as the managed rule's
    return proceed(self, env, resource_runtime_part, normalised_parameters, state_credentials)


def _express_child_resolver(
    task: object, env: Environment, child_arn: str, *, sync2: bool
) -> Callable[[], object]:
    """Polled by the Task until it answers: None while the Express child runs, then its description."""
    from sam_local_cloud.moto_seam.stepfunctions import stepfunctions_parser_backends

    _, _, _, region, account, *_ = child_arn.split(":")
    child = express.express_execution(stepfunctions_parser_backends[account][region], child_arn)

    def resolve() -> object:
        if child is None:
            raise RuntimeError(f"the Express execution {child_arn} is not known to this cloud")
        if not child.closed.is_set():
            return None
        return _described_child(task, env, child, sync2=sync2)

    return resolve


def _described_child(task: object, env: Environment, child: express.ExpressRun, *, sync2: bool) -> object:
    from sam_local_cloud.moto_seam.stepfunctions import (
        DescribeExecutionOutput,
        ExecutionStatus,
        select_from_typed_dict,
        to_json_str,
    )

    description = select_from_typed_dict(DescribeExecutionOutput, express.sync_answer(child))
    if sync2:
        internals.sync2_output(task, DescribeExecutionOutput, description)
    internals.normalised_response(task, description, "describe_execution")
    if child.status == ExecutionStatus.SUCCEEDED:
        return description
    raise task_failure(env, "States.TaskFailed", to_json_str(description), task=task)
