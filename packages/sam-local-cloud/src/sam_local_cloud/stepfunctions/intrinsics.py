"""Intrinsic functions (``States.Format(...)``) read and evaluated as Step Functions does.

moto reads an invocation with an ANTLR grammar that has no ``null`` and a float rule its reader cannot
build, and it unescapes string literals its own way. This module reads invocations itself and builds
moto's function components from them:

- the invocation is JSON text in the definition, so JSON's escapes are decoded first; then, inside a
  single-quoted literal, ``\\'``, ``\\{``, ``\\}`` and ``\\\\`` stand for ``'``, ``{``, ``}`` and ``\\``
  (AWS's reserved characters), ``\\"`` for ``"``; a backslash ending the invocation is an error;
- arguments are literals (strings, integers, decimals, negative numbers, ``true``, ``false``, ``null``),
  paths (``$.x``, ``$$.Execution.Id``, ``$variable.field``) and nested ``States.*`` calls:
  ``States.Array('Foo', 2022, $.inputObject, null)`` keeps the null, which moto dropped, and
  ``States.Array(1.5)`` no longer fails CreateStateMachine;
- ``States.Format`` fills each ``{}`` of its template in turn and keeps escaped braces (``\\{\\}``) as text;
  a template and argument count that disagree, and arguments an intrinsic cannot take (a null to
  ``States.Hash``, ``States.StringSplit`` or ``States.MathAdd``, an index past the array's end), fail the
  state with States.Runtime, as AWS reports intrinsic errors (``States.IntrinsicFailure`` is reserved),
  with a cause that names the function instead of a Python exception;
- ``States.ArrayUnique`` and ``States.ArrayContains`` compare JSON values (``true`` is not ``1``, objects
  and arrays by content), where moto used Python's equality and could not hash objects.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Environment

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_FUNCTION_NAME = re.compile(r"States\.([A-Za-z0-9]+)")
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
_ESCAPED = {"'": "'", "\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


class IntrinsicSyntaxError(ValueError):
    """An invocation that is not a valid intrinsic function call."""


class IntrinsicFunctionError(Exception):
    """An intrinsic function that cannot compute a value from its arguments."""


@dataclass(frozen=True)
class FormatTemplate:
    """A string literal split at its unescaped ``{}``: what ``States.Format`` fills in."""

    pieces: tuple[str, ...]


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def peek(self) -> str:
        return self.text[self.position : self.position + 1]

    def skip_spaces(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def take(self, expected: str) -> None:
        self.skip_spaces()
        if not self.text.startswith(expected, self.position):
            found = self.text[self.position :] or "the end"
            raise IntrinsicSyntaxError(f"expected {expected!r} at {found!r} in {self.text!r}")
        self.position += len(expected)


def _read_function(reader: _Reader) -> Any:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ArgumentList,
        StatesFunctionFactory,
        StatesFunctionName,
        StatesFunctionNameType,
    )

    reader.skip_spaces()
    match = _FUNCTION_NAME.match(reader.text, reader.position)
    if match is None or match.group(1) not in StatesFunctionNameType.__members__:
        raise IntrinsicSyntaxError(f"no intrinsic function at {reader.text[reader.position :]!r}")
    reader.position = match.end()
    reader.take("(")
    arguments: list[Any] = []
    reader.skip_spaces()
    if reader.peek() != ")":
        arguments.append(_read_argument(reader))
        reader.skip_spaces()
        while reader.peek() == ",":
            reader.position += 1
            arguments.append(_read_argument(reader))
            reader.skip_spaces()
    reader.take(")")
    function_name = match.group(1)
    if function_name in _ARGUMENT_KINDS:
        argument_list = _moto_classes().checked_argument_list(arguments)
        argument_list.function_name = function_name
    else:
        argument_list = ArgumentList(arguments)
    name = StatesFunctionName(function_type=StatesFunctionNameType[function_name])
    return StatesFunctionFactory.from_name(func_name=name, argument_list=argument_list)


def _read_argument(reader: _Reader) -> Any:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ArgumentContextPath,
        ArgumentFunction,
        ArgumentJsonPath,
        ArgumentLiteral,
    )

    reader.skip_spaces()
    first = reader.peek()
    if first == "'":
        return _read_string(reader)
    if first == "$":
        path = _read_path_text(reader)
        if path.startswith("$$"):
            return ArgumentContextPath(context_path=path)
        if _VARIABLE.match(path):
            return _variable_argument(path)
        return ArgumentJsonPath(json_path=path)
    if reader.text.startswith("States.", reader.position):
        return ArgumentFunction(function=_read_function(reader))
    number = _NUMBER.match(reader.text, reader.position)
    if number is not None:
        reader.position = number.end()
        text = number.group()
        return ArgumentLiteral(definition_value=float(text) if any(c in text for c in ".eE") else int(text))
    for keyword, value in _KEYWORDS.items():
        if reader.text.startswith(keyword, reader.position):
            reader.position += len(keyword)
            return ArgumentLiteral(definition_value=value)
    raise IntrinsicSyntaxError(f"no argument at {reader.text[reader.position :]!r} in {reader.text!r}")


def _variable_argument(path: str) -> Any:
    name = _VARIABLE.match(path)
    assert name is not None
    return _moto_classes().variable_argument(name.group()[1:], "$" + path[name.end() :])


def _read_path_text(reader: _Reader) -> str:
    """A path argument: everything up to the comma or parenthesis that ends it at its own level."""
    start = reader.position
    depth = 0
    quote = ""
    while reader.position < len(reader.text):
        character = reader.text[reader.position]
        if quote:
            if character == "\\":
                reader.position += 1
            elif character == quote:
                quote = ""
        elif character in "'\"":
            quote = character
        elif character in "[(":
            depth += 1
        elif character in "])":
            if depth == 0:
                break
            depth -= 1
        elif character == "," and depth == 0:
            break
        reader.position += 1
    return reader.text[start : reader.position].strip()


def _read_string(reader: _Reader) -> Any:
    """A single-quoted literal; it remembers where its unescaped ``{}`` are for ``States.Format``."""
    reader.position += 1
    pieces: list[str] = []
    characters: list[str] = []
    text = reader.text
    while True:
        if reader.position >= len(text):
            raise IntrinsicSyntaxError(f"unterminated string literal in {text!r}")
        character = text[reader.position]
        reader.position += 1
        if character == "'":
            break
        if character == "\\":
            characters.append(_escaped_character(reader))
        elif character == "{" and text.startswith("}", reader.position):
            reader.position += 1
            pieces.append("".join(characters))
            characters = []
        else:
            characters.append(character)
    pieces.append("".join(characters))
    return _moto_classes().template_literal(FormatTemplate(tuple(pieces)))


def _escaped_character(reader: _Reader) -> str:
    if reader.position >= len(reader.text):
        raise IntrinsicSyntaxError(f"an open escape backslash ends {reader.text!r}")
    escaped = reader.text[reader.position]
    reader.position += 1
    if escaped in "{}":
        return escaped
    # moto kept an unknown escape as written; so does this reader.
    return _ESCAPED.get(escaped, "\\" + escaped)


@dataclass(frozen=True)
class _MotoClasses:
    template_literal: type
    checked_argument_list: type
    variable_argument: type


@functools.cache
def _moto_classes() -> _MotoClasses:
    """moto's argument components extended for this module (built on first use: importing imports no moto)."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        ArgumentJsonPath,
        ArgumentList,
        ArgumentLiteral,
        NoSuchVariable,
    )
    from sam_local_cloud.stepfunctions.jsonpath import extract_json

    class TemplateLiteral(ArgumentLiteral):
        """A string literal: its value is the text, its template the pieces around each unescaped ``{}``."""

        def __init__(self, template: FormatTemplate) -> None:
            super().__init__(definition_value="{}".join(template.pieces))
            self.template = template

    class CheckedArgumentList(ArgumentList):
        """Arguments checked against what their function takes, once evaluated."""

        function_name: str

        def _eval_argument(self, env: Environment) -> Any:
            values = internals.motos_argument_values(self, env)
            check_arguments(self.function_name, values)
            return values

    class VariableArgument(ArgumentJsonPath):
        """``$name.path``: a JSONPath applied to a workflow variable's value, taken from the store as is.

        moto sampled it through a JSONata expression, which mangled text holding JSON.
        """

        def __init__(self, variable_name: str, path: str) -> None:
            super().__init__(json_path=path)
            self.variable_name = variable_name
            self.path = path

        def _eval_argument(self, env: Environment) -> Any:
            try:
                value = env.variable_store.get(self.variable_name)
            except NoSuchVariable as error:
                raise IntrinsicFunctionError(f"The variable ${self.variable_name} is not defined") from error
            return copy.deepcopy(value if self.path == "$" else extract_json(self.path, value))

    return _MotoClasses(
        template_literal=TemplateLiteral,
        checked_argument_list=CheckedArgumentList,
        variable_argument=VariableArgument,
    )


