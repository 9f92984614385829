"""IAM on the local endpoint: every function and state machine calls as its own role, built from the template.

Roles come from SAM's own translator (the same ``SamTemplateValidator`` that ``sam validate`` runs): policy
templates such as ``DynamoDBCrudPolicy`` expand exactly as on deployment, ``Policies`` become the role's
inline policies and the managed policy ARNs SAM adds (``AWSLambdaBasicExecutionRole``, X-Ray) are read from
the AWS managed policy documents moto ships. Intrinsics resolve against the names and ARNs the local
cloud deployed (``stack.load_stack``'s helpers). Policies are evaluated by moto's ``IAMPolicy``; explicit
Deny wins, and no Allow means deny.

Every function gets credentials of its own (an access key derived from its name) and every state
machine's Tasks call with its role's; a request signed with one of those keys is checked before it is
served. Any other key (the operator's ``testing``, the deployer's) is an administrator's. What is and is
not enforced: docs/iam.md.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import string
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.exceptions import ClientError

from orderbatch.localcloud.stack import LocalStack, _apply_conditions, _physical_ids

if TYPE_CHECKING:
    from orderbatch.localcloud.moto_seam.services import IAMPolicy

# ---------------------------------------------------------------------------------------------- roles


@dataclass(frozen=True)
class Role:
    """An IAM role of the template with its identity-based policy documents, intrinsics resolved."""

    logical_id: str
    name: str
    arn: str
    documents: tuple[Mapping[str, Any], ...]


@dataclass
class StackRoles:
    """Which role each function and each state machine (by name) runs as."""

    functions: dict[str, Role] = field(default_factory=dict)
    state_machines: dict[str, Role] = field(default_factory=dict)
    # Every role of the template by ARN: what an API's integration ``credentials`` name, for one.
    by_arn: dict[str, Role] = field(default_factory=dict)
    # Things of the template the local IAM cannot honour, said once at start-up.
    notes: list[str] = field(default_factory=list)


def build_roles(template_path: Path, stack: LocalStack) -> StackRoles:
    """The role of every function and state machine of the template, as CloudFormation would create it."""
    from samcli.commands._utils.template import get_template_data

    pseudo = _pseudo_parameters(stack)
    values = {**stack.parameters, **pseudo}
    raw = _apply_conditions(get_template_data(str(template_path.resolve())), values)
    translated = _translate(raw, stack.region, values)
    resources: dict[str, Any] = translated.get("Resources") or {}
    resolve = _resolver(translated, stack, values)

    roles: StackRoles = StackRoles()
    extra_documents = _attached_policy_documents(resources, resolve)
    by_arn: dict[str, Role] = {}
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        props = resolve(logical_id, resource.get("Properties") or {})
        name, arn = _role_name_and_arn(logical_id, props, stack)
        documents = [policy["PolicyDocument"] for policy in props.get("Policies") or []]
        for policy_arn in props.get("ManagedPolicyArns") or []:
            document = extra_documents.managed.get(policy_arn) or aws_managed_policy_document(policy_arn)
            if document is None:
                roles.notes.append(
                    f"{logical_id}: managed policy {policy_arn} is unknown locally; it grants nothing"
                )
            else:
                documents.append(document)
        documents.extend(extra_documents.inline.get(name, []))
        by_arn[arn] = Role(logical_id, name, arn, tuple(documents))
    roles.notes.extend(_statements_not_evaluated(by_arn.values()))
    roles.by_arn = by_arn

    for logical_id, resource in resources.items():
        kind = resource.get("Type")
        props = resource.get("Properties") or {}
        if kind == "AWS::Lambda::Function":
            # Named as load_stack names them, so the Lambda service's function names match.
            name = str(resolve(logical_id, props.get("FunctionName")) or logical_id)
            role_arn, table = resolve(logical_id, props.get("Role")), roles.functions
        elif kind == "AWS::StepFunctions::StateMachine":
            name = str(
                resolve(logical_id, props.get("StateMachineName")) or f"{stack.stack_name}-{logical_id}"
            )
            role_arn, table = resolve(logical_id, props.get("RoleArn")), roles.state_machines
        else:
            continue
        role = by_arn.get(str(role_arn))
        if role is None:
            roles.notes.append(
                f"{logical_id}: role {role_arn} is not defined in the template; its calls are not checked"
            )
        else:
            table[name] = role
    return roles


def _pseudo_parameters(stack: LocalStack) -> dict[str, str]:
    return {
        "AWS::Region": stack.region,
        "AWS::AccountId": stack.account_id,
        "AWS::StackName": stack.stack_name,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackId": (
            f"arn:aws:cloudformation:{stack.region}:{stack.account_id}:stack/{stack.stack_name}/local"
        ),
    }


class _LocalManagedPolicies:
    """What ``sam validate`` asks IAM for (managed policy name to ARN), from moto's AWS managed policies."""

    def load(self) -> dict[str, str]:
        return {name: arn for arn, (name, _) in _aws_managed_policies().items()}


