"""JSONPath as Step Functions evaluates it: Jayway's dialect, with AWS's result shapes.

Step Functions reads ``InputPath``, ``OutputPath``, the ``.$`` fields of ``Parameters``/``ResultSelector``/
``ItemSelector``, Choice ``Variable``s and intrinsic-function arguments with Jayway JsonPath. moto used
``jsonpath_ng``, whose dialect and result shapes differ; this module takes its place (``extract_json``):

- a *definite* path (only single names and single indexes, ``$.a[0].b``, ``$['a'][-1]``) yields one value,
  and fails with moto's ``NoSuchJsonPathError`` (States.Runtime "... could not be found in the input ...")
  when nothing is there; moto answered a list for ``$.items[0].b`` and ``$.items[-1]``;
- any other path (wildcards, slices such as ``[-1:]``, unions, filters, deep scans ``..``) yields a JSON
  array of every match, ``[]`` when nothing matches: a filter that matched nothing failed the state in moto;
- filters ``[?(...)]`` take ``&&``, ``||``, ``!`` and parentheses; ``==``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=`` on numbers and on strings; ``=~ /regex/i``; ``in``, ``nin``, ``subsetof``, ``anyof``, ``noneof``,
  ``size``, ``empty``, ``contains``; ``@.x`` alone tests that x is there and not null;
- path functions (``length()``, ``sum()``, ...) are not evaluated: AWS answers such a path with "could
  not be found" (recorded for ``$.Jobs.sum()``), and so does this module; that cause quotes the input as
  compact JSON, as AWS does (moto put spaces after ``:`` and ``,``);
- an InputPath, OutputPath or Seconds path that names nothing fails with Jayway's words for where it
  stopped (``Invalid path '$.a.b' : Missing property in path $['a']``).

``ResultPath`` keeps moto's jsonpath_ng, each path parsed once (``_parse_result_paths_once``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

# Characters that end a name written in dot notation (``$.name``), inside filters included.
_NAME_END = set(" \t\n.[]()=!<>&|,~")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?\d+")
_BARE_WORD = re.compile(r"[^\s()&|]+")
_Item = TypeVar("_Item")


class JsonPathSyntaxError(ValueError):
    """A path this dialect cannot read."""


class _Missing:
    """What a path names when nothing is there (Jayway's *undefined*), unlike a JSON null."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


@dataclass(frozen=True)
class Names:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Indexes:
    indexes: tuple[int, ...]


@dataclass(frozen=True)
class Slice:
    start: int | None
    end: int | None


@dataclass(frozen=True)
class Filter:
    predicate: Predicate


@dataclass(frozen=True)
class Scan:
    """A deep scan (``..``) applying ``inner`` at every level of the document."""

    inner: Names | Wildcard | Indexes | Slice | Filter


@dataclass(frozen=True)
class Call:
    """A path function such as ``length()``, which Step Functions does not evaluate."""

    name: str


Segment = Names | Wildcard | Indexes | Slice | Filter | Scan | Call


@dataclass(frozen=True)
class CompiledPath:
    relative: bool
    segments: tuple[Segment, ...]

    @property
    def definite(self) -> bool:
        return all(
            (isinstance(segment, Names) and len(segment.names) == 1)
            or (isinstance(segment, Indexes) and len(segment.indexes) == 1)
            for segment in self.segments
        )

    @property
    def calls_function(self) -> bool:
        return any(isinstance(segment, Call) for segment in self.segments)


# ---------------------------------------------------------------------------------------------------------
# Filter predicates


@dataclass(frozen=True)
class PathOperand:
    path: CompiledPath


@dataclass(frozen=True)
class LiteralOperand:
    value: Any


@dataclass(frozen=True)
class RegexOperand:
    pattern: re.Pattern[str]


Operand = PathOperand | LiteralOperand | RegexOperand


@dataclass(frozen=True)
class Comparison:
    left: Operand
    operator: str | None
    right: Operand | None


@dataclass(frozen=True)
class Not:
    operand: Predicate


@dataclass(frozen=True)
class AllOf:
    operands: tuple[Predicate, ...]


@dataclass(frozen=True)
class AnyOf:
    operands: tuple[Predicate, ...]


Predicate = Comparison | Not | AllOf | AnyOf

_WORD_OPERATORS = ("subsetof", "noneof", "anyof", "contains", "empty", "size", "nin", "in")
_SYMBOL_OPERATORS = ("==", "!=", "<=", ">=", "=~", "<", ">")


# ---------------------------------------------------------------------------------------------------------
# Reading paths


class _Reader:
    def __init__(self, text: str, position: int = 0) -> None:
        self.text = text
        self.position = position

    def peek(self, count: int = 1) -> str:
        return self.text[self.position : self.position + count]

    def at_end(self) -> bool:
        return self.position >= len(self.text)

    def skip_spaces(self) -> None:
        while not self.at_end() and self.text[self.position].isspace():
            self.position += 1

    def take(self, expected: str) -> None:
        if not self.text.startswith(expected, self.position):
            raise JsonPathSyntaxError(f"expected {expected!r} at {self.position} in {self.text!r}")
        self.position += len(expected)

    def accept(self, expected: str) -> bool:
        if self.text.startswith(expected, self.position):
            self.position += len(expected)
            return True
        return False

    def read_quoted(self) -> str:
        quote = self.text[self.position]
        self.position += 1
        characters: list[str] = []
        while not self.at_end() and self.text[self.position] != quote:
            if self.text[self.position] == "\\" and self.position + 1 < len(self.text):
                self.position += 1
            characters.append(self.text[self.position])
            self.position += 1
        self.take(quote)
        return "".join(characters)

    def read_name(self) -> str:
        start = self.position
        while not self.at_end() and self.text[self.position] not in _NAME_END:
            self.position += 1
        if start == self.position:
            raise JsonPathSyntaxError(f"expected a name at {start} in {self.text!r}")
        return self.text[start : self.position]


def _read_path(reader: _Reader) -> CompiledPath:
    """A path starting at ``$`` or ``@``; stops at the first character that cannot continue it."""
    relative = reader.peek() == "@"
    reader.position += 1
    segments: list[Segment] = []
    while True:
        if reader.accept(".."):
            segments.append(Scan(_read_scanned(reader)))
        elif reader.accept("."):
            segments.append(_read_dotted(reader))
        elif reader.peek() == "[":
            segments.append(_read_bracket(reader))
        else:
            return CompiledPath(relative=relative, segments=tuple(segments))


def _read_scanned(reader: _Reader) -> Names | Wildcard | Indexes | Slice | Filter:
    inner = _read_bracket(reader) if reader.peek() == "[" else _read_dotted(reader)
    if isinstance(inner, Call | Scan):
        raise JsonPathSyntaxError(f"a deep scan cannot apply {inner} in {reader.text!r}")
    return inner


def _read_dotted(reader: _Reader) -> Names | Wildcard | Call:
    if reader.accept("*"):
        return Wildcard()
    name = reader.read_name()
    if reader.accept("("):
        reader.skip_spaces()
        reader.take(")")
        return Call(name)
    return Names((name,))


def _read_bracket(reader: _Reader) -> Segment:
    reader.take("[")
    reader.skip_spaces()
    segment: Segment
    if reader.accept("?"):
        reader.skip_spaces()
        reader.take("(")
        segment = Filter(_read_or(reader))
        reader.skip_spaces()
        reader.take(")")
    elif reader.accept("*"):
        segment = Wildcard()
    elif reader.peek() in ("'", '"'):
        segment = Names(tuple(_read_list(reader, _Reader.read_quoted)))
    else:
        segment = _read_indexes_or_slice(reader)
    reader.skip_spaces()
    reader.take("]")
    return segment


def _read_list(reader: _Reader, read_one: Callable[[_Reader], _Item]) -> list[_Item]:
    items = [read_one(reader)]
    reader.skip_spaces()
    while reader.accept(","):
        reader.skip_spaces()
        items.append(read_one(reader))
        reader.skip_spaces()
    return items


def _read_optional_integer(reader: _Reader) -> int | None:
    reader.skip_spaces()
    match = _INTEGER.match(reader.text, reader.position)
    if match is None:
        return None
    reader.position = match.end()
    return int(match.group())


def _read_integer(reader: _Reader) -> int:
    value = _read_optional_integer(reader)
    if value is None:
        raise JsonPathSyntaxError(f"expected an index at {reader.position} in {reader.text!r}")
    return value


def _read_indexes_or_slice(reader: _Reader) -> Indexes | Slice:
    start = _read_optional_integer(reader)
    reader.skip_spaces()
    if reader.accept(":"):
        end = _read_optional_integer(reader)
        return Slice(start, end)
    if start is None:
        raise JsonPathSyntaxError(f"expected an index at {reader.position} in {reader.text!r}")
    indexes = [start]
    while reader.accept(","):
        indexes.append(_read_integer(reader))
        reader.skip_spaces()
    return Indexes(tuple(indexes))


def _read_or(reader: _Reader) -> Predicate:
    operands = [_read_and(reader)]
    reader.skip_spaces()
    while reader.accept("||"):
        operands.append(_read_and(reader))
        reader.skip_spaces()
    return operands[0] if len(operands) == 1 else AnyOf(tuple(operands))


def _read_and(reader: _Reader) -> Predicate:
    operands = [_read_unary(reader)]
    reader.skip_spaces()
    while reader.accept("&&"):
        operands.append(_read_unary(reader))
        reader.skip_spaces()
    return operands[0] if len(operands) == 1 else AllOf(tuple(operands))


def _read_unary(reader: _Reader) -> Predicate:
    reader.skip_spaces()
    if reader.peek() == "!" and reader.peek(2) != "!=":
        reader.position += 1
        return Not(_read_unary(reader))
    if reader.accept("("):
        inner = _read_or(reader)
        reader.skip_spaces()
        reader.take(")")
        return inner
    return _read_comparison(reader)


def _read_comparison(reader: _Reader) -> Comparison:
    left = _read_operand(reader)
    reader.skip_spaces()
    operator = _read_operator(reader)
    if operator is None:
        return Comparison(left, None, None)
    reader.skip_spaces()
    if operator != "=~" and reader.peek() == "/":
        # Outside a regex match a slash starts unquoted text (``@.Name==/eggs/cooked``), not a pattern.
        word = _BARE_WORD.match(reader.text, reader.position)
        if word is not None:
            reader.position = word.end()
            return Comparison(left, operator, LiteralOperand(word.group()))
    return Comparison(left, operator, _read_operand(reader))


def _read_operator(reader: _Reader) -> str | None:
    for symbol in _SYMBOL_OPERATORS:
        if reader.accept(symbol):
            return symbol
    for word in _WORD_OPERATORS:
        after = reader.position + len(word)
        if reader.text.startswith(word, reader.position) and (
            after >= len(reader.text) or not reader.text[after].isalnum()
        ):
            reader.position = after
            return word
    return None


def _read_operand(reader: _Reader) -> Operand:
    reader.skip_spaces()
    first = reader.peek()
    if first in ("@", "$"):
        return PathOperand(_read_path(reader))
    if first in ("'", '"'):
        return LiteralOperand(reader.read_quoted())
    if first == "/":
        return _read_regex(reader)
    if first in ("[", "{"):
        value, end = json.JSONDecoder().raw_decode(reader.text.replace("'", '"'), reader.position)
        reader.position = end
        return LiteralOperand(value)
    number = _NUMBER.match(reader.text, reader.position)
    if number is not None:
        reader.position = number.end()
        text = number.group()
        return LiteralOperand(float(text) if any(c in text for c in ".eE") else int(text))
    word = reader.read_name()
    # An unquoted word that is not a JSON literal is read as text, as users write ``@.status==done``.
    return LiteralOperand({"true": True, "false": False, "null": None}.get(word, word))


def _read_regex(reader: _Reader) -> RegexOperand:
    end = reader.text.index("/", reader.position + 1)
    body = reader.text[reader.position + 1 : end]
    reader.position = end + 1
    flags = 0
    while reader.peek() in ("i", "m", "s"):
        flags |= {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}[reader.peek()]
        reader.position += 1
    return RegexOperand(re.compile(body, flags))


@functools.lru_cache(maxsize=4096)
def compile_path(path: str) -> CompiledPath:
    reader = _Reader(path.strip())
    if reader.peek() not in ("$", "@"):
        raise JsonPathSyntaxError(f"a path starts with '$': {path!r}")
    compiled = _read_path(reader)
    if not reader.at_end():
        raise JsonPathSyntaxError(f"unexpected {reader.text[reader.position :]!r} in {path!r}")
    return compiled


# ---------------------------------------------------------------------------------------------------------
# Evaluating paths


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, list):
        return list(node)
    return []


