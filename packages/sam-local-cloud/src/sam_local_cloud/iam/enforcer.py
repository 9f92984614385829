"""The identities of one local cloud and the check of every request they sign."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sam_local_cloud.iam.digests import digest
from sam_local_cloud.iam.identities import Denial, Identity, session_name
from sam_local_cloud.iam.policies import Access, RolePolicies, explain_denial
from sam_local_cloud.iam.resources import (
    TaskTokenResource,
    credential_scope,
    function_arn,
    requested_access,
)
from sam_local_cloud.iam.responses import access_denied_client_error, denied_response
from sam_local_cloud.iam.roles import Role, StackRoles

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse
    from mypy_boto3_lambda.type_defs import InvocationResponseTypeDef

    from sam_local_cloud.lambda_service.in_process import InProcessLambdaClient

_LOG = logging.getLogger("sam_local_cloud.iam")


class WouldBeDenial(TypedDict):
    """A call the roles would deny, as report mode logs it (one JSON line each)."""

    principal: str
    action: str
    resource: str
    why: str
    explicit_deny: bool


class IamEnforcer:
    """The identities of one local cloud, and the check of every request they sign.

    With ``report_to`` (report mode) nothing is refused: each would-be denial is logged as one JSON line
    and appended to that file, which every process checking calls (the DynamoDB data plane too) shares.
    """

    def __init__(
        self,
        roles: StackRoles,
        *,
        region: str,
        account_id: str,
        report_to: Path | None = None,
        task_token_resource: TaskTokenResource | None = None,
    ) -> None:
        self.region = region
        self.task_token_resource = task_token_resource
        self.account_id = account_id
        self.report_to = report_to
        if report_to is not None:
            report_to.parent.mkdir(parents=True, exist_ok=True)
        self.notes = list(roles.notes)
        self._by_key: dict[str, Identity] = {}
        self._policies: dict[str, RolePolicies] = {}
        self._function_keys: dict[str, Identity] = {}
        self._role_keys: dict[str, Identity] = {}
        for function_name, role in roles.functions.items():
            identity = self._add(f"function:{function_name}", role, session_name=function_name)
            self._function_keys[function_name] = identity
        self._state_machine_roles = {name: role.arn for name, role in roles.state_machines.items()}
        for role in [*roles.state_machines.values(), *roles.by_arn.values()]:
            if role.arn not in self._role_keys:
                self._role_keys[role.arn] = self._add(f"states:{role.arn}", role, session_name(role.arn))

    def _add(self, seed: str, role: Role, session_name: str) -> Identity:
        identity = Identity(
            access_key_id=f"ASIA{digest(seed, 16)}",
            secret_access_key=digest(f"secret:{seed}", 40),
            role=role,
            session_name=session_name,
            account_id=self.account_id,
        )
        self._by_key[identity.access_key_id] = identity
        if role.arn not in self._policies:
            self._policies[role.arn] = RolePolicies(role)
        return identity

    # -------------------------------------------------------------- identities
    def function_environment(self, function_name: str) -> dict[str, str]:
        """The credential variables Lambda gives the function's environments (none: unchecked)."""
        identity = self._function_keys.get(function_name)
        if identity is None:
            return {}
        return {
            "AWS_ACCESS_KEY_ID": identity.access_key_id,
            "AWS_SECRET_ACCESS_KEY": identity.secret_access_key,
        }

    def state_machine_role_arn(self, state_machine_name: str) -> str | None:
        return self._state_machine_roles.get(state_machine_name)

    def task_credentials(self, role_arn: str) -> tuple[str, str] | None:
        """The credentials a template role calls with: a state machine's Tasks, an API's integration."""
        identity = self._role_keys.get(role_arn)
        return (identity.access_key_id, identity.secret_access_key) if identity else None

    def identity(self, access_key_id: str) -> Identity | None:
        return self._by_key.get(access_key_id)

    def may_track_executions_by_events(self, role_arn: str) -> bool:
        """Whether the role may use the EventBridge managed rule through which Step Functions follows a
        ``.sync`` child execution (the permissions AWS documents for the pattern)."""
        identity = self._role_keys.get(role_arn)
        if identity is None:
            return True  # a role the template does not define is not checked
        rule = f"arn:aws:events:{self.region}:{self.account_id}:rule/{SYNC_EXECUTION_RULE}"
        needed = [Access(f"events:{action}", rule) for action in ("PutTargets", "PutRule", "DescribeRule")]
        return self.refused(identity, needed) is None

    def function_invoke_denial(self, caller_function: str, target: str) -> str | None:
        """Why the caller function's role may not invoke ``target`` (name, ARN, ``name:qualifier``), or None:
        a durable function's chained invoke runs as its role."""
        identity = self._function_keys.get(caller_function)
        if identity is None:
            return None
        name, _, qualifier = target.partition(":") if not target.startswith("arn:") else (target, "", "")
        arn = function_arn(name, qualifier or None, self.region, self.account_id)
        denial = self.refused(identity, [Access("lambda:InvokeFunction", arn)])
        return denial.message() if denial is not None else None

    # -------------------------------------------------------------- decisions
    def first_denied(self, identity: Identity, accesses: Iterable[Access]) -> Denial | None:
        """The first access the identity's role does not allow, explained; None if it allows them all."""
        policies = self._policies[identity.role.arn]
        for access in accesses:
            decision = policies.decide(access)
            if decision is not True:
                explanation = explain_denial(identity.role, access)
                return Denial(identity, access, explicit=decision is False, explanation=explanation)
        return None

    def refused(self, identity: Identity, accesses: Iterable[Access]) -> Denial | None:
        """The denial to answer with: ``first_denied``, except in report mode, where it is reported and
        the call goes through."""
        denial = self.first_denied(identity, accesses)
        if denial is None or self.report_to is None:
            return denial
        record: WouldBeDenial = {
            "principal": identity.arn,
            "action": denial.access.action,
            "resource": denial.access.resource,
            "why": denial.explanation,
            "explicit_deny": denial.explicit,
        }
        line = json.dumps(record)
        _LOG.warning("IAM would deny: %s", line)
        with self.report_to.open("a", encoding="utf-8") as report:
            report.write(line + "\n")
        return None

    def would_be_denials(self) -> list[WouldBeDenial]:
        """In report mode, every call a role did not allow, in order (from every process); else []."""
        if self.report_to is None or not self.report_to.exists():
            return []
        lines = self.report_to.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def refuse(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes] | None:
        """AWS's access-denied answer if the request's signer may not do what it asks, else None."""
        scope = credential_scope(environ)
        if scope is None:
            return None
        identity = self._by_key.get(scope.access_key_id)
        if identity is None:
            return None
        region = scope.region or self.region
        accesses = requested_access(scope.service, environ, region, self.account_id, self.task_token_resource)
        denial = self.refused(identity, accesses)
        if denial is None:
            return None
        status, headers, body = denied_response(scope.service, environ, denial)
        start_response(status, headers)
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    def lambda_tasks_client(self, client: InProcessLambdaClient) -> AuthorizingLambdaClient:
        return AuthorizingLambdaClient(client, self)


SYNC_EXECUTION_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"


class AuthorizingLambdaClient:
    """The in-process Lambda client of Lambda Tasks, checking ``lambda:InvokeFunction`` for the caller.

    Tasks reach Lambda in-process, not through the endpoint, so the check the endpoint would make is made
    here, and a denial raises the ``ClientError`` boto3 would (HTTP 403, ``AccessDeniedException``).
    """

    def __init__(self, client: InProcessLambdaClient, enforcer: IamEnforcer) -> None:
        self._client = client
        self._enforcer = enforcer

    def invoke(
        self, *, caller_access_key_id: str | None = None, **parameters: Any
    ) -> InvocationResponseTypeDef:
        identity = self._enforcer.identity(caller_access_key_id) if caller_access_key_id else None
        if identity is not None:
            arn = function_arn(
                str(parameters.get("FunctionName", "")),
                parameters.get("Qualifier"),
                self._enforcer.region,
                self._enforcer.account_id,
            )
            denial = self._enforcer.refused(identity, [Access("lambda:InvokeFunction", arn)])
            if denial is not None:
                raise access_denied_client_error(denial.message(), "Invoke")
        return self._client.invoke(**parameters)