def _translate(raw: dict[str, Any], region: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The template as CloudFormation receives it: SAM resources turned into roles, functions, ..."""
    from samcli.lib.translate.sam_template_validator import SamTemplateValidator
    from samcli.yamlhelper import yaml_parse

    validator = SamTemplateValidator(
        copy.deepcopy(raw), _LocalManagedPolicies(), region=region, parameter_overrides=dict(values)
    )
    translated: dict[str, Any] = yaml_parse(validator.get_translated_template_if_valid())
    return translated


def _resolver(translated: dict[str, Any], stack: LocalStack, values: Mapping[str, str]) -> Any:
    """Resolves a resource's property with the physical names and ARNs the local cloud deploys."""
    from samcli.lib.intrinsic_resolver.intrinsic_property_resolver import IntrinsicResolver
    from samcli.lib.intrinsic_resolver.intrinsics_symbol_table import IntrinsicsSymbolTable

    def resolver_for(symbols: Mapping[str, Any]) -> Any:
        table = IntrinsicsSymbolTable(logical_id_translator=dict(symbols), template=translated)
        return IntrinsicResolver(template=translated, symbol_resolver=table)

    resources: dict[str, Any] = translated.get("Resources") or {}
    # As load_stack does: names the template sets itself (TableName, Name, RoleName) need a first pass.
    first = resolver_for(values)
    named = {
        logical_id: {**body, "Properties": _resolve_names(first, logical_id, body.get("Properties") or {})}
        for logical_id, body in resources.items()
    }
    physical: dict[str, Any] = _physical_ids(named, stack.stack_name, stack.region, stack.account_id)
    for logical_id, body in named.items():
        props = body["Properties"]
        if body.get("Type") == "AWS::IAM::Role":
            name, arn = _role_name_and_arn(logical_id, props, stack)
            physical[logical_id] = {"Ref": name, "Arn": arn, "RoleId": f"AROA{_digest(arn, 17)}"}
        elif body.get("Type") == "AWS::IAM::ManagedPolicy":
            arn = _managed_policy_arn(logical_id, props, stack)
            physical[logical_id] = {"Ref": arn, "PolicyArn": arn}
    second = resolver_for({**values, **physical})

    def resolve(logical_id: str, node: Any) -> Any:
        if node is None:
            return None
        return second.intrinsic_property_resolver(node, True, parent_function=logical_id)

    return resolve


_NAME_PROPERTIES = ("FunctionName", "TableName", "BucketName", "StateMachineName", "RoleName", "Path")


def _resolve_names(resolver: Any, logical_id: str, props: Mapping[str, Any]) -> dict[str, Any]:
    names = {
        key: resolver.intrinsic_property_resolver(value, True, parent_function=logical_id)
        for key, value in props.items()
        if key in _NAME_PROPERTIES or key == "ManagedPolicyName"
    }
    return {**props, **names}


def _role_name_and_arn(logical_id: str, props: Mapping[str, Any], stack: LocalStack) -> tuple[str, str]:
    # CloudFormation names an unnamed role "<stack>-<logical id>-<random suffix>"; locally without the suffix.
    name = str(props.get("RoleName") or f"{stack.stack_name}-{logical_id}"[:64])
    path = str(props.get("Path") or "/")
    return name, f"arn:aws:iam::{stack.account_id}:role{path}{name}"


def _managed_policy_arn(logical_id: str, props: Mapping[str, Any], stack: LocalStack) -> str:
    name = str(props.get("ManagedPolicyName") or f"{stack.stack_name}-{logical_id}")
    return f"arn:aws:iam::{stack.account_id}:policy{props.get('Path') or '/'}{name}"


@dataclass
class _AttachedDocuments:
    managed: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # policy ARN -> document
    inline: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)  # role name -> documents