def _select(segment: Segment, node: Any, root: Any) -> Iterator[Any]:
    if isinstance(segment, Names):
        if isinstance(node, dict):
            yield from (node[name] for name in segment.names if name in node)
    elif isinstance(segment, Wildcard):
        yield from _children(node)
    elif isinstance(segment, Indexes):
        if isinstance(node, list):
            yield from (node[index] for index in segment.indexes if -len(node) <= index < len(node))
    elif isinstance(segment, Slice):
        if isinstance(node, list):
            yield from node[segment.start : segment.end]
    elif isinstance(segment, Filter):
        candidates = node if isinstance(node, list) else [node] if isinstance(node, dict) else []
        yield from (item for item in candidates if _holds(segment.predicate, item, root))
    elif isinstance(segment, Scan):
        yield from _scan(segment.inner, node, root)


def _scan(inner: Segment, node: Any, root: Any) -> Iterator[Any]:
    """Jayway's deep scan: what ``inner`` selects here, then the same below each child, in order."""
    if isinstance(inner, Filter):
        if isinstance(node, dict) and _holds(inner.predicate, node, root):
            yield node
    else:
        yield from _select(inner, node, root)
    for child in _children(node):
        if isinstance(child, dict | list):
            yield from _scan(inner, child, root)


def _evaluate(path: CompiledPath, start: Any, root: Any) -> list[Any]:
    nodes = [start]
    for segment in path.segments:
        nodes = [selected for node in nodes for selected in _select(segment, node, root)]
    return nodes


