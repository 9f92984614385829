"""moto's DynamoDB requests at a fraction of their CPU, answering exactly as moto does.

A task's conditional PutItem parses its condition twice (the request's check of the names it uses, then
the write), and each UpdateItem runs ten tree walks, each asking ``ABCMeta`` about every node. Together
they were half of a data plane request's CPU. The hooks here, registered by ``dynamodb_service``:

- **Condition parses by shape.** A condition, filter or key-condition expression is parsed once per
  shape: its text, its attribute names, and the names and types of its attribute values. Later parses of
  that shape get a copy of the first one's tree with their own values bound in, and the same lists of
  names and values found. moto's parse reads a value's type (``BETWEEN`` refuses a ``NULL``), never its
  content, so a tree of that shape is what moto would have built. A parse that raises is never kept.
- **Tree walks by class.** ``DepthFirstTraverser`` visits the same nodes in the same order and processes
  the same ones, and ``Node.find_clauses`` finds the same clauses; what a node's class is (a ``Node``,
  one the walk processes, one whose clauses are searched) is asked once per class.
- **An update's structure checked once.** The first three of an UpdateItem's ten walks only check its
  structure: at most one clause of each kind, no two paths overlapping, no key attribute updated. They
  read the expression's tree, its attribute names and the table's key names, never a value or the item,
  and change nothing; having passed for a parsed expression with those names and keys, they pass again.
  Their walks find clauses from every nested node: most of an update's CPU.
- **Structures written from what they hold.** moto writes a structure by asking for each member its
  shape may have (sixty for a Step Functions history event), through a picker trying aliases of each; a
  plain dict keyed by member names only is written from its own entries: the same members, found the
  same way. A history of 6,000 events took 1.4 s of the local cloud's CPU to answer.
- **Attribute values written as they are.** moto's response serialiser writes an item's attribute value
  by asking its shape for each of the ten members an ``AttributeValue`` may have, through a picker that
  tries aliases of each: most of a GetItem's CPU. A value that already is what the JSON protocol writes
  (one member; strings, booleans, lists and maps of such values) is copied as it is; any other value
  (binary, a number or string held as another type) takes moto's way.
- **Reserved words in a set.** Every attribute name of a path is looked up among DynamoDB's 573
  reserved words, which moto keeps in a list: a scan per name, most of an UpdateItem's CPU.
- **A table's key names once per PutItem.** moto's check for empty sets in an item lists the table's
  key attributes (those of every index too) again for each attribute of the item.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import moto.dynamodb.responses as dynamodb_responses
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb.comparisons import AttributeValue, ConditionExpressionParser, Func, Op
from moto.dynamodb.parsing.ast_nodes import (  # type: ignore[attr-defined]  # moto's module is unannotated
    DepthFirstTraverser,
    Expression,
    Node,
    UpdateExpressionFunction,
)
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.dynamodb.parsing.validators import (
    ActionCountValidator,
    OverlappingPathsValidator,
    UpdateExpressionValidator,
    UpdateHashRangeKeyValidator,
    Validator,
)

from sam_local_cloud.moto_seam import hooks

__all__ = ["register_hooks"]

CONCERN = "dynamodb"
# Distinct shapes kept; an app has a few dozen. The least recently used goes first.
_SHAPES_KEPT = 512
# The expression attribute value an operand of a kept tree stands for.
_PLACEHOLDER = "_sam_local_cloud_placeholder"

ShapeKey = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, tuple[str, ...]], ...]]


def register_hooks() -> None:
    _register_condition_parses_by_shape()
    _register_tree_walks_by_class()
    _register_clause_searches_by_class()
    _register_key_names_once_per_put()
    _register_reserved_words_in_a_set()
    _register_structure_checks_once()
    _register_plain_attribute_values()


# ---------------------------------------------------------------------------- condition parses


class _ParsedShapes:
    """Parsed trees by shape, with the names and values each parse found; bounded, thread-safe."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._trees: OrderedDict[ShapeKey, tuple[Any, tuple[str, ...], tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: ShapeKey) -> tuple[Any, tuple[str, ...], tuple[str, ...]] | None:
        with self._lock:
            parsed = self._trees.get(key)
            if parsed is not None:
                self._trees.move_to_end(key)
            return parsed

    def keep(self, key: ShapeKey, parsed: tuple[Any, tuple[str, ...], tuple[str, ...]]) -> None:
        with self._lock:
            self._trees[key] = parsed
            while len(self._trees) > self._kept:
                self._trees.popitem(last=False)


