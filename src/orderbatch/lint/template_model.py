"""What a SAM or CloudFormation template says about Lambda functions and state machines.

Shared by the cfn-lint rules and the doctor: finds every state machine (SAM or plain CloudFormation,
inline ``Definition``, ``DefinitionString`` built with ``Fn::Sub``/``Fn::Join``, or a local
``DefinitionUri`` file), every function with its effective settings (SAM ``Globals.Function`` applied),
and resolves the ``${Name}`` placeholders that connect a Task to its function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SAM_FUNCTION = "AWS::Serverless::Function"
LAMBDA_FUNCTION = "AWS::Lambda::Function"
SAM_STATE_MACHINE = "AWS::Serverless::StateMachine"
STATE_MACHINE = "AWS::StepFunctions::StateMachine"

# Lambda's default when a function declares no Timeout.
DEFAULT_FUNCTION_TIMEOUT_SECONDS = 3

# Metadata that declares a function idempotent by means the linter cannot see.
OPT_OUT_METADATA_KEY = "orderbatch"

_PLACEHOLDER = re.compile(r"\$\{([^}!][^}]*)\}")
_WHOLE_PLACEHOLDER = re.compile(r"^\$\{([^}!][^}]*)\}$")
_LITERAL_FUNCTION_ARN = re.compile(r"^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)(?::[^:]+)?$")

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class LambdaFunction:
    """One function resource, with its effective settings (SAM Globals merged)."""

    logical_id: str
    resource_type: str
    properties: Mapping[str, object]
    metadata: Mapping[str, object]
    parameters: Mapping[str, object] = field(repr=False)

    @property
    def cfn_path(self) -> Path_:
        return ("Resources", self.logical_id)

    @property
    def timeout_seconds(self) -> int | None:
        """The function's timeout; None when it is not a literal the template resolves."""
        if "Timeout" not in self.properties:
            return DEFAULT_FUNCTION_TIMEOUT_SECONDS
        return resolve_int(self.properties["Timeout"], {}, self.parameters)

    @property
    def reserved_concurrency(self) -> int | None:
        if "ReservedConcurrentExecutions" not in self.properties:
            return None
        return resolve_int(self.properties["ReservedConcurrentExecutions"], {}, self.parameters)

    @property
    def function_name(self) -> str | None:
        name = self.properties.get("FunctionName")
        return name if isinstance(name, str) else None

    @property
    def environment_variables(self) -> Mapping[str, object]:
        environment = self.properties.get("Environment")
        variables = environment.get("Variables") if isinstance(environment, Mapping) else None
        return variables if isinstance(variables, Mapping) else {}

    @property
    def durable_config(self) -> Mapping[str, object] | None:
        """``DurableConfig`` of a Lambda durable function (SAM and CloudFormation spell it alike)."""
        config = self.properties.get("DurableConfig")
        return config if isinstance(config, Mapping) else None

    @property
    def declares_idempotent(self) -> bool:
        ours = self.metadata.get(OPT_OUT_METADATA_KEY)
        return isinstance(ours, Mapping) and ours.get("idempotent") in (True, "true", "True")


@dataclass(frozen=True)
class StateMachine:
    """One state machine resource and its parsed definition.

    ``definition`` is None when it cannot be read: ``problem`` then says why, unless the definition
    is simply not local (an S3 location), which is not a problem.
    """

    logical_id: str
    resource_type: str
    definition_property: str
    definition: Mapping[str, Any] | None
    substitutions: Mapping[str, object]
    problem: str | None = None
    source_file: Path | None = None
    parameters: Mapping[str, object] = field(default_factory=dict, repr=False)
    """Template parameter defaults, for substitutions that are a ``Ref`` to a parameter."""

    def resolve_int(self, value: object) -> int | None:
        return resolve_int(value, self.substitutions, self.parameters)

    def resolve_number(self, value: object) -> float | None:
        return resolve_number(value, self.substitutions, self.parameters)

    @property
    def cfn_path(self) -> Path_:
        return ("Resources", self.logical_id, "Properties", self.definition_property)


