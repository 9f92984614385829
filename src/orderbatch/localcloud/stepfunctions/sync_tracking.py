"""How a ``states:startExecution.sync`` Task learns that its child execution ended, and with whose rights.

Step Functions tracks a ``.sync`` child through the EventBridge managed rule
``StepFunctionsGetEventsForStepFunctionsExecutionRule``, which the parent's role must be allowed to put and
describe (``events:PutTargets``, ``events:PutRule``, ``events:DescribeRule``). moto polls DescribeExecution
instead, signed as the parent's role, so a role that AWS lets track its children through the managed rule
but that has no ``states:DescribeExecution`` was denied locally. Here the poll stands in for the managed
rule: it is made with the interpreter's own rights when the role may use that rule, and as the role
otherwise (so a role with neither is still denied, as on AWS).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# role ARN -> whether it may use the managed rule; None: every poll is signed as the role.
_tracked_by_events: Callable[[str], bool] | None = None


def track_sync_with(check: Callable[[str], bool] | None) -> None:
    global _tracked_by_events
    _tracked_by_events = check


def register_hooks() -> None:
    from orderbatch.localcloud.moto_seam import hooks
    from orderbatch.localcloud.moto_seam.stepfunctions import StateTaskServiceSfn

    for name in ("_build_sync_resolver", "_build_sync2_resolver"):
        hooks.around(StateTaskServiceSfn, name, concern="sync_tracking")(_tracking_as_the_managed_rule)


def _tracking_as_the_managed_rule(
    proceed: Callable[..., Any],
    self: Any,
    env: Any,
    resource_runtime_part: Any,
    normalised_parameters: dict[str, Any],
    state_credentials: Any,
) -> Any:
    role_arn = getattr(state_credentials, "role_arn", None)
    if role_arn and _tracked_by_events is not None and _tracked_by_events(role_arn):
        state_credentials = None  # the interpreter's own rights, as the managed rule's
    return proceed(self, env, resource_runtime_part, normalised_parameters, state_credentials)