def shape_of(expression: object, names: object, values: object) -> ShapeKey | None:
    """The parse's shape, or None for a request moto should see as it is (malformed, or unusual)."""
    if not isinstance(expression, str) or not expression:
        return None
    names = names or {}
    values = values or {}
    if not isinstance(names, Mapping) or not isinstance(values, Mapping):
        return None
    named: list[tuple[str, str]] = []
    for placeholder, name in names.items():
        if not isinstance(placeholder, str) or not isinstance(name, str):
            return None
        named.append((placeholder, name))
    typed: list[tuple[str, tuple[str, ...]]] = []
    for placeholder, value in values.items():
        if not isinstance(placeholder, str) or not isinstance(value, Mapping):
            return None
        types = tuple(value)
        if not all(isinstance(type_name, str) for type_name in types):
            return None
        typed.append((placeholder, types))
    return expression, tuple(sorted(named)), tuple(sorted(typed))


def _placeholders_tagged(tree: object) -> bool:
    """Whether every value operand in ``tree`` says which expression attribute value it holds."""
    if type(tree) is AttributeValue:
        return isinstance(getattr(tree, _PLACEHOLDER, None), str)
    if isinstance(tree, (Op, Func)):
        return all(_placeholders_tagged(member) for member in _operands(vars(tree).values()))
    return True


def _operands(members: Any) -> list[object]:
    found: list[object] = []
    for member in members:
        if isinstance(member, (list, tuple)):
            found.extend(_operands(member))
        else:
            found.append(member)
    return found


def with_values(tree: Any, values: Mapping[str, Any]) -> Any:
    """A copy of ``tree`` whose value operands hold ``values``' entries; paths are shared (read only)."""
    if type(tree) is AttributeValue:
        placeholder = getattr(tree, _PLACEHOLDER)
        bound = AttributeValue(values[placeholder])
        setattr(bound, _PLACEHOLDER, placeholder)
        return bound
    if isinstance(tree, (Op, Func)):
        copied = object.__new__(type(tree))
        for name, member in vars(tree).items():
            setattr(copied, name, _member_with_values(member, values))
        return copied
    return tree