def _attached_policy_documents(resources: Mapping[str, Any], resolve: Any) -> _AttachedDocuments:
    """The template's own ``AWS::IAM::Policy`` and ``AWS::IAM::ManagedPolicy`` documents, by role name."""
    attached = _AttachedDocuments()
    for logical_id, resource in resources.items():
        kind = resource.get("Type")
        if kind not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        props = resolve(logical_id, resource.get("Properties") or {})
        document = props.get("PolicyDocument") or {}
        if kind == "AWS::IAM::ManagedPolicy":
            attached.managed[resolve(logical_id, {"Ref": logical_id})] = document
        for role_name in props.get("Roles") or []:
            attached.inline.setdefault(str(role_name), []).append(document)
    return attached


@cache
def _aws_managed_policies() -> dict[str, tuple[str, Mapping[str, Any]]]:
    """AWS managed policies by ARN: (name, default version's document), from the copy moto keeps."""
    from orderbatch.localcloud.moto_seam.services import aws_managed_policies_data

    policies: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for name, policy in json.loads(aws_managed_policies_data).items():
        arn = f"arn:aws:iam::aws:policy{policy.get('Path', '/')}{name}"
        policies[arn] = (name, policy["Document"])
    return policies


def aws_managed_policy_document(arn: str) -> Mapping[str, Any] | None:
    """The document of an AWS managed policy (any partition), or None if moto does not know it."""
    normalised = re.sub(r"^arn:[^:]+:", "arn:aws:", arn)
    entry = _aws_managed_policies().get(normalised)
    return entry[1] if entry else None


def _statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    statements = document.get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def _statements_not_evaluated(roles: Iterable[Role]) -> Iterator[str]:
    for role in roles:
        for document in role.documents:
            if any("NotResource" in statement for statement in _statements(document)):
                yield f"{role.logical_id}: a statement with NotResource is not evaluated locally"


# ---------------------------------------------------------------------------------------------- evaluation


def _policy_for_moto(document: Mapping[str, Any]) -> str:
    """The document as moto's ``IAMPolicy`` should match it.

    moto turns a pattern into a regular expression by replacing ``*`` only, so a ``.``, ``$`` or ``+`` in
    an ARN would act as regex syntax and ``?`` would not be IAM's one-character wildcard; and it matches
    actions case-sensitively, where IAM does not. Patterns are escaped here and actions lower-cased (the
    requested action is lower-cased too). Statements with NotResource are left out: moto reads a
    statement without Resource as applying to every resource, whatever its Effect.
    """
    kept = []
    for statement in _statements(document):
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