def parse_invocation(source: str) -> Any:
    """moto's function component for an invocation as written in the definition's JSON string."""
    try:
        text = json.loads(f'"{source}"')
    except json.JSONDecodeError:
        text = source
    reader = _Reader(text)
    function = _read_function(reader)
    reader.skip_spaces()
    if reader.position != len(text):
        raise IntrinsicSyntaxError(f"unexpected {text[reader.position :]!r} after the call in {text!r}")
    return function


# ---------------------------------------------------------------------------------------------------------
# Evaluation


def _format(template: FormatTemplate, values: list[object], to_text: Callable[[object], str]) -> str:
    placeholders = len(template.pieces) - 1
    if placeholders != len(values):
        raise IntrinsicFunctionError(
            f"The number of arguments ({len(values)}) does not match the number of placeholders "
            f"({placeholders}) in the template of States.Format"
        )
    parts = [template.pieces[0]]
    for value, piece in zip(values, template.pieces[1:], strict=True):
        parts.extend((to_text(value), piece))
    return "".join(parts)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# What each intrinsic takes, argument by argument; "any" takes everything, null included.
_ARGUMENT_KINDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "ArrayPartition": (("array",), ("number",)),
    "ArrayContains": (("array",), ("any",)),
    "ArrayRange": (("number",), ("number",), ("number",)),
    "ArrayGetItem": (("array",), ("number",)),
    "ArrayLength": (("array",),),
    "ArrayUnique": (("array",),),
    "Base64Encode": (("string",),),
    "Base64Decode": (("string",),),
    "Hash": (("string",), ("string",)),
    "JsonMerge": (("object",), ("object",), ("boolean",)),
    "MathRandom": (("number",), ("number",), ("number",)),
    "MathAdd": (("number",), ("number",)),
    "StringSplit": (("string",), ("string",)),
    "StringToJson": (("string",),),
}


