"""JSONPath as Step Functions writes it (Jayway's dialect), read into segments and filter predicates.

``compile_path`` reads a path once (cached) into a ``CompiledPath``: names, wildcards, indexes, slices,
unions, filters ``[?(...)]`` with their predicates, deep scans ``..`` and path functions (``length()``),
which ``jsonpath_evaluation`` applies to a document.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sam_local_cloud.json_types import JsonValue

# Characters that end a name written in dot notation (``$.name``), inside filters included.
_NAME_END = set(" \t\n.[]()=!<>&|,~")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?\d+")
_BARE_WORD = re.compile(r"[^\s()&|]+")
_Item = TypeVar("_Item")


class JsonPathSyntaxError(ValueError):
    """A path this dialect cannot read."""


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
    value: JsonValue


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