def _on_any_resource(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document for a request whose resource is unknown: an Allow counts whatever its resources, a
    Deny only if it is on every resource (one on a named resource may not be this one)."""
    statements = []
    for statement in _statements(document):
        if "NotResource" in statement:
            continue
        on_everything = "*" in _as_list(statement.get("Resource", "*"))
        if statement.get("Effect") == "Allow" or on_everything:
            statements.append({**statement, "Resource": "*"})
    return {"Version": "2012-10-17", "Statement": statements}


def _as_list(value: Any) -> list[str]:
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

    def message(self, *, quote_resource: bool = False) -> str:
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


def _action_as_worded(action: str) -> str:
    """The action as the service words it in its denial: SQS lower-cases it (``sqs:sendmessage``), SNS
    writes its prefix in capitals (``SNS:Publish``), the others as IAM spells them."""
    prefix, _, name = action.partition(":")
    if prefix == "sqs":
        return action.lower()
    if prefix == "sns":
        return f"SNS:{name}"
    return action


_DECISIONS_PER_ROLE = 4096


class _RolePolicies:
    """A role's documents parsed once into moto's ``IAMPolicy``."""

    def __init__(self, role: Role) -> None:
        from orderbatch.localcloud.moto_seam.services import IAMPolicy

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
        from orderbatch.localcloud.moto_seam.services import PermissionResult

        allowed = False
        action = access.action.lower()
        for policy in self.policies if access.resource_known else self.action_only:
            result = policy.is_action_permitted(action, access.resource)
            if result == PermissionResult.DENIED:
                return False
            allowed = allowed or result == PermissionResult.PERMITTED
        return True if allowed else None


def _digest(text: str, length: int) -> str:
    """Upper-case letters and digits derived from ``text``: stable across runs, distinct per input."""
    alphabet = string.ascii_uppercase + "234567"
    number = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big")
    characters = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        characters.append(alphabet[index])
    return "".join(characters)


def _session_name(text: str) -> str:
    # Step Functions names its role sessions with 32 random letters; derived here so runs compare.
    return "".join(character if character.isalpha() else "x" for character in _digest(text, 32)).title()


class IamEnforcer:
    """The identities of one local cloud, and the check of every request they sign."""

    def __init__(self, roles: StackRoles, *, region: str, account_id: str) -> None:
        self.region = region
        self.account_id = account_id
        self.notes = list(roles.notes)
        self._by_key: dict[str, Identity] = {}
        self._policies: dict[str, _RolePolicies] = {}
        self._function_keys: dict[str, Identity] = {}
        self._role_keys: dict[str, Identity] = {}
        for function_name, role in roles.functions.items():
            identity = self._add(f"function:{function_name}", role, session_name=function_name)
            self._function_keys[function_name] = identity
        self._state_machine_roles = {name: role.arn for name, role in roles.state_machines.items()}
        for role in [*roles.state_machines.values(), *roles.by_arn.values()]:
            if role.arn not in self._role_keys:
                self._role_keys[role.arn] = self._add(f"states:{role.arn}", role, _session_name(role.arn))

    def _add(self, seed: str, role: Role, session_name: str) -> Identity:
        identity = Identity(
            access_key_id=f"ASIA{_digest(seed, 16)}",
            secret_access_key=_digest(f"secret:{seed}", 40),
            role=role,
            session_name=session_name,
            account_id=self.account_id,
        )
        self._by_key[identity.access_key_id] = identity
        if role.arn not in self._policies:
            self._policies[role.arn] = _RolePolicies(role)
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
        return self.first_denied(identity, needed) is None

    # -------------------------------------------------------------- decisions
    def first_denied(self, identity: Identity, accesses: Iterable[Access]) -> Denial | None:
        policies = self._policies[identity.role.arn]
        for access in accesses:
            decision = policies.decide(access)
            if decision is not True:
                return Denial(identity, access, explicit=decision is False)
        return None

    def refuse(self, environ: dict[str, Any], start_response: Any) -> list[bytes] | None:
        """AWS's access-denied answer if the request's signer may not do what it asks, else None."""
        scope = _credential_scope(environ)
        if scope is None:
            return None
        identity = self._by_key.get(scope.access_key_id)
        if identity is None:
            return None
        region = scope.region or self.region
        accesses = requested_access(scope.service, environ, region, self.account_id)
        denial = self.first_denied(identity, accesses)
        if denial is None:
            return None
        status, headers, body = denied_response(scope.service, environ, denial)
        start_response(status, headers)
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    def lambda_tasks_client(self, client: Any) -> AuthorizingLambdaClient:
        return AuthorizingLambdaClient(client, self)


SYNC_EXECUTION_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"


class AuthorizingLambdaClient:
    """The in-process Lambda client of Lambda Tasks, checking ``lambda:InvokeFunction`` for the caller.

    Tasks reach Lambda in-process, not through the endpoint, so the check the endpoint would make is made
    here, and a denial raises the ``ClientError`` boto3 would (HTTP 403, ``AccessDeniedException``).
    """

    def __init__(self, client: Any, enforcer: IamEnforcer) -> None:
        self._client = client
        self._enforcer = enforcer

    def invoke(self, *, caller_access_key_id: str | None = None, **parameters: Any) -> Any:
        identity = self._enforcer.identity(caller_access_key_id) if caller_access_key_id else None
        if identity is not None:
            arn = _function_arn(
                str(parameters.get("FunctionName", "")),
                parameters.get("Qualifier"),
                self._enforcer.region,
                self._enforcer.account_id,
            )
            denial = self._enforcer.first_denied(identity, [Access("lambda:InvokeFunction", arn)])
            if denial is not None:
                raise _access_denied_client_error(denial.message(), "Invoke")
        return self._client.invoke(**parameters)


def _access_denied_client_error(message: str, operation: str) -> ClientError:
    """What boto3 raises for Lambda's 403 ``AccessDeniedException`` (an error its model does not name)."""
    request_id = str(uuid.uuid4())
    response: Any = {
        "Error": {"Code": "AccessDeniedException", "Message": message},
        "ResponseMetadata": {
            "RequestId": request_id,
            "HTTPStatusCode": 403,
            "HTTPHeaders": {"x-amzn-requestid": request_id, "x-amzn-errortype": "AccessDeniedException"},
            "RetryAttempts": 0,
        },
        "Message": message,
    }
    return ClientError(response, operation)


# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class _Scope:
    access_key_id: str
    region: str
    service: str


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]*)/([^/,\s]+)/")