@dataclass(frozen=True)
class TemplateModel:
    template_path: Path | None
    functions: Mapping[str, LambdaFunction]
    state_machines: tuple[StateMachine, ...]
    parameters: Mapping[str, object]


def build_model(template: Mapping[str, object], template_path: str | Path | None = None) -> TemplateModel:
    """Read functions and state machines out of a decoded template (dict, as cfn-lint decodes it)."""
    path = Path(template_path) if template_path else None
    resources = template.get("Resources")
    resources = resources if isinstance(resources, Mapping) else {}
    parameters = _parameter_defaults(template)
    function_globals = _function_globals(template)

    functions: dict[str, LambdaFunction] = {}
    state_machines: list[StateMachine] = []
    for logical_id, resource in resources.items():
        if not isinstance(resource, Mapping):
            continue
        resource_type = resource.get("Type")
        properties = resource.get("Properties")
        properties = properties if isinstance(properties, Mapping) else {}
        metadata = resource.get("Metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        if resource_type == SAM_FUNCTION:
            effective = _merge_globals(function_globals, properties, resource.get("IgnoreGlobals"))
            functions[logical_id] = LambdaFunction(logical_id, resource_type, effective, metadata, parameters)
        elif resource_type == LAMBDA_FUNCTION:
            functions[logical_id] = LambdaFunction(
                logical_id, resource_type, properties, metadata, parameters
            )
        elif resource_type in (SAM_STATE_MACHINE, STATE_MACHINE):
            state_machine = _read_state_machine(logical_id, resource_type, properties, path, parameters)
            if state_machine is not None:
                state_machines.append(state_machine)
    return TemplateModel(path, functions, tuple(state_machines), parameters)


def read_template_file(template_path: str | Path) -> TemplateModel:
    """Decode a template file (YAML short-form tags included) with cfn-lint's decoder."""
    from cfnlint.decode import decode

    template, errors = decode(str(template_path))
    if errors or not isinstance(template, Mapping):
        messages = "; ".join(error.message for error in errors or [])
        raise ValueError(f"cannot read template {template_path}: {messages or 'not a mapping'}")
    return build_model(template, template_path)


# --- value resolution ---------------------------------------------------------------------------


def resolve_int(
    value: object, substitutions: Mapping[str, object], parameters: Mapping[str, object]
) -> int | None:
    """An integer from a literal, a numeric string, a ``${Name}`` substitution or a parameter default."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        whole = _WHOLE_PLACEHOLDER.match(value)
        if whole:
            name = whole.group(1)
            if name in substitutions:
                return resolve_int(substitutions[name], {}, parameters)
            return resolve_int(parameters.get(name), {}, {})
        try:
            return int(value)
        except ValueError:
            return None
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        return resolve_int(parameters.get(str(value["Ref"])), {}, {})
    return None


def resolve_number(
    value: object, substitutions: Mapping[str, object], parameters: Mapping[str, object]
) -> float | None:
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    as_int = resolve_int(value, substitutions, parameters)
    return float(as_int) if as_int is not None else None


def function_reference(
    value: object, substitutions: Mapping[str, object], functions: Mapping[str, LambdaFunction]
) -> str | None:
    """The logical ID of the template function that ``value`` names, if any.

    Understands ``${Name}`` placeholders (DefinitionSubstitutions, ``Fn::Sub`` variables or the
    implicit ``${Logical.Arn}``), ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::Join`` and a literal
    function ARN or name matching a function's ``FunctionName``.
    """
    return _function_reference(value, substitutions, functions, depth=0)


def _function_reference(
    value: object, substitutions: Mapping[str, object], functions: Mapping[str, LambdaFunction], depth: int
) -> str | None:
    if depth > 8:  # substitutions that refer to each other in a loop
        return None
    if isinstance(value, Mapping) and len(value) == 1:
        return _intrinsic_function_reference(value, substitutions, functions, depth)
    if not isinstance(value, str):
        return None
    for name in _PLACEHOLDER.findall(value):
        if name in substitutions:
            found = _function_reference(substitutions[name], {}, functions, depth + 1)
        else:
            found = _logical_function(name, functions)
        if found:
            return found
    literal = _LITERAL_FUNCTION_ARN.match(value)
    name = literal.group(1) if literal else value.split(":")[0]
    for function in functions.values():
        if function.function_name is not None and function.function_name == name:
            return function.logical_id
    return None


def _intrinsic_function_reference(
    value: Mapping[str, object],
    substitutions: Mapping[str, object],
    functions: Mapping[str, LambdaFunction],
    depth: int,
) -> str | None:
    ((key, argument),) = value.items()
    if key == "Ref" and isinstance(argument, str):
        return _logical_function(argument, functions)
    if key == "Fn::GetAtt":
        target = argument[0] if isinstance(argument, list) and argument else argument
        return _logical_function(str(target), functions)
    if key == "Fn::Sub":
        text, variables = _sub_parts(argument)
        return _function_reference(text, {**substitutions, **variables}, functions, depth + 1)
    if key == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
        parts = argument[1] if isinstance(argument[1], list) else []
        for part in parts:
            found = _function_reference(part, substitutions, functions, depth + 1)
            if found:
                return found
    return None


def _logical_function(name: str, functions: Mapping[str, LambdaFunction]) -> str | None:
    # "Fn", "Fn.Arn", and SAM's "Fn.Alias" all name the function resource Fn.
    logical_id = name.split(".")[0]
    return logical_id if logical_id in functions else None


def _sub_parts(argument: object) -> tuple[str, Mapping[str, object]]:
    if isinstance(argument, str):
        return argument, {}
    if isinstance(argument, list) and argument and isinstance(argument[0], str):
        variables = argument[1] if len(argument) > 1 and isinstance(argument[1], Mapping) else {}
        return argument[0], variables
    return "", {}


# --- templates ----------------------------------------------------------------------------------


def _parameter_defaults(template: Mapping[str, object]) -> dict[str, object]:
    parameters = template.get("Parameters")
    if not isinstance(parameters, Mapping):
        return {}
    return {
        name: spec["Default"]
        for name, spec in parameters.items()
        if isinstance(spec, Mapping) and "Default" in spec
    }


def _function_globals(template: Mapping[str, object]) -> Mapping[str, object]:
    globals_section = template.get("Globals")
    if not isinstance(globals_section, Mapping):
        return {}
    function_globals = globals_section.get("Function")
    return function_globals if isinstance(function_globals, Mapping) else {}


def _merge_globals(
    global_properties: Mapping[str, object], local: Mapping[str, object], ignore: object
) -> Mapping[str, object]:
    """SAM's merge: local scalars win, maps merge key by key. Safe to apply to an already merged resource."""
    if ignore == "*":
        return local
    ignored = set(ignore) if isinstance(ignore, list) else set()
    merged: dict[str, object] = {key: value for key, value in global_properties.items() if key not in ignored}
    for key, value in local.items():
        merged[key] = _merge_value(merged[key], value) if key in merged else value
    return merged


def _merge_value(global_value: object, local_value: object) -> object:
    if isinstance(global_value, Mapping) and isinstance(local_value, Mapping):
        if _is_intrinsic(global_value) or _is_intrinsic(local_value):
            return local_value
        merged = dict(global_value)
        for key, value in local_value.items():
            merged[key] = _merge_value(merged[key], value) if key in merged else value
        return merged
    return local_value


def _is_intrinsic(value: Mapping[str, object]) -> bool:
    return len(value) == 1 and next(iter(value)).startswith(("Fn::", "Ref", "Condition"))


def _read_state_machine(
    logical_id: str,
    resource_type: str,
    properties: Mapping[str, object],
    template_path: Path | None,
    parameters: Mapping[str, object],
) -> StateMachine | None:
    substitutions = properties.get("DefinitionSubstitutions")
    substitutions = dict(substitutions) if isinstance(substitutions, Mapping) else {}

    def machine(
        prop: str, definition: object, problem: str | None = None, source_file: Path | None = None
    ) -> StateMachine:
        readable = definition if isinstance(definition, Mapping) else None
        if readable is None and problem is None and definition is not None:
            problem = f"{prop} is not a JSON object"
        return StateMachine(
            logical_id, resource_type, prop, readable, substitutions, problem, source_file, parameters
        )

    if "Definition" in properties:
        return machine("Definition", properties["Definition"])
    if "DefinitionString" in properties:
        try:
            text, variables = _definition_text(properties["DefinitionString"])
        except ValueError as error:
            return machine("DefinitionString", None, str(error))
        substitutions.update(variables)
        return machine("DefinitionString", *_parse_definition_text(text, "DefinitionString"))
    if "DefinitionUri" in properties:
        return _read_definition_uri(properties["DefinitionUri"], template_path, machine)
    if "DefinitionS3Location" in properties:
        return machine("DefinitionS3Location", None)
    return None


def _read_definition_uri(
    uri: object, template_path: Path | None, machine: Callable[..., StateMachine]
) -> StateMachine:
    if not isinstance(uri, str) or uri.startswith("s3://"):
        return machine("DefinitionUri", None)  # in S3: nothing local to read, not a mistake
    base = template_path.parent if template_path else Path.cwd()
    file_path = (base / uri).resolve()
    try:
        text = file_path.read_text(encoding="utf-8")
    except OSError as error:
        return machine("DefinitionUri", None, f"cannot read {uri}: {error.strerror}", source_file=file_path)
    if file_path.suffix in (".yaml", ".yml"):
        try:
            return machine("DefinitionUri", yaml.safe_load(text), source_file=file_path)
        except yaml.YAMLError as error:
            return machine("DefinitionUri", None, f"{uri} is not valid YAML: {error}", source_file=file_path)
    definition, problem = _parse_definition_text(text, uri)
    return machine("DefinitionUri", definition, problem, source_file=file_path)


def _definition_text(value: object) -> tuple[str, dict[str, object]]:
    """The JSON text of a DefinitionString, keeping ``${Name}`` placeholders and their variables."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, Mapping) and set(value) == {"Fn::Sub"}:
        text, sub_variables = _sub_parts(value["Fn::Sub"])
        return text, dict(sub_variables)
    if isinstance(value, Mapping) and set(value) == {"Fn::Join"}:
        argument = value["Fn::Join"]
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[1], list)):
            raise ValueError("DefinitionString Fn::Join is not [delimiter, [parts]]")
        delimiter = argument[0] if isinstance(argument[0], str) else ""
        pieces: list[str] = []
        variables: dict[str, object] = {}
        for index, part in enumerate(argument[1]):
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and set(part) == {"Fn::Sub"}:
                part_text, part_variables = _sub_parts(part["Fn::Sub"])
                pieces.append(part_text)
                variables.update(part_variables)
            else:
                # An intrinsic (Ref, GetAtt...) becomes a placeholder that resolves back to it.
                name = f"Fn::Join part {index}"
                variables[name] = part
                pieces.append("${" + name + "}")
        return delimiter.join(pieces), variables
    raise ValueError("DefinitionString is neither a string, Fn::Sub nor Fn::Join")


def _parse_definition_text(text: str, label: str) -> tuple[Mapping[str, object] | None, str | None]:
    try:
        parsed = json.loads(_quote_bare_placeholders(text))
    except json.JSONDecodeError as error:
        return None, f"{label} is not valid JSON: {error}"
    if not isinstance(parsed, Mapping):
        return None, f"{label} is not a JSON object"
    return parsed, None


def _quote_bare_placeholders(text: str) -> str:
    """Quote ``${Name}`` outside JSON strings (``"MaxConcurrency": ${Limit}``) so the text parses."""
    out: list[str] = []
    in_string = False
    index = 0
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("${", index) and (end := text.find("}", index)) != -1:
            out.append(json.dumps(text[index : end + 1]))
            index = end
        else:
            out.append(char)
        index += 1
    return "".join(out)
