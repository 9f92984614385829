"""A deployed stack as a test or a script reads it: its name, outputs and resources' physical IDs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Not at run time: the pytest plugin imports this module in every session, and the stack's modules
    # load only when a cloud starts.
    from sam_local_cloud.stack import LocalStack


@dataclass(frozen=True)
class DeployedStack:
    """A stack deployed on a local cloud, or read from CloudFormation on AWS (the pytest plugin's
    ``--sam-target=aws``): the same shape, so a test reads either."""

    name: str
    outputs: Mapping[str, Any]
    # Logical ID -> physical ID (a function's or table's name, a state machine's ARN, a queue's URL).
    physical_ids: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, stack: LocalStack) -> DeployedStack:
        return cls(stack.stack_name, dict(stack.outputs), dict(stack.physical_ids))

    def physical_id(self, logical_id: str) -> str:
        try:
            return self.physical_ids[logical_id]
        except KeyError:
            raise KeyError(f"the stack {self.name} has no resource {logical_id!r}") from None
