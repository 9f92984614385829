"""IAM on the local endpoint: every function and state machine calls as its own role, built from the template.

- ``roles``: the template's roles and their policy documents, translated as ``sam validate`` translates them;
- ``policies``: a role's documents evaluated for one access with moto's ``IAMPolicy`` (explicit Deny wins,
  no Allow means deny);
- ``identities``: the credentials that act as a role, and what a denial says;
- ``resources``: the actions and resource ARNs a request needs, for each service;
- ``responses``: the access-denied and refused-signature answers in each service's protocol;
- ``signatures``: ``SignatureVerifier``, SigV4 signatures checked as AWS checks them (known keys only);
- ``enforcer``: ``IamEnforcer``, which puts them together for one local cloud.

Every function gets credentials of its own (an access key derived from its name) and every state
machine's Tasks call with its role's; a request signed with one of those keys is checked before it is
served. The operator's ``testing`` and the deployer's key are an administrator's; any other key is refused.
What is and is not enforced: docs/iam.md.
"""

from __future__ import annotations

from sam_local_cloud.iam.enforcer import SYNC_EXECUTION_RULE, AuthorizingLambdaClient, IamEnforcer
from sam_local_cloud.iam.identities import Denial, Identity
from sam_local_cloud.iam.policies import Access
from sam_local_cloud.iam.resources import requested_access
from sam_local_cloud.iam.responses import denied_response
from sam_local_cloud.iam.roles import (
    Role,
    StackRoles,
    aws_managed_policy_document,
    build_roles,
    roles_document,
    roles_from_document,
)

__all__ = [
    "SYNC_EXECUTION_RULE",
    "Access",
    "AuthorizingLambdaClient",
    "Denial",
    "IamEnforcer",
    "Identity",
    "Role",
    "StackRoles",
    "aws_managed_policy_document",
    "build_roles",
    "denied_response",
    "requested_access",
    "roles_document",
    "roles_from_document",
]
