"""The template's IAM roles with their identity-based policy documents, as CloudFormation would create them.

Roles come from SAM's own translator (the same ``SamTemplateValidator`` that ``sam validate`` runs): policy
templates such as ``DynamoDBCrudPolicy`` expand exactly as on deployment, ``Policies`` become the role's
inline policies and the managed policy ARNs SAM adds (``AWSLambdaBasicExecutionRole``, X-Ray) are read from
the AWS managed policy documents moto ships. Intrinsics resolve against the names and ARNs the local
cloud deployed (``stack.load_stack``'s helpers).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sam_local_cloud.stack import LocalStack, physical_ids, stack_return_values


@dataclass(frozen=True)
class Role:
    """An IAM role of the template with its identity-based policy documents, intrinsics resolved."""

    logical_id: str
    name: str
    arn: str
    documents: tuple[Mapping[str, Any], ...]
    # What each document is called in a denial's explanation: the inline policy's or managed policy's name.
    document_names: tuple[str, ...] = ()

    def document_name(self, index: int) -> str:
        return self.document_names[index] if index < len(self.document_names) else f"policy {index + 1}"


@dataclass
class StackRoles:
    """Which role each function and each state machine (by name) runs as."""

    functions: dict[str, Role] = field(default_factory=dict)
    state_machines: dict[str, Role] = field(default_factory=dict)
    # Every role of the template by ARN: what an API's integration ``credentials`` name, for one.
    by_arn: dict[str, Role] = field(default_factory=dict)
    # Things of the template the local IAM cannot honour, said once at start-up.
    notes: list[str] = field(default_factory=list)


def roles_document(roles: StackRoles) -> dict[str, Any]:
    """``roles`` as JSON: each role once by ARN, functions and state machines naming theirs."""
    every = {
        role.arn: role
        for role in [*roles.by_arn.values(), *roles.functions.values(), *roles.state_machines.values()]
    }
    return {
        "roles": [
            {
                "logical_id": role.logical_id,
                "name": role.name,
                "arn": role.arn,
                "documents": list(role.documents),
                "document_names": list(role.document_names),
            }
            for role in every.values()
        ],
        "by_arn": sorted(roles.by_arn),
        "functions": {name: role.arn for name, role in roles.functions.items()},
        "state_machines": {name: role.arn for name, role in roles.state_machines.items()},
        "notes": list(roles.notes),
    }


def roles_from_document(document: Mapping[str, Any]) -> StackRoles:
    """The ``StackRoles`` that ``roles_document`` wrote: what another process checks calls against without
    translating the template again."""
    every = {
        entry["arn"]: Role(
            entry["logical_id"],
            entry["name"],
            entry["arn"],
            tuple(entry["documents"]),
            tuple(entry["document_names"]),
        )
        for entry in document["roles"]
    }
    return StackRoles(
        functions={name: every[arn] for name, arn in document["functions"].items()},
        state_machines={name: every[arn] for name, arn in document["state_machines"].items()},
        by_arn={arn: every[arn] for arn in document["by_arn"]},
        notes=list(document["notes"]),
    )


def build_roles(stack: LocalStack) -> StackRoles:
    """The role of every function and state machine of the template, as CloudFormation would create it.

    ``load_stack`` has read the template and decided its conditions; SAM's translation into roles is the
    one step it does not take (it expands SAM's plugins only), so it is taken here.
    """
    values = {**stack.parameters, **_pseudo_parameters(stack)}
    translated = _translate(stack.template, stack.region, values)
    resources: dict[str, Any] = translated.get("Resources") or {}
    resolve = _resolver(translated, stack, values)

    roles: StackRoles = StackRoles()
    extra_documents = _attached_policy_documents(resources, resolve)
    by_arn: dict[str, Role] = {}
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        props = resolve(logical_id, resource.get("Properties") or {})
        name = str(resolve(logical_id, {"Ref": logical_id}))
        arn = str(resolve(logical_id, {"Fn::GetAtt": [logical_id, "Arn"]}))
        inline = props.get("Policies") or []
        documents = [policy["PolicyDocument"] for policy in inline]
        names = [str(policy.get("PolicyName", "")) for policy in inline]
        for policy_arn in props.get("ManagedPolicyArns") or []:
            document = extra_documents.managed.get(policy_arn) or aws_managed_policy_document(policy_arn)
            if document is None:
                roles.notes.append(
                    f"{logical_id}: managed policy {policy_arn} is unknown locally; it grants nothing"
                )
            else:
                documents.append(document)
                names.append(str(policy_arn).rpartition("/")[2])
        for policy_name, document in extra_documents.inline.get(name, []):
            documents.append(document)
            names.append(policy_name)
        by_arn[arn] = Role(logical_id, name, arn, tuple(documents), tuple(names))
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
    for child in stack.nested_stacks.values():
        nested = build_roles(child)  # a nested stack's roles come from its own template
        roles.functions.update(nested.functions)
        roles.state_machines.update(nested.state_machines)
        roles.by_arn.update(nested.by_arn)
        roles.notes.extend(nested.notes)
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


@cache
def _quiet_metrics_class() -> type[Any]:
    """SAM's metrics of its own work, for a publisher that does nothing, without the warning at collection.

    SAM keeps the last translation's metrics in a singleton that its decorated methods (the plugins
    ``load_stack`` runs too) keep adding to; its ``Metrics`` logs "There are unpublished metrics" when
    collected with any left, which the next cloud's start in the same process did every time.
    """
    from samtranslator.metrics.metrics import Metrics

    class QuietMetrics(Metrics):
        def __del__(self) -> None:
            """Nothing to publish: nothing reads SAM's metrics here."""

    return QuietMetrics


