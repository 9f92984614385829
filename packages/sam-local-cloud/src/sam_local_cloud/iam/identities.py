"""Who calls: the credentials that act as a template role, and what a denial of one of them says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sam_local_cloud.iam.digests import digest

if TYPE_CHECKING:
    from sam_local_cloud.iam.policies import Access
    from sam_local_cloud.iam.roles import Role


@dataclass(frozen=True)
class Identity:
    """Credentials that act as a role (an assumed-role session)."""

    access_key_id: str
    secret_access_key: str
    role: Role
    session_name: str
    account_id: str

    @property
    def arn(self) -> str:
        return f"arn:aws:sts::{self.account_id}:assumed-role/{self.role.name}/{self.session_name}"


@dataclass(frozen=True)
class Denial:
    identity: Identity
    access: Access
    explicit: bool
    # The statements evaluated and why none allowed the access (policies.explain_denial).
    explanation: str = ""

    def message(self, *, quote_resource: bool = False) -> str:
        """AWS's message, then the local explanation in parentheses (AWS's own message stays a prefix)."""
        said = self.aws_message(quote_resource=quote_resource)
        return f"{said} (local IAM: {self.explanation})" if self.explanation else said

    def aws_message(self, *, quote_resource: bool = False) -> str:
        action, resource = _action_as_worded(self.access.action), self.access.resource
        shown = f'"{resource}"' if quote_resource else resource
        reason = (
            "with an explicit deny in an identity-based policy"
            if self.explicit
            else f"because no identity-based policy allows the {action} action"
        )
        return (
            f"User: {self.identity.arn} is not authorized to perform: {action} on resource: {shown} {reason}"
        )


@dataclass(frozen=True)
class SignatureRefusal:
    """Why a signed request is refused.

    ``reason``: ``unknown-key``, ``mismatch``, ``skewed`` (the request's time too far from now) or
    ``expired`` (a presigned URL past its ``X-Amz-Expires``). ``message`` is AWS's words for the service,
    with the local hint in parentheses after them; ``details`` are the extra elements S3's XML error
    carries (``AWSAccessKeyId``, ``StringToSign``, ``RequestTime``, ...).
    """

    reason: str
    service: str
    access_key_id: str
    message: str
    details: tuple[tuple[str, str], ...] = ()


def _action_as_worded(action: str) -> str:
    """The action as the service words it in its denial: SQS lower-cases it (``sqs:sendmessage``), SNS
    writes its prefix in capitals (``SNS:Publish``), the others as IAM spells them."""
    prefix, _, name = action.partition(":")
    if prefix == "sqs":
        return action.lower()
    if prefix == "sns":
        return f"SNS:{name}"
    return action


def session_name(text: str) -> str:
    # Step Functions names its role sessions with 32 random letters; derived here so runs compare.
    return "".join(character if character.isalpha() else "x" for character in digest(text, 32)).title()