def read(path: CompiledPath, start: Any, root: Any) -> Any:
    """The path's value: one value (or MISSING) for a definite path, a list of matches otherwise."""
    if path.calls_function:
        return MISSING
    matches = _evaluate(path, start, root)
    if path.definite:
        return matches[0] if matches else MISSING
    return matches


# ---------------------------------------------------------------------------------------------------------
# Filter predicates


def _operand_value(operand: Operand, item: Any, root: Any) -> Any:
    if isinstance(operand, PathOperand):
        return read(operand.path, item if operand.path.relative else root, root)
    if isinstance(operand, LiteralOperand):
        return operand.value
    return operand.pattern


def _holds(predicate: Predicate, item: Any, root: Any) -> bool:
    if isinstance(predicate, AllOf):
        return all(_holds(operand, item, root) for operand in predicate.operands)
    if isinstance(predicate, AnyOf):
        return any(_holds(operand, item, root) for operand in predicate.operands)
    if isinstance(predicate, Not):
        return not _holds(predicate.operand, item, root)
    left = _operand_value(predicate.left, item, root)
    if predicate.operator is None or predicate.right is None:
        # A path alone asks whether it names something; Step Functions Local counts a JSON null as absent.
        if isinstance(predicate.left, PathOperand):
            return left is not MISSING and left is not None and left != []
        return bool(left)
    right = _operand_value(predicate.right, item, root)
    return _compare(predicate.operator, left, right)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(value: Any) -> float | None:
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _equals(left: Any, right: Any) -> bool:
    if left is MISSING or right is MISSING:
        return False
    if _is_number(left) or _is_number(right):
        # Jayway compares a number with a numeric string by value.
        left_number, right_number = _as_number(left), _as_number(right)
        return left_number is not None and left_number == right_number
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