def _translate(raw: dict[str, Any], region: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The template as CloudFormation receives it: SAM resources turned into roles, functions, ..."""
    from samcli.lib.translate.sam_template_validator import SamTemplateValidator
    from samtranslator.metrics.metrics import DummyMetricsPublisher
    from samtranslator.translator.translator import Translator

    validator = SamTemplateValidator(
        copy.deepcopy(raw), _LocalManagedPolicies(), region=region, parameter_overrides=dict(values)
    )
    # What validator.get_translated_template_if_valid() does, without turning the result into YAML text
    # twice (once for a debug line that is not printed) to parse it back: half of a start's translation.
    validator._replace_local_codeuri()
    validator._replace_local_image()
    translator = Translator(
        metrics=_quiet_metrics_class()("ServerlessTransform", DummyMetricsPublisher()),
        managed_policy_map=None,
        sam_parser=validator.sam_parser,
        plugins=[],
        boto_session=validator.boto3_session,
    )
    translated: dict[str, Any] = translator.translate(
        sam_template=validator.sam_template,
        parameter_values=dict(values),
        get_managed_policy_map=validator._get_managed_policy_map,
    )
    return translated


def _resolver(translated: dict[str, Any], stack: LocalStack, values: Mapping[str, str]) -> Any:
    """Resolves a resource's property with the physical names and ARNs the local cloud deploys."""
    from samcli.lib.intrinsic_resolver.intrinsic_property_resolver import IntrinsicResolver
    from samcli.lib.intrinsic_resolver.intrinsics_symbol_table import IntrinsicsSymbolTable

    def resolver_for(symbols: Mapping[str, Any]) -> Any:
        table = IntrinsicsSymbolTable(logical_id_translator=dict(symbols), template=translated)
        return IntrinsicResolver(template=translated, symbol_resolver=table)

    resources: dict[str, Any] = translated.get("Resources") or {}
    # As load_stack does: a first pass with the parameters alone gives the names the template sets itself
    # (a bus's `Name: !Sub ...`, a queue's QueueName), from which every resource's Ref and attributes follow.
    first = resolver_for(values)
    named = {
        logical_id: {
            **body,
            "Properties": first.intrinsic_property_resolver(
                body.get("Properties") or {}, True, parent_function=logical_id
            ),
        }
        for logical_id, body in resources.items()
    }
    physical: dict[str, Any] = physical_ids(named, stack.stack_name, stack.region, stack.account_id)
    # `!GetAtt Child.Outputs.Name` of a nested stack, as load_stack resolved it.
    physical.update({name: stack_return_values(child) for name, child in stack.nested_stacks.items()})
    second = resolver_for({**values, **physical})

    def resolve(logical_id: str, node: Any) -> Any:
        if node is None:
            return None
        return second.intrinsic_property_resolver(node, True, parent_function=logical_id)

    return resolve


@dataclass
class _AttachedDocuments:
    managed: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # policy ARN -> document
    # role name -> (policy name, document)
    inline: dict[str, list[tuple[str, Mapping[str, Any]]]] = field(default_factory=dict)


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
        policy_name = str(props.get("PolicyName") or props.get("ManagedPolicyName") or logical_id)
        for role_name in props.get("Roles") or []:
            attached.inline.setdefault(str(role_name), []).append((policy_name, document))
    return attached


@cache
def _aws_managed_policies() -> dict[str, tuple[str, str]]:
    """AWS managed policies by ARN: (name, default version's document as JSON), from the copy moto keeps.

    Kept as text: parsed, moto's 1,300 documents held 12 MB of the local cloud's process for life, for the
    few a stack attaches; each is parsed when asked for.
    """
    from sam_local_cloud.moto_seam.services import aws_managed_policies_data

    policies: dict[str, tuple[str, str]] = {}
    for name, policy in json.loads(aws_managed_policies_data).items():
        arn = f"arn:aws:iam::aws:policy{policy.get('Path', '/')}{name}"
        policies[arn] = (name, json.dumps(policy["Document"], separators=(",", ":")))
    return policies


def aws_managed_policy_document(arn: str) -> Mapping[str, Any] | None:
    """The document of an AWS managed policy (any partition), or None if moto does not know it."""
    normalised = re.sub(r"^arn:[^:]+:", "arn:aws:", arn)
    entry = _aws_managed_policies().get(normalised)
    return json.loads(entry[1]) if entry else None


def statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    listed = document.get("Statement") or []
    return [listed] if isinstance(listed, dict) else list(listed)


def _statements_not_evaluated(roles: Iterable[Role]) -> Iterator[str]:
    for role in roles:
        for document in role.documents:
            if any("NotResource" in statement for statement in statements(document)):
                yield f"{role.logical_id}: a statement with NotResource is not evaluated locally"
