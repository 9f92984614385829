"""JSONPath applied to a document with Jayway's semantics and AWS's result shapes.

A definite path (single names and indexes only) yields one value or ``MISSING``; any other path yields
the list of its matches. Filters compare as Jayway compares (a number with a numeric string by value,
strings with strings, ``=~`` with a full match).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator
from typing import Final, TypeAlias, TypeGuard, TypeVar

from sam_local_cloud.json_types import JsonValue
from sam_local_cloud.stepfunctions.jsonpath_syntax import (
    AllOf,
    AnyOf,
    CompiledPath,
    Filter,
    Indexes,
    LiteralOperand,
    Names,
    Not,
    Operand,
    PathOperand,
    Predicate,
    Scan,
    Segment,
    Slice,
    Wildcard,
)


class _Missing(enum.Enum):
    """What a path names when nothing is there (Jayway's *undefined*), unlike a JSON null."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING

# What a filter compares: a value the path read (or MISSING), a literal, or a ``=~`` regex.
_OperandValue: TypeAlias = JsonValue | _Missing | re.Pattern[str]
_Ordered = TypeVar("_Ordered", float, str)


def _children(node: JsonValue) -> list[JsonValue]:
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, list):
        return list(node)
    return []


def _select(segment: Segment, node: JsonValue, root: JsonValue) -> Iterator[JsonValue]:
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
        candidates: list[JsonValue] = (
            node if isinstance(node, list) else [node] if isinstance(node, dict) else []
        )
        yield from (item for item in candidates if _holds(segment.predicate, item, root))
    elif isinstance(segment, Scan):
        yield from _scan(segment.inner, node, root)


def _scan(inner: Segment, node: JsonValue, root: JsonValue) -> Iterator[JsonValue]:
    """Jayway's deep scan: what ``inner`` selects here, then the same below each child, in order."""
    if isinstance(inner, Filter):
        if isinstance(node, dict) and _holds(inner.predicate, node, root):
            yield node
    else:
        yield from _select(inner, node, root)
    for child in _children(node):
        if isinstance(child, dict | list):
            yield from _scan(inner, child, root)


def _evaluate(path: CompiledPath, start: JsonValue, root: JsonValue) -> list[JsonValue]:
    nodes = [start]
    for segment in path.segments:
        nodes = [selected for node in nodes for selected in _select(segment, node, root)]
    return nodes


def read(path: CompiledPath, start: JsonValue, root: JsonValue) -> JsonValue | _Missing:
    """The path's value: one value (or MISSING) for a definite path, a list of matches otherwise."""
    if path.calls_function:
        return MISSING
    matches = _evaluate(path, start, root)
    if path.definite:
        return matches[0] if matches else MISSING
    return matches


# ---------------------------------------------------------------------------------------------------------
# Filter predicates


def _operand_value(operand: Operand, item: JsonValue, root: JsonValue) -> _OperandValue:
    if isinstance(operand, PathOperand):
        return read(operand.path, item if operand.path.relative else root, root)
    if isinstance(operand, LiteralOperand):
        return operand.value
    return operand.pattern


def _holds(predicate: Predicate, item: JsonValue, root: JsonValue) -> bool:
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


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(value: object) -> float | None:
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _equals(left: object, right: object) -> bool:
    if left is MISSING or right is MISSING:
        return False
    if _is_number(left) or _is_number(right):
        # Jayway compares a number with a numeric string by value.
        left_number, right_number = _as_number(left), _as_number(right)
        return left_number is not None and left_number == right_number
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


def _ordered(operator: str, left: object, right: object) -> bool:
    """An order test holds between two numbers or two strings, never across them."""
    if _is_number(left) and _is_number(right):
        return _in_order(operator, left, right)
    if isinstance(left, str) and isinstance(right, str):
        return _in_order(operator, left, right)
    return False


def _in_order(operator: str, left: _Ordered, right: _Ordered) -> bool:
    if operator == "<":
        return left < right
    if operator == "<=":
        return left <= right
    if operator == ">":
        return left > right
    return left >= right


def _contains(left: object, right: object) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return right in left
    return isinstance(left, list) and any(_equals(element, right) for element in left)


def _member(left: object, right: object) -> bool:
    return isinstance(right, list) and any(_equals(left, element) for element in right)


def _set_relation(operator: str, left: object, right: object) -> bool:
    if not isinstance(left, list) or not isinstance(right, list):
        return False
    found = [_member(element, right) for element in left]
    if operator == "subsetof":
        return all(found)
    if operator == "anyof":
        return any(found)
    return not any(found)


def _sized(operator: str, left: object, right: object) -> bool:
    if not isinstance(left, list | str | dict):
        return False
    if operator == "size":
        return _is_number(right) and len(left) == right
    return isinstance(right, bool) and (len(left) == 0) == right


def _matches(left: object, right: object) -> bool:
    if not isinstance(right, re.Pattern):
        return False
    text = json.dumps(left) if isinstance(left, bool) else left
    return isinstance(text, str) and right.fullmatch(text) is not None


_ORDER_OPERATORS = frozenset({"<", "<=", ">", ">="})


def _compare(operator: str, left: _OperandValue, right: _OperandValue) -> bool:
    if operator == "==":
        return _equals(left, right)
    if operator == "!=":
        return not _equals(left, right)
    if operator in _ORDER_OPERATORS:
        return _ordered(operator, left, right)
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