def _credential_scope(environ: Mapping[str, Any]) -> _Scope | None:
    """Who signed the request (SigV4 header or presigned URL), for which region and service."""
    match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match is None:
        presigned = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential")
        if not presigned:
            return None
        match = _CREDENTIAL.search(f"Credential={presigned[0]}")
        if match is None:
            return None
    return _Scope(access_key_id=match.group(1), region=match.group(2), service=match.group(3))


def _body(environ: dict[str, Any]) -> bytes:
    """The request body, read once and put back for whoever serves the request."""
    import io

    body: bytes = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


# Signing names whose IAM prefix differs, and the botocore model the REST services are routed with.
_IAM_PREFIX = {"monitoring": "cloudwatch"}
_REST_MODELS = {"lambda": "lambda", "s3": "s3"}
# Identity policies are not what authorises these: the HTTP API checks its own SigV4, STS answers anyone.
_NOT_CHECKED = {"execute-api", "sts"}


def requested_access(service: str, environ: dict[str, Any], region: str, account_id: str) -> list[Access]:
    """The actions and resources a request needs, derived from it as IAM would; [] if not derivable."""
    if service in _NOT_CHECKED:
        return []
    if service in _REST_MODELS:
        operation, params = _routed_operation(service, environ)
        if operation is None:
            return []
        if service == "s3":
            return _s3_accesses(operation, params, environ)
        return _lambda_accesses(operation, params, environ, region, account_id)
    body = _body(environ)
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        operation = target.rpartition(".")[2]
        params = json.loads(body or b"{}") if body.strip() else {}
    else:
        form = {key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items()}
        operation, params = form.get("Action", ""), form
    if not operation:
        # Any other REST service moto serves (API Gateway, Batch, EKS, X-Ray, ...): its router knows it.
        routed, params = _routed_operation(service, environ)
        if routed is None:
            return []
        operation = routed
    prefix = _IAM_PREFIX.get(service, service)
    arn_prefix = f"arn:aws:{prefix}:{region}:{account_id}"
    action = f"{prefix}:{_ACTION_NAMES.get(prefix, {}).get(operation, operation)}"
    deriver = _RESOURCE_DERIVERS.get(prefix)
    if deriver is not None:
        return _unique(deriver(action, params, arn_prefix))
    return _unique(
        access if access.resource != "*" else Access(access.action, "*", resource_known=False)
        for access in _generic_accesses(action, params, arn_prefix)
    )


