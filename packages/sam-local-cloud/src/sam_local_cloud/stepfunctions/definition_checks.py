"""The checks CreateStateMachine and UpdateStateMachine make that moto's parser does not, in AWS's words.

AWS answers a definition it refuses with InvalidDefinition, "Invalid State Machine Definition: '<problem>,
<problem>'", each problem written ``<CODE>: <message> at <location>``. The problems checked here, each a
general rule of the language (never a case):

- schema problems (``SCHEMA_VALIDATION_FAILED``): a ``Type`` that is no state type; a Task, Pass, Wait,
  Parallel or Map state with neither ``Next`` nor ``End: true`` (or with both); an ``InputPath``,
  ``OutputPath``, ``ResultPath`` or ``ItemsPath`` that is no JSONPath; a ``<field>.$`` whose value is
  neither a JSONPath nor an intrinsic function; and, in JSONata states, a ``{% ... %}`` expression that
  does not parse (``INVALID_JSONATA_EXPRESSION``, the parser's message without its code);
- the graph, checked once the schema holds (as AWS's validator does): a ``StartAt``, ``Next``,
  ``Default``, ``Choices[i].Next`` or ``Catch[i].Next`` naming no state of its own container
  (``MISSING_TRANSITION_TARGET: Missing 'Next' target: <name>``, whatever the field), a state that
  nothing reachable from ``StartAt`` leads to (``MISSING_TRANSITION_TARGET: State "<name>" is not
  reachable.``), and a top level without any terminal state (``MISSING_END_STATE: Workflow has no
  terminal state at null``), which AWS reports instead of the unreachable states.

Loops are accepted, as AWS accepts them: a Choice looping back to an earlier state is an ordinary
workflow, and a loop inside a Map processor or a Parallel branch with no terminal state is accepted too
(AWS checks the terminal state at the top level only).

The graph messages and locations are those AWS returned to ValidateStateMachineDefinition and
CreateStateMachine in third-party measurements (floci-io/floci#2786); the wording of the schema messages
for ``Type`` and for a missing ``Next``/``End`` is AWS's schema wording for the same kind of field, not a
recording of these cases (docs/fidelity.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from jsonata import Jsonata
from jsonata.jexception import JException

from sam_local_cloud.json_types import JsonValue
from sam_local_cloud.stepfunctions.jsonpath_syntax import JsonPathSyntaxError, compile_path

STATE_TYPES = ("Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map")
# The states that move on: each must say where to (Next) or that it ends the run (End: true).
TRANSITIONING_TYPES = frozenset({"Task", "Pass", "Wait", "Parallel", "Map"})
TERMINAL_TYPES = frozenset({"Succeed", "Fail"})
PATH_FIELDS = ("InputPath", "OutputPath", "ResultPath", "ItemsPath")
# The JSONPath state fields whose ``<key>.$`` entries are paths or intrinsic functions.
PAYLOAD_TEMPLATE_FIELDS = ("Parameters", "ResultSelector", "ItemSelector", "Assign")
# Fields of a JSONata state that never hold an expression (names, the state's kind, its children).
NOT_EXPRESSIONS = frozenset(
    {"Type", "Next", "Default", "End", "Comment", "Resource", "QueryLanguage", "StartAt", "States"}
)
CHILD_PROGRAMS = ("ItemProcessor", "Iterator")
# ``$name`` at the start of a path: a workflow variable, read as a path from its value.
_VARIABLE_PREFIX = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*")
_EXPRESSION = re.compile(r"^\{%(.*)%\}$", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    # None where AWS names no place (a workflow without a terminal state): it prints "at null".
    location: str | None

    def __str__(self) -> str:
        return f"{self.code}: {self.message} at {self.location or 'null'}"


def invalid_definition_message(problems: list[Problem]) -> str:
    return "Invalid State Machine Definition: '" + ", ".join(str(problem) for problem in problems) + "'"


def definition_problems(definition: Mapping[str, JsonValue]) -> list[Problem]:
    """What AWS refuses in this definition, in the order AWS lists it; empty when it would accept it."""
    programs = list(_programs(definition, ""))
    schema = [
        problem
        for prefix, program in programs
        for name, state in _states(program)
        for problem in _state_schema_problems(
            f"{prefix}/States/{name}", state, _query_language(definition, state)
        )
    ]
    if schema:
        return schema
    problems = [problem for prefix, program in programs for problem in _missing_targets(prefix, program)]
    if not _has_terminal_state(definition):
        return [*problems, Problem("MISSING_END_STATE", "Workflow has no terminal state", None)]
    for prefix, program in programs:
        problems.extend(_unreachable_states(prefix, program))
    return problems


# --- Programs and states -------------------------------------------------------------------------------


def _programs(program: Mapping[str, JsonValue], prefix: str) -> Iterator[tuple[str, Mapping[str, JsonValue]]]:
    """The top-level program and every program nested in it (Map processors, Parallel branches), with
    the location prefix AWS prints for their states, depth first."""
    yield prefix, program
    for name, state in _states(program):
        path = f"{prefix}/States/{name}"
        for key in CHILD_PROGRAMS:
            child = state.get(key)
            if isinstance(child, Mapping):
                yield from _programs(child, f"{path}/{key}")
        branches = state.get("Branches")
        if isinstance(branches, list):
            for index, branch in enumerate(branches):
                if isinstance(branch, Mapping):
                    yield from _programs(branch, f"{path}/Branches[{index}]")


def _states(program: Mapping[str, JsonValue]) -> Iterator[tuple[str, Mapping[str, JsonValue]]]:
    states = program.get("States")
    if not isinstance(states, Mapping):
        return
    for name, state in states.items():
        # An entry that is not an object is refused before these checks (``definitions``).
        if isinstance(state, Mapping):
            yield str(name), state


def _query_language(definition: Mapping[str, JsonValue], state: Mapping[str, JsonValue]) -> str:
    # A state inside a Map processor or a Parallel branch inherits the machine's language, not the
    # Map's or the Parallel's (measured on AWS, floci-io/floci#2968).
    language = state.get("QueryLanguage", definition.get("QueryLanguage", "JSONPath"))
    return str(language)


# --- Schema ----------------------------------------------------------------------------------------------


def _state_schema_problems(path: str, state: Mapping[str, JsonValue], language: str) -> list[Problem]:
    state_type = state.get("Type")
    if state_type not in STATE_TYPES:
        return [_schema(f"Value should be one of the following: [{', '.join(STATE_TYPES)}]", f"{path}/Type")]
    problems = _next_or_end(path, state) if state_type in TRANSITIONING_TYPES else []
    if language == "JSONata":
        problems.extend(_jsonata_problems(path, state))
    else:
        problems.extend(_path_problems(path, state))
    return problems


def _schema(message: str, location: str) -> Problem:
    return Problem("SCHEMA_VALIDATION_FAILED", message, location)


def _next_or_end(path: str, state: Mapping[str, JsonValue]) -> list[Problem]:
    has_next = "Next" in state
    ends = state.get("End") is True
    if has_next and ends:
        return [_schema("There should only be one of the following fields: [Next, End]", path)]
    if not has_next and not ends:
        return [_schema("This object should have only one of the following fields: [Next, End]", path)]
    return []


def _path_problems(path: str, state: Mapping[str, JsonValue]) -> list[Problem]:
    problems = [
        _schema("Value must be a valid JSONPath.", f"{path}/{name}")
        for name in PATH_FIELDS
        if name in state and state[name] is not None and not _is_path(state[name])
    ]
    catchers = state.get("Catch")
    if isinstance(catchers, list):
        for index, catcher in enumerate(catchers):
            result_path = catcher.get("ResultPath") if isinstance(catcher, Mapping) else None
            if result_path is not None and not _is_path(result_path):
                problems.append(
                    _schema("Value must be a valid JSONPath.", f"{path}/Catch[{index}]/ResultPath")
                )
    for name in PAYLOAD_TEMPLATE_FIELDS:
        problems.extend(_template_problems(state.get(name), f"{path}/{name}"))
    for holder in ("ItemReader", "ResultWriter"):
        configuration = state.get(holder)
        if isinstance(configuration, Mapping):
            problems.extend(
                _template_problems(configuration.get("Parameters"), f"{path}/{holder}/Parameters")
            )
    return problems


def _template_problems(template: JsonValue, location: str) -> list[Problem]:
    """Each ``<key>.$`` of a payload template (at any depth) whose value is neither a path nor an
    intrinsic function call."""
    if isinstance(template, list):
        return [problem for item in template for problem in _template_problems(item, location)]
    if not isinstance(template, Mapping):
        return []
    problems = []
    for key, value in template.items():
        if isinstance(key, str) and key.endswith(".$"):
            if not (isinstance(value, str) and (value.startswith("States.") or _is_path(value))):
                message = f"The value for the field '{key}' must be a valid JSONPath"
                problems.append(_schema(message, location))
        else:
            problems.extend(_template_problems(value, f"{location}/{key}"))
    return problems


def _is_path(value: JsonValue) -> bool:
    """A JSONPath as Step Functions reads one: from the input (``$``), the context object (``$$``) or a
    variable (``$name``)."""
    if not isinstance(value, str) or not value.startswith("$"):
        return False
    # The context object and a variable are read as paths from their own root.
    relative = value[1:] if value.startswith("$$") else _VARIABLE_PREFIX.sub("$", value, count=1)
    try:
        compile_path(relative)
    except JsonPathSyntaxError:
        return False
    return True


def _jsonata_problems(path: str, state: Mapping[str, JsonValue]) -> list[Problem]:
    return [
        Problem("INVALID_JSONATA_EXPRESSION", message, location)
        for location, expression in _expressions(state, path)
        if (message := _jsonata_syntax_error(expression)) is not None
    ]


def _expressions(value: JsonValue | Mapping[str, JsonValue], location: str) -> Iterator[tuple[str, str]]:
    """Every ``{% ... %}`` string of a JSONata state's own fields (its children are states of their own)."""
    if isinstance(value, str):
        match = _EXPRESSION.match(value.strip())
        if match is not None:
            yield location, match.group(1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in NOT_EXPRESSIONS and key not in CHILD_PROGRAMS and key != "Branches":
                yield from _expressions(item, f"{location}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _expressions(item, f"{location}[{index}]")


def _jsonata_syntax_error(expression: str) -> str | None:
    try:
        Jsonata(expression)
    except JException as refused:
        # AWS prints the parser's message without its code (S0207 ...).
        return str(refused) or "Invalid JSONata expression"
    return None


# --- The graph -------------------------------------------------------------------------------------------


def _transitions(path: str, state: Mapping[str, JsonValue]) -> Iterator[tuple[str, JsonValue]]:
    """Where a state can go next, with the location of the field that says so."""
    if "Next" in state:
        yield f"{path}/Next", state["Next"]
    if "Default" in state:
        yield f"{path}/Default", state["Default"]
    for field_name in ("Choices", "Catch"):
        rules = state.get(field_name)
        if isinstance(rules, list):
            for index, rule in enumerate(rules):
                if isinstance(rule, Mapping) and "Next" in rule:
                    yield f"{path}/{field_name}[{index}]/Next", rule["Next"]


def _missing_target(target: JsonValue, location: str) -> Problem:
    return Problem("MISSING_TRANSITION_TARGET", f"Missing 'Next' target: {target}", location)


def _missing_targets(prefix: str, program: Mapping[str, JsonValue]) -> list[Problem]:
    names = {name for name, _ in _states(program)}
    problems = []
    if program.get("StartAt") not in names:
        problems.append(_missing_target(program.get("StartAt"), f"{prefix}/StartAt"))
    for name, state in _states(program):
        for location, target in _transitions(f"{prefix}/States/{name}", state):
            if target not in names:
                problems.append(_missing_target(target, location))
    return problems


def _unreachable_states(prefix: str, program: Mapping[str, JsonValue]) -> list[Problem]:
    states = dict(_states(program))
    reached: set[str] = set()
    pending = [program.get("StartAt")]
    while pending:
        name = pending.pop()
        if not isinstance(name, str) or name in reached or name not in states:
            continue
        reached.add(name)
        pending.extend(target for _, target in _transitions("", states[name]))
    return [
        Problem("MISSING_TRANSITION_TARGET", f'State "{name}" is not reachable.', f"{prefix}/States/{name}")
        for name in states
        if name not in reached
    ]


def _has_terminal_state(definition: Mapping[str, JsonValue]) -> bool:
    return any(
        state.get("End") is True or state.get("Type") in TERMINAL_TYPES for _, state in _states(definition)
    )