_HASH_ALGORITHMS = ("MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512")


def check_arguments(function_name: str, values: list[Any]) -> None:
    """Fail as an intrinsic failure when an argument has a type the function cannot take."""
    expected = _ARGUMENT_KINDS.get(function_name)
    if expected is None:
        return
    for position, (value, kinds) in enumerate(zip(values, expected, strict=False), start=1):
        if "any" not in kinds and _kind(value) not in kinds:
            raise IntrinsicFunctionError(
                f"The value of argument {position} of States.{function_name} must be a {' or '.join(kinds)}, "
                f"but was {_kind(value)}: {json.dumps(value)}"
            )
    if function_name == "Hash" and values[1] not in _HASH_ALGORITHMS:
        raise IntrinsicFunctionError(
            f"The hash algorithm {json.dumps(values[1])} of States.Hash is not one of "
            f"{', '.join(_HASH_ALGORITHMS)}"
        )
    if function_name == "ArrayGetItem" and not -1 < values[1] < len(values[0]):
        raise IntrinsicFunctionError(
            f"The index {json.dumps(values[1])} is out of bounds of the array of States.ArrayGetItem "
            f"(length {len(values[0])})"
        )


def json_identity(value: object) -> str:
    """Equal for equal JSON values only: ``true`` is not ``1``, objects compare by content."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def register_hooks() -> None:
    _read_invocations_with_this_module()
    _format_with_templates()
    _compare_array_items_as_json()
    _fail_intrinsics_as_states_runtime()


def _read_invocations_with_this_module() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import Preprocessor, StringIntrinsicFunction

    def visit_intrinsic_function(self: Any, ctx: Any) -> Any:
        derivation = ctx.STRINGINTRINSICFUNC().getText()[1:-1]
        return StringIntrinsicFunction(
            intrinsic_function_derivation=derivation, function=parse_invocation(derivation)
        )

    hooks.replace(
        Preprocessor, "visitString_intrinsic_function", visit_intrinsic_function, concern="intrinsics"
    )


def _format_with_templates() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import StringFormat

    def evaluate_format(self: Any, env: Environment) -> None:
        self.argument_list.eval(env=env)
        values: list[Any] = env.stack.pop()
        first = self.argument_list.arguments[0]
        template = getattr(first, "template", None)
        if template is None:
            # A template read from the input is text: only its ``{}`` are placeholders.
            if not isinstance(values[0], str):
                raise IntrinsicFunctionError(
                    f"The template of States.Format must be a string, but was {_kind(values[0])}"
                )
            template = FormatTemplate(tuple(values[0].split("{}")))
        env.stack.append(_format(template, values[1:], internals.format_argument_text))

    hooks.replace(StringFormat, "_eval_body", evaluate_format, concern="intrinsics")


def _compare_array_items_as_json() -> None:
    """ArrayUnique and ArrayContains compare JSON values; moto's Python equality took true for 1."""
    from sam_local_cloud.moto_seam.stepfunctions import ArrayContains, ArrayUnique

    def unique(self: Any, env: Environment) -> None:
        self.argument_list.eval(env=env)
        array = env.stack.pop()[0]
        unique_items: dict[str, object] = {}
        for item in array:
            unique_items.setdefault(json_identity(item), item)
        env.stack.append(list(unique_items.values()))

    def contains(self: Any, env: Environment) -> None:
        self.argument_list.eval(env=env)
        array, value = env.stack.pop()
        wanted = json_identity(value)
        env.stack.append(any(json_identity(item) == wanted for item in array))

    hooks.replace(ArrayUnique, "_eval_body", unique, concern="intrinsics")
    hooks.replace(ArrayContains, "_eval_body", contains, concern="intrinsics")


def _fail_intrinsics_as_states_runtime() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        FailureEvent,
        FailureEventException,
        HistoryEventType,
        StatesErrorName,
        StatesErrorNameType,
        StringIntrinsicFunction,
        TaskFailedEventDetails,
    )

    @hooks.around(StringIntrinsicFunction, "_eval_body", concern="intrinsics")
    def evaluate(proceed: Callable[[Any, Any], None], self: Any, env: Environment) -> None:
        try:
            proceed(self, env)
        except (IntrinsicFunctionError, ValueError, TypeError, ArithmeticError) as failure:
            # moto's own checks raise Python errors; AWS reports every intrinsic error as States.Runtime.
            runtime = StatesErrorNameType.StatesRuntime
            cause = f"The intrinsic function '{self.intrinsic_function_derivation}' failed: {failure}"
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=runtime),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=_task_failed(TaskFailedEventDetails(error=runtime.to_name(), cause=cause)),
                )
            ) from failure


def _task_failed(details: Any) -> Any:
    """moto's EventDetails for a TaskFailed event (a TypedDict mypy would want complete)."""
    return {"taskFailedEventDetails": details}