def _routed_operation(service: str, environ: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The operation and URI parameters of a REST request, matched by moto's router on botocore's model."""
    from botocore.exceptions import UnknownServiceError
    from werkzeug.exceptions import NotFound

    from orderbatch.localcloud.moto_seam.services import Request

    try:
        operation, params = _router(_REST_MODELS.get(service, service)).match(Request(environ))
    except (NotFound, NotImplementedError, UnknownServiceError):
        # UnknownServiceError: a signing name botocore has no model of; the request is not checked.
        return None, {}
    if operation is None:
        return None, {}
    return str(operation.name), dict(params)


@cache
def _router(service: str) -> Any:
    from orderbatch.localcloud.moto_seam.services import get_service_router

    return get_service_router(service)


def _unique(accesses: Iterable[Access]) -> list[Access]:
    return list(dict.fromkeys(accesses))


_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _dynamodb_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    """DynamoDB authorises a transaction per item (PutItem, UpdateItem, ... on each item's table) and a
    batch per table; a Query or Scan of an index on the index's ARN."""

    def table_arn(name: str) -> str:
        return name if name.startswith("arn:") else f"{arn_prefix}:table/{name}"

    operation = action.partition(":")[2]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        for item in params.get("TransactItems") or []:
            for kind, request in item.items():
                yield Access(
                    f"dynamodb:{_TRANSACTION_ACTIONS.get(kind, kind)}", table_arn(request["TableName"])
                )
    elif operation in ("BatchWriteItem", "BatchGetItem"):
        for table in params.get("RequestItems") or {}:
            yield Access(action, table_arn(table))
    elif "TableName" in params:
        arn = table_arn(str(params["TableName"]))
        if params.get("IndexName"):
            arn += f"/index/{params['IndexName']}"
        yield Access(action, arn)
    else:
        yield from _generic_accesses(action, params, arn_prefix)


# Operations authorised by an IAM action of another name, by IAM prefix (Service Authorization Reference).
_ACTION_NAMES: dict[str, dict[str, str]] = {
    "sqs": {
        "SendMessageBatch": "SendMessage",
        "DeleteMessageBatch": "DeleteMessage",
        "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    },
    "sns": {"PublishBatch": "Publish"},
}

# The parameters that name a request's resource by ARN, most specific first (Step Functions, SNS,
# tagging, ...); any other top-level member ending in "Arn" whose value is an ARN comes after them.
_ARN_PARAMETERS = (
    "mapRunArn",
    "executionArn",
    "stateMachineArn",
    "activityArn",
    "TopicArn",
    "TargetArn",
    "resourceArn",
    "ResourceArn",
    "AlarmArn",
)


def _generic_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    named = [params.get(name) for name in _ARN_PARAMETERS]
    others = [value for name, value in params.items() if name.lower().endswith("arn")]
    for value in (*named, *others):
        if isinstance(value, str) and value.startswith("arn:"):
            yield Access(action, value)
            return
    yield Access(action, "*")


# Step Functions operations that name the resource they create by its name.
_STATES_CREATED = {"states:CreateStateMachine": "stateMachine", "states:CreateActivity": "activity"}


def _states_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    kind = _STATES_CREATED.get(action)
    if kind and params.get("name"):
        yield Access(action, f"{arn_prefix}:{kind}:{params['name']}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _sns_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    if action == "sns:CreateTopic" and params.get("Name"):
        yield Access(action, f"{arn_prefix}:{params['Name']}")
    elif action == "sns:Unsubscribe" and str(params.get("SubscriptionArn", "")).startswith("arn:"):
        # A subscription ARN is its topic's ARN and an ID; SNS authorises the call on the topic.
        yield Access(action, str(params["SubscriptionArn"]).rpartition(":")[0])
    elif action == "sns:Publish" and params.get("PhoneNumber"):
        # An SMS to a number has no topic: SNS names the number as the resource.
        yield Access(action, str(params["PhoneNumber"]))
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _sqs_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    """SQS authorises on the queue's ARN; requests name the queue by URL (``.../<account>/<name>``), or
    by name when creating it or asking for its URL."""
    url = params.get("QueueUrl")
    if isinstance(url, str) and url:
        account, _, name = urlsplit(url).path.strip("/").rpartition("/")
        region = arn_prefix.split(":")[3]
        yield Access(action, f"arn:aws:sqs:{region}:{account or arn_prefix.split(':')[4]}:{name}")
    elif params.get("QueueName"):
        owner = params.get("QueueOwnerAWSAccountId")
        base = f"arn:aws:sqs:{arn_prefix.split(':')[3]}:{owner}" if owner else arn_prefix
        yield Access(action, f"{base}:{params['QueueName']}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


# EventBridge operations on a rule (named by Name or Rule, on the bus named by EventBusName).
_EVENTS_RULE_OPERATIONS = {
    "PutRule",
    "DeleteRule",
    "DescribeRule",
    "EnableRule",
    "DisableRule",
    "PutTargets",
    "RemoveTargets",
    "ListTargetsByRule",
}
# EventBridge operations on an event bus named by Name.
_EVENTS_BUS_OPERATIONS = {"CreateEventBus", "DeleteEventBus", "DescribeEventBus", "UpdateEventBus"}


def _events_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    """EventBridge authorises PutEvents per entry on the entry's bus (by name or ARN; ``default`` when
    none is named), rule operations on ``rule/<name>`` (``rule/<bus>/<name>`` off the default bus)."""

    def bus_name(value: Any) -> str:
        named = str(value or "default")
        return named.rpartition("event-bus/")[2] if named.startswith("arn:") else named

    operation = action.partition(":")[2]
    if operation == "PutEvents":
        entries = params.get("Entries") or [{}]
        for entry in entries:
            yield Access(action, f"{arn_prefix}:event-bus/{bus_name(entry.get('EventBusName'))}")
    elif operation in _EVENTS_RULE_OPERATIONS and (params.get("Name") or params.get("Rule")):
        rule = params.get("Name") or params.get("Rule")
        bus = bus_name(params.get("EventBusName"))
        yield Access(
            action, f"{arn_prefix}:rule/{rule}" if bus == "default" else f"{arn_prefix}:rule/{bus}/{rule}"
        )
    elif operation in _EVENTS_BUS_OPERATIONS:
        yield Access(action, f"{arn_prefix}:event-bus/{bus_name(params.get('Name'))}")
    else:
        yield from _generic_accesses(action, params, arn_prefix)


def _logs_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    group = params.get("logGroupName")
    if not group:
        yield from _generic_accesses(action, params, arn_prefix)
    elif params.get("logStreamName"):
        yield Access(action, f"{arn_prefix}:log-group:{group}:log-stream:{params['logStreamName']}")
    else:
        yield Access(action, f"{arn_prefix}:log-group:{group}")


def _cloudwatch_accesses(action: str, params: Mapping[str, Any], arn_prefix: str) -> Iterator[Access]:
    names = params.get("AlarmNames") or ([params["AlarmName"]] if params.get("AlarmName") else [])
    if not names:
        yield Access(action, "*")
    for name in names:
        yield Access(action, f"{arn_prefix}:alarm:{name}")


# By IAM prefix.
_RESOURCE_DERIVERS = {
    "dynamodb": _dynamodb_accesses,
    "states": _states_accesses,
    "sns": _sns_accesses,
    "sqs": _sqs_accesses,
    "events": _events_accesses,
    "logs": _logs_accesses,
    "cloudwatch": _cloudwatch_accesses,
}

# S3 operations whose IAM action has another name (the rest are authorised as s3:<Operation>).
_S3_ACTIONS = {
    "ListObjects": "ListBucket",
    "ListObjectsV2": "ListBucket",
    "HeadBucket": "ListBucket",
    "HeadObject": "GetObject",
    "GetObjectAttributes": "GetObject",
    "ListObjectVersions": "ListBucketVersions",
    "ListMultipartUploads": "ListBucketMultipartUploads",
    "ListParts": "ListMultipartUploadParts",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "UploadPartCopy": "PutObject",
    "CompleteMultipartUpload": "PutObject",
    "CopyObject": "PutObject",
    "DeleteObjects": "DeleteObject",
    "ListBuckets": "ListAllMyBuckets",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "PutBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "DeleteBucketLifecycle": "PutLifecycleConfiguration",
    "GetBucketCors": "GetBucketCORS",
    "PutBucketCors": "PutBucketCORS",
    "DeleteBucketCors": "PutBucketCORS",
    "DeleteBucketTagging": "PutBucketTagging",
    "GetBucketEncryption": "GetEncryptionConfiguration",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "DeleteBucketEncryption": "PutEncryptionConfiguration",
    "GetBucketNotificationConfiguration": "GetBucketNotification",
    "PutBucketNotificationConfiguration": "PutBucketNotification",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "DeletePublicAccessBlock": "PutBucketPublicAccessBlock",
}


def _s3_accesses(operation: str, params: Mapping[str, Any], environ: dict[str, Any]) -> list[Access]:
    action = f"s3:{_S3_ACTIONS.get(operation, operation)}"
    bucket, key = params.get("Bucket"), params.get("Key")
    if not bucket:
        return [Access(action, "*")]
    if operation == "DeleteObjects":
        keys = re.findall(rb"<Key>(.*?)</Key>", _body(environ))
        return _unique(Access(action, f"arn:aws:s3:::{bucket}/{_xml_text(found)}") for found in keys)
    accesses = [Access(action, f"arn:aws:s3:::{bucket}/{key}" if key else f"arn:aws:s3:::{bucket}")]
    source = environ.get("HTTP_X_AMZ_COPY_SOURCE")
    if source and operation in ("CopyObject", "UploadPartCopy"):
        source_path = unquote(source.split("?", 1)[0]).lstrip("/")
        accesses.append(Access("s3:GetObject", f"arn:aws:s3:::{source_path}"))
    return accesses


def _xml_text(raw: bytes) -> str:
    from xml.sax.saxutils import unescape

    return unescape(raw.decode("utf-8", "replace"), {"&quot;": '"', "&apos;": "'"})


# Lambda operations whose IAM action has another name.
_LAMBDA_ACTIONS = {"Invoke": "InvokeFunction", "InvokeWithResponseStream": "InvokeFunction"}


def _lambda_accesses(
    operation: str, params: Mapping[str, Any], environ: Mapping[str, Any], region: str, account_id: str
) -> list[Access]:
    action = f"lambda:{_LAMBDA_ACTIONS.get(operation, operation)}"
    name = params.get("FunctionName")
    if not name:
        return [Access(action, "*")]
    qualifier = parse_qs(environ.get("QUERY_STRING", "")).get("Qualifier", [None])[0]
    return [Access(action, _function_arn(str(name), qualifier, region, account_id))]


def _function_arn(name: str, qualifier: str | None, region: str, account_id: str) -> str:
    """A function's ARN from any name form the Lambda API accepts (name, partial ARN, ARN; qualified)."""
    name = unquote(name)
    if name.startswith("arn:"):
        arn = name
    elif ":function:" in name:
        arn = f"arn:aws:lambda:{region}:{name}"
    else:
        arn = f"arn:aws:lambda:{region}:{account_id}:function:{name}"
    if qualifier and arn.count(":") == 6:
        arn += f":{qualifier}"
    return arn


# ---------------------------------------------------------------------------------------------- answers


# JSON services that answer a denial with their query protocol's code, and the HTTP status they use.
_QUERY_COMPATIBLE = {"monitoring": "400 Bad Request", "sqs": "403 Forbidden"}


def denied_response(
    service: str, environ: Mapping[str, Any], denial: Denial
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The access-denied answer in the shape the service's protocol gives it (status, headers, body)."""
    request_id = str(uuid.uuid4())
    if service == "s3":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            f"<Message>{_xml_escape(denial.message(quote_resource=True))}</Message>"
            f"<RequestId>{request_id}</RequestId><HostId>{_digest(request_id, 40)}</HostId></Error>"
        ).encode()
        return "403 Forbidden", [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)], body
    if service == "lambda":
        body = json.dumps({"Message": denial.message(), "Type": "User"}).encode()
        headers = [
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", "AccessDeniedException"),
            ("x-amzn-RequestId", request_id),
        ]
        return "403 Forbidden", headers, body
    if environ.get("HTTP_X_AMZ_TARGET"):
        body = json.dumps(
            {"__type": "com.amazon.coral.service#AccessDeniedException", "Message": denial.message()}
        ).encode()
        headers = [
            ("Content-Type", environ.get("CONTENT_TYPE") or "application/x-amz-json-1.0"),
            ("x-amzn-RequestId", request_id),
        ]
        if service in _QUERY_COMPATIBLE:
            # Their JSON protocols are compatible with their query protocols, whose code is AccessDenied.
            headers.append(("x-amzn-query-error", "AccessDenied;Sender"))
        return _QUERY_COMPATIBLE.get(service, "400 Bad Request"), headers, body
    code = "AuthorizationError" if service == "sns" else "AccessDenied"
    body = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
        f"<Message>{_xml_escape(denial.message())}</Message></Error>"
        f"<RequestId>{request_id}</RequestId></ErrorResponse>"
    ).encode()
    return "403 Forbidden", [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], body


def _xml_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text, {'"': "&quot;"})