def _member_with_values(member: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(member, tuple):
        return tuple(_member_with_values(each, values) for each in member)
    if isinstance(member, list):
        return [_member_with_values(each, values) for each in member]
    return with_values(member, values)


def _register_condition_parses_by_shape() -> None:
    shapes = _ParsedShapes(_SHAPES_KEPT)
    value_kind = ConditionExpressionParser.Kind.EXPRESSION_ATTRIBUTE_VALUE

    @hooks.around(ConditionExpressionParser, "_make_operand", concern=CONCERN)
    def tagged_operand(proceed: Callable[[Any, Any], Any], self: Any, node: Any) -> Any:
        operand = proceed(self, node)
        if node.kind == value_kind and type(operand) is AttributeValue:
            setattr(operand, _PLACEHOLDER, node.text)
        return operand

    @hooks.around(ConditionExpressionParser, "parse", concern=CONCERN)
    def parse_by_shape(proceed: Callable[[Any], Any], self: Any) -> Any:
        key = None
        if type(self) is ConditionExpressionParser:
            key = shape_of(
                self.condition_expression, self.expression_attribute_names, self.expression_attribute_values
            )
        if key is None:
            return proceed(self)
        parsed = shapes.get(key)
        if parsed is None:
            tree = proceed(self)
            if not _placeholders_tagged(tree):
                return tree
            parsed = (tree, tuple(self.expr_attr_names_found), tuple(self.expr_attr_values_found))
            shapes.keep(key, parsed)
            # The caller gets a copy too: the kept tree is never handed out, whatever is done with it.
        else:
            tree, names_found, values_found = parsed
            self.expr_attr_names_found.extend(names_found)
            self.expr_attr_values_found.extend(values_found)
        return with_values(parsed[0], self.expression_attribute_values or {})


# ---------------------------------------------------------------------------- tree walks


class _ClassAnswers:
    """What ``issubclass`` says of a node's class, asked once per class (moto's classes are ABCs)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[type, Hashable], bool] = {}

    def subclass(self, kind: type, of: type | tuple[type, ...]) -> bool:
        key = (kind, of)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = issubclass(kind, of)
        return answer


# What a walk does with a node of a class: leave it (not one of moto's nodes), walk its children, or walk
# them and then process the node.
_NOT_A_NODE, _WALKED, _PROCESSED = 0, 1, 2


def _role_of(cls: type, kinds: tuple[type, ...], roles: dict[type, int]) -> int:
    role = roles[cls] = (
        _NOT_A_NODE if not issubclass(cls, Node) else _PROCESSED if issubclass(cls, kinds) else _WALKED
    )
    return role


def _walk(
    traverser: Any,
    node: Any,
    child_id: int,
    kinds: tuple[type, ...],
    roles: dict[type, int],
    announces: bool,
) -> Any:
    # moto's traverse_node_recursively, step for step.
    cls = type(node)
    role = roles.get(cls)
    if role is None:
        role = _role_of(cls, kinds, roles)
    if role == _NOT_A_NODE:
        return node
    parent_node = node.parent
    if node.children is not None:
        for index, child in enumerate(node.children):
            if announces:
                traverser.pre_processing_of_child(node, index)
            _walk(traverser, child, index, kinds, roles, announces)
    if role == _PROCESSED:
        node = traverser.process(node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node


def _register_tree_walks_by_class() -> None:
    # For each walk's node kinds: what it does with a node of each class, decided once per class (moto's
    # classes are ABCs, whose issubclass is slow), so a node costs one dict lookup.
    roles_by_kinds: dict[tuple[type, ...], dict[type, int]] = {}

    @hooks.around(DepthFirstTraverser, "traverse_node_recursively", concern=CONCERN)
    def walk_by_class(proceed: Callable[..., Any], self: Any, node: Any, child_id: int = -1) -> Any:
        kinds = self.nodes_to_be_processed()
        if not isinstance(kinds, tuple) or not all(isinstance(kind, type) for kind in kinds):
            return proceed(self, node, child_id)
        roles = roles_by_kinds.get(kinds)
        if roles is None:
            roles = roles_by_kinds.setdefault(kinds, {})
        # The base class's hook does nothing: most walks need not call it on every child.
        announces = type(self).pre_processing_of_child is not DepthFirstTraverser.pre_processing_of_child
        return _walk(self, node, child_id, kinds, roles, announces)


def _register_clause_searches_by_class() -> None:
    answers = _ClassAnswers()
    searched = (Expression, UpdateExpressionFunction)

    def find(node: Any, clause_types: Any) -> list[Any]:
        # moto's find_clauses, step for step.
        clauses = []
        for child in node.children or []:
            if type(child) in clause_types:
                clauses.append(child)
            elif answers.subclass(type(child), searched):
                clauses.extend(find(child, clause_types))
        return clauses

    @hooks.around(Node, "find_clauses", concern=CONCERN)
    def clauses_by_class(proceed: Callable[..., Any], self: Any, clause_types: Any) -> Any:
        return find(self, clause_types)


# ---------------------------------------------------------------------------- item checks


class _KeyNames:
    """What moto's empty-set check reads of a table: its key attribute names, listed once."""

    def __init__(self, table: Any) -> None:
        self.attribute_keys = frozenset(table.attribute_keys)


def _register_key_names_once_per_put() -> None:
    @hooks.around(dynamodb_responses, "validate_put_has_empty_attrs", concern=CONCERN)
    def key_names_once(proceed: Callable[[Any, Any], None], field_updates: Any, table: Any) -> None:
        return proceed(field_updates, _KeyNames(table) if table else table)


def _register_reserved_words_in_a_set() -> None:
    words: list[frozenset[str]] = []

    # Every caller asks ``name.upper() in ReservedKeywords.get_reserved_keywords()``.
    @hooks.around(ReservedKeywords, "get_reserved_keywords", concern=CONCERN)
    def reserved_words(proceed: Callable[[Any], Any], cls: Any) -> frozenset[str]:
        if not words:
            words.append(frozenset(proceed(cls)))
        return words[0]


# ---------------------------------------------------------------------------- update structure checks

# Each reads only the tree, the attribute names and the table's key names; none changes the tree.
_STRUCTURE_CHECKS = (ActionCountValidator, OverlappingPathsValidator, UpdateHashRangeKeyValidator)
# The parsed expression a validator copied its tree from.
_SOURCE = "_sam_local_cloud_source_tree"


class _PassedStructures:
    """The (names, key names) each parsed update expression passed the structure checks with; an
    expression's entry goes when its tree does (the parse cache lets it go)."""

    def __init__(self) -> None:
        self._passed: dict[int, tuple[weakref.ref[Any], set[Hashable]]] = {}
        self._lock = threading.Lock()

    def passed(self, source: Any, key: Hashable) -> bool:
        entry = self._passed.get(id(source))
        return entry is not None and entry[0]() is source and key in entry[1]

    def keep(self, source: Any, key: Hashable) -> None:
        source_id = id(source)
        with self._lock:
            entry = self._passed.get(source_id)
            if entry is None or entry[0]() is not source:
                forget = functools.partial(self._forget, source_id)
                entry = self._passed[source_id] = (weakref.ref(source, forget), set())
            entry[1].add(key)

    def _forget(self, source_id: int, _: object) -> None:
        with self._lock:
            entry = self._passed.get(source_id)
            if entry is not None and entry[0]() is None:
                del self._passed[source_id]


def _structure_key(validator: Any) -> Hashable | None:
    try:
        names = frozenset((validator.expression_attribute_names or {}).items())
        return names, tuple(validator.table.table_key_attrs)
    except (TypeError, AttributeError):
        return None


def _register_structure_checks_once() -> None:
    structures = _PassedStructures()

    @hooks.around(Validator, "__init__", concern=CONCERN)
    def remember_source(
        proceed: Callable[..., None], self: Any, expression: Any, *args: Any, **more: Any
    ) -> None:
        proceed(self, expression, *args, **more)
        setattr(self, _SOURCE, expression)

    @hooks.around(Validator, "validate", concern=CONCERN)
    def structure_once(proceed: Callable[[Any], Any], self: Any) -> Any:
        source = getattr(self, _SOURCE, None)
        key = _structure_key(self) if type(self) is UpdateExpressionValidator else None
        checks = len(_STRUCTURE_CHECKS)
        processors = list(self.processors)
        if (
            source is None
            or key is None
            or {type(processor) for processor in processors[:checks]} != set(_STRUCTURE_CHECKS)
        ):
            return proceed(self)
        # moto's validate, step for step, without the checks this structure already passed.
        node = self.node_to_validate
        if not structures.passed(source, key):
            for processor in processors[:checks]:
                node = processor.traverse(node)
            structures.keep(source, key)
        for processor in processors[checks:]:
            node = processor.traverse(node)
        return node


# ---------------------------------------------------------------------------- attribute values out

_STRING_MEMBERS = frozenset({"S", "N"})
_STRING_SET_MEMBERS = frozenset({"SS", "NS"})
_BOOLEAN_MEMBERS = frozenset({"NULL", "BOOL"})


class _NotPlainError(Exception):
    """A value moto's serialiser must write itself."""


def plain_attribute_value(value: object) -> dict[str, object]:
    """A copy of ``value``, an AttributeValue as the JSON protocol writes it; ``_NotPlainError`` if it is not
    one whose every member moto would write unchanged."""
    if type(value) is not dict or len(value) != 1:
        raise _NotPlainError
    ((member, content),) = value.items()
    if member in _STRING_MEMBERS:
        if type(content) is not str:
            raise _NotPlainError
        return {member: content}
    if member in _BOOLEAN_MEMBERS:
        if type(content) is not bool:
            raise _NotPlainError
        return {member: content}
    if member in _STRING_SET_MEMBERS:
        if type(content) is not list or not all(type(each) is str for each in content):
            raise _NotPlainError
        return {member: list(content)}
    if member == "M" and type(content) is dict:
        return {"M": {name: plain_attribute_value(each) for name, each in content.items()}}
    if member == "L" and type(content) is list:
        return {"L": [plain_attribute_value(each) for each in content]}
    raise _NotPlainError


def _register_plain_attribute_values() -> None:
    @hooks.around(BaseJSONSerializer, "_serialize_type_structure", concern=CONCERN)
    def lean_structures(
        proceed: Callable[..., None], self: Any, serialized: Any, value: Any, shape: Any, key: str
    ) -> None:
        if key and shape.name == "AttributeValue":
            try:
                plain = plain_attribute_value(value)
            except _NotPlainError:
                pass
            else:
                self._default_serialize(serialized, plain, shape, key)
                return
        if key and _members_of_its_own(self, value, shape):
            # moto's loop, over the members the dict holds instead of every member the shape may have.
            wrapper = self.MAP_TYPE()
            for member_key, member_value in value.items():
                member_shape = shape.members[member_key]
                member_shape.parent = shape
                if member_value is not None:
                    self._serialize(wrapper, member_value, member_shape, member_key)
            self._default_serialize(serialized, wrapper, shape, key)
            return
        proceed(self, serialized, value, shape, key)


def _members_of_its_own(serializer: Any, value: object, shape: Any) -> bool:
    """Whether moto's serialiser would find exactly ``value``'s entries as ``shape``'s members: a plain
    dict keyed by member names only, read by a picker that transforms nothing. moto asks its picker for
    every member of the shape (sixty for a history event), each through its aliases; an entry under a
    member's own name is what it finds first."""
    if type(value) is not dict or shape.is_document_type:
        return False
    if getattr(serializer._value_picker, "response_transformers", None):
        return False
    members = shape.members
    return all(name in members for name in value)
