"""A role's policy documents evaluated for one access (an action on a resource) with moto's ``IAMPolicy``.

Explicit Deny wins, and no Allow means deny.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sam_local_cloud.iam.roles import Role, statements

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.services import IAMPolicy


def _policy_for_moto(document: Mapping[str, object]) -> str:
    """The document as moto's ``IAMPolicy`` should match it.

    moto turns a pattern into a regular expression by replacing ``*`` only, so a ``.``, ``$`` or ``+`` in
    an ARN would act as regex syntax and ``?`` would not be IAM's one-character wildcard; and it matches
    actions case-sensitively, where IAM does not. Patterns are escaped here and actions lower-cased (the
    requested action is lower-cased too). Statements with NotResource are left out: moto reads a
    statement without Resource as applying to every resource, whatever its Effect.
    """
    kept = []
    for statement in statements(document):
        if "NotResource" in statement:
            continue
        adjusted = dict(statement)
        for key in ("Action", "NotAction"):
            if key in adjusted:
                adjusted[key] = [pattern.lower() for pattern in _as_list(adjusted[key])]
        if "Resource" in adjusted:
            adjusted["Resource"] = [_escaped(pattern) for pattern in _as_list(adjusted["Resource"])]
        kept.append(adjusted)
    return json.dumps({"Version": "2012-10-17", "Statement": kept})


def _on_any_resource(document: Mapping[str, object]) -> dict[str, object]:
    """The document for a request whose resource is unknown: an Allow counts whatever its resources, a
    Deny only if it is on every resource (one on a named resource may not be this one)."""
    kept = []
    for statement in statements(document):
        if "NotResource" in statement:
            continue
        on_everything = "*" in _as_list(statement.get("Resource", "*"))
        if statement.get("Effect") == "Allow" or on_everything:
            kept.append({**statement, "Resource": "*"})
    return {"Version": "2012-10-17", "Statement": kept}


def _as_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def _escaped(pattern: str) -> str:
    return re.escape(pattern).replace(r"\*", "*").replace(r"\?", ".")


@dataclass(frozen=True)
class Access:
    """One thing a request needs: an IAM action on a resource ARN.

    ``resource_known`` is False when the local cloud cannot tell which resource a service's request is
    on (a service without a resource table here): the action is then allowed if the role allows it on
    some resource, so an unknown resource never denies what AWS would allow.
    """

    action: str
    resource: str
    resource_known: bool = True


_DECISIONS_PER_ROLE = 4096


class RolePolicies:
    """A role's documents parsed once into moto's ``IAMPolicy``."""

    def __init__(self, role: Role) -> None:
        from sam_local_cloud.moto_seam.services import IAMPolicy

        self.policies: list[IAMPolicy] = [
            IAMPolicy(_policy_for_moto(document)) for document in role.documents
        ]
        self.action_only: list[IAMPolicy] = [
            IAMPolicy(_policy_for_moto(_on_any_resource(document))) for document in role.documents
        ]
        # A role's documents never change, so neither does its answer for one access; moto's matching
        # (a regular expression per statement, action and resource) ran for every request of every task.
        self._decisions: dict[Access, bool | None] = {}

    def decide(self, access: Access) -> bool | None:
        """True if allowed, False if explicitly denied, None if nothing allows it (moto's own loop)."""
        try:
            return self._decisions[access]
        except KeyError:
            pass
        decision = self._decide(access)
        if len(self._decisions) >= _DECISIONS_PER_ROLE:
            self._decisions.clear()  # object keys can be many; the hot ones come back at once
        self._decisions[access] = decision
        return decision

    def _decide(self, access: Access) -> bool | None:
        from sam_local_cloud.moto_seam.services import PermissionResult

        allowed = False
        action = access.action.lower()
        for policy in self.policies if access.resource_known else self.action_only:
            result = policy.is_action_permitted(action, access.resource)
            if result == PermissionResult.DENIED:
                return False
            allowed = allowed or result == PermissionResult.PERMITTED
        return True if allowed else None


_STATEMENTS_EXPLAINED = 8


def explain_denial(role: Role, access: Access) -> str:
    """Which statements of the role were evaluated for the access and why none allowed it, for the end of
    the denial's message: the statements that name the action first (their resources are what differs)."""
    findings: list[tuple[int, str]] = []
    for index, document in enumerate(role.documents):
        for number, statement in enumerate(statements(document), start=1):
            label = statement.get("Sid") or f"statement {number}"
            rank, reason = _why_not(statement, access)
            findings.append(
                (rank, f"{role.document_name(index)} {label} ({statement.get('Effect')}): {reason}")
            )
    if not findings:
        return f"role {role.name} has no policy statement"
    findings.sort(key=lambda finding: finding[0])
    shown = [text for _, text in findings[:_STATEMENTS_EXPLAINED]]
    if len(findings) > _STATEMENTS_EXPLAINED:
        shown.append(f"{len(findings) - _STATEMENTS_EXPLAINED} more statements do not name the action")
    return f"role {role.name} evaluated: " + "; ".join(shown)


def _why_not(statement: Mapping[str, object], access: Access) -> tuple[int, str]:
    """Why the statement does not allow the access, ranked: an explicit Deny first, then an Allow it
    overrides, resources that differ, a NotResource statement, actions that differ."""
    actions = _as_list(statement.get("Action", statement.get("NotAction", [])))
    named = any(_matches(pattern.lower(), access.action.lower()) for pattern in actions)
    if ("NotAction" in statement) == named:
        return 3, f"action not matched (the statement's {_listed('Action', statement)})"
    if "NotResource" in statement:
        return 2, "a statement with NotResource is not evaluated locally"
    resources = _as_list(statement.get("Resource", "*"))
    on_resource = not access.resource_known or any(
        _matches(pattern, access.resource) for pattern in resources
    )
    if not on_resource:
        return 1, (
            f"resource not matched (the request is on {access.resource}, the statement on "
            f"{', '.join(resources)})"
        )
    if statement.get("Effect") == "Deny":
        return -1, "explicit Deny"
    if "Condition" in statement:
        return 0, "condition not met"
    return 0, "allows it, an explicit Deny overrides it"


def _listed(key: str, statement: Mapping[str, object]) -> str:
    key = key if key in statement else f"Not{key}"
    return f"{key} {', '.join(_as_list(statement.get(key, [])))}"


def _matches(pattern: str, value: str) -> bool:
    return re.fullmatch(_escaped(pattern).replace("*", ".*"), value, re.DOTALL) is not None