def _ordered(left: Any, right: Any) -> tuple[Any, Any] | None:
    if _is_number(left) and _is_number(right):
        return left, right
    if isinstance(left, str) and isinstance(right, str):
        return left, right
    return None


def _contains(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return right in left
    return isinstance(left, list) and any(_equals(element, right) for element in left)


def _member(left: Any, right: Any) -> bool:
    return isinstance(right, list) and any(_equals(left, element) for element in right)


def _set_relation(operator: str, left: Any, right: Any) -> bool:
    if not isinstance(left, list) or not isinstance(right, list):
        return False
    found = [_member(element, right) for element in left]
    if operator == "subsetof":
        return all(found)
    if operator == "anyof":
        return any(found)
    return not any(found)


def _sized(operator: str, left: Any, right: Any) -> bool:
    if not isinstance(left, list | str | dict):
        return False
    if operator == "size":
        return _is_number(right) and len(left) == right
    return isinstance(right, bool) and (len(left) == 0) == right


def _matches(left: Any, right: Any) -> bool:
    if not isinstance(right, re.Pattern):
        return False
    text = json.dumps(left) if isinstance(left, bool) else left
    return isinstance(text, str) and right.fullmatch(text) is not None


_ORDER_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


def _compare(operator: str, left: Any, right: Any) -> bool:
    if operator == "==":
        return _equals(left, right)
    if operator == "!=":
        return not _equals(left, right)
    if operator in _ORDER_TESTS:
        pair = _ordered(left, right)
        return pair is not None and _ORDER_TESTS[operator](*pair)
    if operator == "=~":
        return _matches(left, right)
    if operator == "in":
        return _member(left, right)
    if operator == "nin":
        return not _member(left, right)
    if operator == "contains":
        return _contains(left, right)
    if operator in ("size", "empty"):
        return _sized(operator, left, right)
    return _set_relation(operator, left, right)


# ---------------------------------------------------------------------------------------------------------
# moto's entry point


def extract_json(path: str, data: Any) -> Any:
    """The value of ``path`` in ``data`` as Step Functions gives it; ``NoSuchJsonPathError`` if none."""
    from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

    compiled = compile_path(path)
    value = read(compiled, data, data)
    if value is MISSING:
        raise NoSuchJsonPathError(json_path=path, data=data)
    # A slice applied to the input itself needs an array there (LocalStack recorded AWS failing on it).
    if compiled.segments and isinstance(compiled.segments[0], Slice) and not isinstance(data, list):
        raise NoSuchJsonPathError(json_path=path, data=data)
    return value


def missing_path_message(path: str, data: Any) -> str:
    """Jayway's words for a definite path that names nothing, as AWS quotes them after "Invalid path".

    The path is followed as far as it goes: a missing last step is "No results for path: $['a']['b']",
    a missing step before it "Missing property in path $['a']" (both recorded).
    """
    try:
        compiled = compile_path(path)
    except JsonPathSyntaxError:
        return f"No results for path: {path}"
    node, evaluated = data, "$"
    for position, segment in enumerate(compiled.segments, start=1):
        if isinstance(segment, Names) and len(segment.names) == 1:
            evaluated += f"['{segment.names[0]}']"
            found = isinstance(node, dict) and segment.names[0] in node
            node = node[segment.names[0]] if found else None
        elif isinstance(segment, Indexes) and len(segment.indexes) == 1:
            index = segment.indexes[0]
            evaluated += f"[{index}]"
            found = isinstance(node, list) and -len(node) <= index < len(node)
            node = node[index] if found else None
        else:
            break
        if not found:
            last = position == len(compiled.segments)
            return f"No results for path: {evaluated}" if last else f"Missing property in path {evaluated}"
    return f"No results for path: {evaluated}"


def _word_invalid_paths_as_jayway() -> None:
    """InputPath, OutputPath and the Seconds paths: the cause after "Invalid path" in Jayway's words.

    moto wrote "No results for path" with the whole path after ``$`` (``$['no.such.path']``) for any
    missing step; AWS says where the path stopped (recorded: ``Missing property in path $['no']``).
    """
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.path.input_path import InputPath
    from moto.stepfunctions.parser.asl.component.common.path.output_path import OutputPath
    from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import HeartbeatSecondsPath
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSecondsPath
    from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

    def reworded(method: Any) -> Any:
        def evaluate(self: Any, env: Any) -> Any:
            try:
                return method(self, env)
            except FailureEventException as failure:
                missing = failure.__context__
                details: dict[str, Any] = dict(failure.failure_event.event_details or {})
                if isinstance(missing, NoSuchJsonPathError):
                    message = missing_path_message(missing.json_path, missing.data)
                    for event_details in details.values():
                        if isinstance(event_details, dict) and str(event_details.get("cause", "")).startswith(
                            "Invalid path '"
                        ):
                            event_details["cause"] = f"Invalid path '{missing.json_path}' : {message}"
                raise

        return evaluate

    InputPath._eval_body = reworded(InputPath._eval_body)  # type: ignore[method-assign]
    OutputPath._eval_body = reworded(OutputPath._eval_body)  # type: ignore[method-assign]
    TimeoutSecondsPath._eval_seconds = reworded(TimeoutSecondsPath._eval_seconds)  # type: ignore[method-assign]
    HeartbeatSecondsPath._eval_seconds = reworded(HeartbeatSecondsPath._eval_seconds)  # type: ignore[method-assign]


# moto modules that bound ``extract_json`` by name when they were imported.
_MOTO_MODULES = (
    "moto.stepfunctions.parser.asl.utils.json_path",
    "moto.stepfunctions.parser.asl.component.common.string.string_expression",
    "moto.stepfunctions.parser.asl.component.intrinsic.argument.argument",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.timestamp_operators",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.boolean_equals",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.numeric",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.string_operators",
    "moto.stepfunctions.parser.asl.eval.states",
)


def patch() -> None:
    import importlib

    for name in _MOTO_MODULES:
        module = importlib.import_module(name)
        module.extract_json = extract_json  # type: ignore[attr-defined]
    _quote_inputs_compactly()
    _word_invalid_paths_as_jayway()
    _parse_result_paths_once()


def _parse_result_paths_once() -> None:
    """ResultPath's jsonpath_ng expression parsed once per path, not on every state that writes one.

    moto's ``ResultPath`` calls ``jsonpath_ng.parse`` each time it runs, and every call builds a new ply
    parser (lexer and LALR tables) before parsing: a fifth of the interpreter's CPU per Task. The parsed
    expression is immutable (``update_or_create`` only reads its fields), so one can serve every thread.
    """
    from jsonpath_ng import parse
    from moto.stepfunctions.parser.asl.component.common.path import result_path

    result_path.parse = functools.lru_cache(maxsize=4096)(parse)


def _quote_inputs_compactly() -> None:
    """The input a "could not be found" cause quotes is compact JSON on AWS (``{"Jobs":[0,1]}``)."""
    from moto.stepfunctions.parser.asl.component.common.string import string_expression
    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def compact_json(obj: Any, separators: tuple[str, str] | None = None) -> str:
        return to_json_str(obj, separators=separators or (",", ":"))

    # Both modules call this name only to write JSON into history details and causes.
    state.to_json_str = compact_json
    string_expression.to_json_str = compact_json
