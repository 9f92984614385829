"""State machines: the definition read and substituted as CloudFormation does, and SAM's ``Logging``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sam_local_cloud.stack.model import LocalStack, StateMachineSpec, TemplateError
from sam_local_cloud.stack.yaml_text import safe_load

# The role a state machine runs with when IAM is not enforced, in the first cloud's account.
LOCAL_ROLE_ARN = "arn:aws:iam::123456789012:role/sam-local-cloud-state-machine"


def local_role_arn(account_id: str) -> str:
    """The role a state machine of ``account_id`` runs with when IAM is not enforced: in its own account,
    as the interpreter finds a Task's cloud by its role's account."""
    return LOCAL_ROLE_ARN.replace(":123456789012:", f":{account_id}:")


def definition_refusal(definition: str) -> str | None:
    """Why the local cloud's CreateStateMachine would refuse ``definition`` (an ASL document as text), or
    None if it takes it: moto's parser with the cloud's interpreter patches, as a deploy puts it to them.

    For a tool that deploys many definitions at once (one refused would stop the whole deploy) or checks
    them before a deploy; it loads moto's Step Functions in this process.
    """
    import logging

    from sam_local_cloud.moto_seam.installers import install_step_functions
    from sam_local_cloud.moto_seam.interpreter_internals import validate_definition

    install_step_functions()
    # The parser logs a warning per definition for fields it ignores; the local cloud silences moto too.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    try:
        validate_definition(definition)
    except Exception as error:
        message = str(getattr(error, "message", "") or error)
        return f"CreateStateMachine rejected the definition: {message.splitlines()[0][:160]}"
    return None


def as_serverless_machine(props: Mapping[str, Any]) -> dict[str, Any]:
    """An AWS::StepFunctions::StateMachine's properties under the names AWS::Serverless::StateMachine uses."""
    converted: dict[str, Any] = {
        "Type": props.get("StateMachineType", "STANDARD"),
        "DefinitionSubstitutions": props.get("DefinitionSubstitutions") or {},
    }
    if "DefinitionString" in props:
        converted["DefinitionText"] = props["DefinitionString"]
    elif "Definition" in props:
        converted["Definition"] = props["Definition"]
    elif "DefinitionS3Location" in props:
        converted["DefinitionUri"] = props["DefinitionS3Location"]
    return converted


def add_state_machine(stack: LocalStack, machine: StateMachineSpec) -> None:
    stack.state_machines.append(machine)
    if machine.logging and machine.type != "EXPRESS":
        stack.not_honoured.append(
            f"{machine.logical_id}.Logging: delivered to CloudWatch Logs for EXPRESS state machines only"
        )


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


def substitute_definition(text: str, substitutions: Mapping[str, Any]) -> str:
    """Replace `${Name}` placeholders as Step Functions does: in the raw text, so numbers may be unquoted."""

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(substitutions[key]) if key in substitutions else match.group(0)

    return _PLACEHOLDER.sub(replace, text)


def state_machine_spec(
    logical_id: str, ids: Mapping[str, str], props: Mapping[str, Any], base_dir: Path
) -> StateMachineSpec:
    if "DefinitionUri" in props:
        uri = props["DefinitionUri"]
        if not isinstance(uri, str):
            raise TemplateError(f"{logical_id}: DefinitionUri must be a local file to run locally")
        path = base_dir / uri
        if not path.is_file():
            # `sam build` and `sam deploy` stop here too ("... does not exist"); a differently cased file
            # beside it is found only by a case-insensitive file system.
            raise TemplateError(f"{logical_id}: DefinitionUri {uri!r} does not exist in {base_dir}")
        text = path.read_text()
    elif "Definition" in props:
        text = json.dumps(props["Definition"])
    elif isinstance(props.get("DefinitionText"), str):
        text = props["DefinitionText"]
    else:
        raise TemplateError(f"{logical_id}: no Definition or DefinitionUri")
    definition = _parse_definition(
        logical_id, substitute_definition(text, props.get("DefinitionSubstitutions") or {})
    )
    return StateMachineSpec(
        logical_id=logical_id,
        name=ids["Name"],
        arn=ids["Arn"],
        type=str(props.get("Type", "STANDARD")),
        definition=definition,
        logging=logging_configuration(props.get("Logging")),
    )


def logging_configuration(logging: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """SAM's ``Logging`` (CloudFormation's LoggingConfiguration) in the API's shape."""
    if not logging:
        return None
    include = logging.get("IncludeExecutionData", False)
    return {
        "level": str(logging.get("Level", "OFF")),
        "includeExecutionData": include is True or str(include).lower() == "true",
        "destinations": [
            {"cloudWatchLogsLogGroup": {"logGroupArn": str(group.get("LogGroupArn"))}}
            for destination in logging.get("Destinations") or []
            if (group := destination.get("CloudWatchLogsLogGroup"))
        ],
    }


def _parse_definition(logical_id: str, substituted: str) -> str:
    """The definition's JSON text, read as CloudFormation reads a DefinitionUri file: after substitution,
    as JSON, else as YAML (re-serialised to JSON)."""
    leftover = sorted(set(_PLACEHOLDER.findall(substituted)))
    hint = f" (unresolved placeholders: {', '.join(leftover)})" if leftover else ""
    try:
        json.loads(substituted)
        return substituted
    except json.JSONDecodeError as json_error:
        problem = f"not valid JSON after substitution{hint}: {json_error}"
    try:
        parsed = safe_load(substituted)
    except yaml.YAMLError as yaml_error:
        raise TemplateError(
            f"{logical_id}: definition is {problem}; nor valid YAML: {yaml_error}"
        ) from yaml_error
    if not isinstance(parsed, dict):
        raise TemplateError(f"{logical_id}: definition is {problem}; nor a YAML mapping")
    if leftover:
        # A YAML file reads a leftover placeholder as a string; it must not reach Step Functions unnoticed.
        raise TemplateError(f"{logical_id}: definition has unresolved placeholders: {', '.join(leftover)}")
    return json.dumps(parsed)
