"""API Gateway mapping templates: the part of Velocity (VTL) and of API Gateway's variables that
integration request and response templates are written in.

Supported: references (``$name``, ``${name}``, quiet ``$!name``) with properties (``$a.b``), indexes
(``$a[0]``) and method calls (``$input.json('$.x')``); ``#set``, ``#if``/``#elseif``/``#else``/``#end``
with ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=``, ``&&``, ``||``, ``!`` (and ``and``, ``or``, ``not``);
``#foreach`` with ``$foreach.hasNext``; ``##`` comments. API Gateway's ``$input`` (``body``, ``json``,
``path``, ``params``), ``$util`` (``escapeJavaScript``, ``parseJson``, ``base64Encode``/``Decode``,
``urlEncode``/``Decode``) and ``$context``/``$stageVariables`` as given. As in Velocity, a reference
that has no value is written out as it stands in the template (``$!`` writes nothing), and a map or
list is written as Java writes it (``{a=1, b=[x, y]}``).

Not supported (the template is refused with TemplateSyntaxError, which the gateway answers as AWS
answers a mapping failure, HTTP 500): macros, ``#break``/``#stop``/``#include``/``#parse``, ranges, and
arithmetic.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TemplateSyntaxError(ValueError):
    """The template uses something outside the supported part of VTL, or is malformed."""


class _Undefined:
    """A reference with no value."""


UNDEFINED = _Undefined()


# ---------------------------------------------------------------------------------------------- API Gateway


def select(document: Any, path: str) -> Any:
    """A JSONPath's value in ``document`` (``$``, ``$.a.b``, ``$['a']``, ``$.a[0]``); UNDEFINED if absent."""
    path = path.strip()
    if not path.startswith("$"):
        raise TemplateSyntaxError(f"not a JSONPath: {path!r}")
    value = document
    for name, quoted, index in re.findall(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]", path[1:]):
        key = name or quoted
        if key:
            if not isinstance(value, dict) or key not in value:
                return UNDEFINED
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return UNDEFINED
            value = value[int(index)]
    return value


@dataclass
class InputVariable:
    """``$input``: the request (or integration response) body and the request's parameters."""

    body: str
    path_parameters: Mapping[str, str] = field(default_factory=dict)
    query_parameters: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    def _document(self) -> Any:
        try:
            return json.loads(self.body) if self.body.strip() else {}
        except json.JSONDecodeError:
            return self.body

    def json(self, path: str) -> str:
        value = select(self._document(), path)
        return "" if value is UNDEFINED else json.dumps(value, separators=(",", ":"))

    def path(self, path: str) -> Any:
        value = select(self._document(), path)
        return None if value is UNDEFINED else value

    def params(self, name: str | None = None) -> Any:
        every = {
            "path": dict(self.path_parameters),
            "querystring": dict(self.query_parameters),
            "header": dict(self.headers),
        }
        if name is None:
            return every
        for where in ("path", "querystring", "header"):
            if name in every[where]:
                return every[where][name]
        return ""


class UtilVariable:
    """``$util``."""

    @staticmethod
    def escapeJavaScript(text: Any) -> str:  # noqa: N802 - the name templates call
        escaped = []
        for character in _text(text):
            replacement = _JAVASCRIPT_ESCAPES.get(character)
            if replacement is not None:
                escaped.append(replacement)
            elif ord(character) < 0x20:
                escaped.append(f"\\u{ord(character):04X}")
            else:
                escaped.append(character)
        return "".join(escaped)

    @staticmethod
    def parseJson(text: Any) -> Any:  # noqa: N802
        return json.loads(_text(text))

    @staticmethod
    def base64Encode(text: Any) -> str:  # noqa: N802
        return base64.b64encode(_text(text).encode()).decode()

    @staticmethod
    def base64Decode(text: Any) -> str:  # noqa: N802
        return base64.b64decode(_text(text)).decode()

    @staticmethod
    def urlEncode(text: Any) -> str:  # noqa: N802
        return urllib.parse.quote_plus(_text(text))

    @staticmethod
    def urlDecode(text: Any) -> str:  # noqa: N802
        return urllib.parse.unquote_plus(_text(text))


# API Gateway's escapeJavaScript escapes single quotes too (a known trap: \' is not valid JSON).
_JAVASCRIPT_ESCAPES = {
    '"': '\\"',
    "'": "\\'",
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


# ---------------------------------------------------------------------------------------------- rendering


def render(template: str, variables: Mapping[str, Any]) -> str:
    """The template's text with ``variables`` (name without ``$`` to value)."""
    nodes = _Parser(template).parse()
    output: list[str] = []
    _Renderer(dict(variables)).run(nodes, output)
    return "".join(output)


def to_text(value: Any) -> str:
    """A value as Velocity writes it: strings as they are, maps and lists as Java's toString."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={to_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(to_text(item) for item in value) + "]"
    return str(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else to_text(value)


@dataclass
class _Text:
    text: str


@dataclass
class _Reference:
    source: str
    expression: Any
    quiet: bool


@dataclass
class _Set:
    name: str
    path: list[Any]
    expression: Any


@dataclass
class _If:
    branches: list[tuple[Any, list[Any]]]
    otherwise: list[Any]


@dataclass
class _ForEach:
    name: str
    expression: Any
    body: list[Any]


_DIRECTIVE = re.compile(r"#(\{)?(set|if|elseif|else|end|foreach)\b\}?")
_MEMBER = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")
_REFERENCE_START = re.compile(r"\$(!)?(\{)?([A-Za-z_][A-Za-z0-9_-]*)")


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.position = 0

    def parse(self) -> list[Any]:
        nodes, closing = self._block()
        if closing is not None:
            raise TemplateSyntaxError(f"#{closing} without its #if or #foreach")
        return nodes

    def _block(self) -> tuple[list[Any], str | None]:
        nodes: list[Any] = []
        text: list[str] = []
        source = self.source
        while self.position < len(source):
            character = source[self.position]
            if source.startswith("##", self.position):
                end = source.find("\n", self.position)
                self.position = len(source) if end < 0 else end + 1
                continue
            if character == "#" and (directive := _DIRECTIVE.match(source, self.position)):
                name = directive.group(2)
                self.position = directive.end()
                if name in ("end", "else", "elseif"):
                    nodes.append(_Text("".join(text)))
                    return nodes, name
                nodes.append(_Text("".join(text)))
                text = []
                nodes.append(self._directive(name))
                continue
            if character == "$" and (reference := self._reference()) is not None:
                nodes.append(_Text("".join(text)))
                text = []
                nodes.append(reference)
                continue
            text.append(character)
            self.position += 1
        nodes.append(_Text("".join(text)))
        return nodes, None

    def _reference(self) -> _Reference | None:
        start = self.position
        match = _REFERENCE_START.match(self.source, start)
        if match is None:
            return None
        quiet, braced, name = match.groups()
        self.position = match.end()
        expression: Any = ("var", name)
        expression = self._accessors(expression)
        if braced:
            if not self.source.startswith("}", self.position):
                raise TemplateSyntaxError(f"unclosed ${{ at {start}")
            self.position += 1
        return _Reference(self.source[start : self.position], expression, bool(quiet))

    def _accessors(self, expression: Any) -> Any:
        source = self.source
        while self.position < len(source):
            member = _MEMBER.match(source, self.position)
            if member is not None:
                self.position = member.end()
                if source.startswith("(", self.position):
                    expression = ("call", expression, member.group(1), self._arguments())
                else:
                    expression = ("get", expression, member.group(1))
                continue
            if source.startswith("[", self.position):
                self.position += 1
                index = _ExpressionParser(self).expression()
                self._expect("]")
                expression = ("index", expression, index)
                continue
            break
        return expression

    def _arguments(self) -> list[Any]:
        self._expect("(")
        arguments: list[Any] = []
        self._skip_spaces()
        if self.source.startswith(")", self.position):
            self.position += 1
            return arguments
        while True:
            arguments.append(_ExpressionParser(self).expression())
            self._skip_spaces()
            if self.source.startswith(",", self.position):
                self.position += 1
                continue
            self._expect(")")
            return arguments

    def _directive(self, name: str) -> Any:
        if name == "set":
            self._expect("(")
            self._skip_spaces()
            target = _REFERENCE_START.match(self.source, self.position)
            if target is None:
                raise TemplateSyntaxError(f"#set needs a reference at {self.position}")
            self.position = target.end()
            path: list[Any] = []
            while (
                member := re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)").match(self.source, self.position)
            ) is not None:
                path.append(member.group(1))
                self.position = member.end()
            self._expect("=")
            value = _ExpressionParser(self).expression()
            self._expect(")")
            return _Set(target.group(3), path, value)
        if name == "foreach":
            self._expect("(")
            self._skip_spaces()
            target = _REFERENCE_START.match(self.source, self.position)
            if target is None:
                raise TemplateSyntaxError(f"#foreach needs a reference at {self.position}")
            self.position = target.end()
            self._skip_spaces()
            if not self.source.startswith("in", self.position):
                raise TemplateSyntaxError(f"#foreach needs 'in' at {self.position}")
            self.position += 2
            iterable = _ExpressionParser(self).expression()
            self._expect(")")
            body, closing = self._block()
            if closing != "end":
                raise TemplateSyntaxError("#foreach without #end")
            return _ForEach(target.group(3), iterable, body)
        # if
        branches: list[tuple[Any, list[Any]]] = []
        otherwise: list[Any] = []
        condition = self._condition()
        while True:
            body, closing = self._block()
            branches.append((condition, body))
            if closing == "elseif":
                condition = self._condition()
                continue
            if closing == "else":
                otherwise, closing = self._block()
            if closing != "end":
                raise TemplateSyntaxError("#if without #end")
            return _If(branches, otherwise)

    def _condition(self) -> Any:
        self._expect("(")
        condition = _ExpressionParser(self).expression()
        self._expect(")")
        return condition

    def _skip_spaces(self) -> None:
        while self.position < len(self.source) and self.source[self.position] in " \t\r\n":
            self.position += 1

    def _expect(self, token: str) -> None:
        self._skip_spaces()
        if not self.source.startswith(token, self.position):
            found = self.source[self.position : self.position + 20]
            raise TemplateSyntaxError(f"expected {token!r} at {self.position}, found {found!r}")
        self.position += len(token)


_OPERATORS = [("||", "or"), ("&&", "and"), ("==", "=="), ("!=", "!="), ("<=", "<="), (">=", ">=")]
_WORD_OPERATORS = {
    "or": "or",
    "and": "and",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "gt": ">",
    "le": "<=",
    "ge": ">=",
}


class _ExpressionParser:
    """Expressions inside directives and method arguments, on the template parser's position."""

    def __init__(self, parser: _Parser) -> None:
        self.parser = parser

    def expression(self) -> Any:
        return self._binary(0)

    _LEVELS: tuple[tuple[str, ...], ...] = (("or",), ("and",), ("==", "!=", "<", ">", "<=", ">="))

    def _binary(self, level: int) -> Any:
        if level == len(self._LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while (operator := self._operator()) in self._LEVELS[level]:
            self._consume_operator(operator)
            left = ("op", operator, left, self._binary(level + 1))
        return left

    def _operator(self) -> str | None:
        parser = self.parser
        parser._skip_spaces()
        source, position = parser.source, parser.position
        for token, name in _OPERATORS:
            if source.startswith(token, position):
                return name
        if source.startswith("<", position) or source.startswith(">", position):
            return source[position]
        word = re.compile(r"([a-z]+)\b").match(source, position)
        if word is not None and word.group(1) in _WORD_OPERATORS:
            return _WORD_OPERATORS[word.group(1)]
        return None

    def _consume_operator(self, operator: str) -> None:
        parser = self.parser
        source, position = parser.source, parser.position
        for token, name in _OPERATORS:
            if name == operator and source.startswith(token, position):
                parser.position += len(token)
                return
        word = re.compile(r"([a-z]+)\b").match(source, position)
        if word is not None and _WORD_OPERATORS.get(word.group(1)) == operator:
            parser.position = word.end()
            return
        parser.position += len(operator)

    def _unary(self) -> Any:
        parser = self.parser
        parser._skip_spaces()
        source = parser.source
        if source.startswith("!", parser.position) and not source.startswith("!=", parser.position):
            parser.position += 1
            return ("not", self._unary())
        if re.compile(r"not\b").match(source, parser.position):
            parser.position += 3
            return ("not", self._unary())
        return self._primary()

    def _primary(self) -> Any:
        parser = self.parser
        source, position = parser.source, parser.position
        if source.startswith("(", position):
            parser.position += 1
            inner = self.expression()
            parser._expect(")")
            return inner
        if source.startswith(("'", '"'), position):
            return self._string()
        if source.startswith("$", position):
            reference = parser._reference()
            if reference is None:
                raise TemplateSyntaxError(f"bad reference at {position}")
            return reference.expression
        if source.startswith("[", position):
            return ("list", [item for item, _ in self._items("]", keyed=False)])
        if source.startswith("{", position):
            return ("map", self._items("}", keyed=True))
        return self._scalar()

    def _string(self) -> Any:
        parser = self.parser
        source, position = parser.source, parser.position
        quote = source[position]
        end = source.find(quote, position + 1)
        if end < 0:
            raise TemplateSyntaxError(f"unclosed string at {position}")
        parser.position = end + 1
        literal = source[position + 1 : end]
        # Velocity interpolates references in double-quoted strings only.
        return ("interpolate", _Parser(literal).parse()) if quote == '"' else ("literal", literal)

    def _items(self, closing: str, *, keyed: bool) -> list[tuple[Any, Any]]:
        parser = self.parser
        parser.position += 1
        items: list[tuple[Any, Any]] = []
        parser._skip_spaces()
        while not parser.source.startswith(closing, parser.position):
            first = self.expression()
            if keyed:
                parser._expect(":")
                items.append((first, self.expression()))
            else:
                items.append((first, None))
            parser._skip_spaces()
            if parser.source.startswith(",", parser.position):
                parser.position += 1
                parser._skip_spaces()
            elif not parser.source.startswith(closing, parser.position):
                raise TemplateSyntaxError(f"expected ',' or {closing!r} at {parser.position}")
        parser.position += 1
        return items

    def _scalar(self) -> Any:
        parser = self.parser
        source, position = parser.source, parser.position
        number = re.compile(r"-?\d+(\.\d+)?").match(source, position)
        if number is not None:
            parser.position = number.end()
            text = number.group(0)
            return ("literal", float(text) if "." in text else int(text))
        word = re.compile(r"(true|false|null)\b").match(source, position)
        if word is not None:
            parser.position = word.end()
            return ("literal", {"true": True, "false": False, "null": None}[word.group(1)])
        found = source[position : position + 20]
        raise TemplateSyntaxError(f"unsupported expression at {position}: {found!r}")


class _Renderer:
    def __init__(self, variables: dict[str, Any]) -> None:
        self.variables = variables

    def run(self, nodes: list[Any], output: list[str]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                output.append(node.text)
            elif isinstance(node, _Reference):
                value = self.evaluate(node.expression)
                if value is UNDEFINED or value is None:
                    output.append("" if node.quiet else node.source)
                else:
                    output.append(to_text(value))
            elif isinstance(node, _Set):
                self._set(node)
            elif isinstance(node, _If):
                self._if(node, output)
            elif isinstance(node, _ForEach):
                self._foreach(node, output)

    def _set(self, node: _Set) -> None:
        value = self.evaluate(node.expression)
        if not node.path:
            self.variables[node.name] = None if value is UNDEFINED else value
            return
        target = self.variables.get(node.name)
        for name in node.path[:-1]:
            target = target.get(name) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[node.path[-1]] = value

    def _if(self, node: _If, output: list[str]) -> None:
        for condition, body in node.branches:
            if _truthy(self.evaluate(condition)):
                self.run(body, output)
                return
        self.run(node.otherwise, output)

    def _foreach(self, node: _ForEach, output: list[str]) -> None:
        items = self.evaluate(node.expression)
        if isinstance(items, dict):
            items = list(items.values())
        if not isinstance(items, list | tuple):
            return
        saved = (self.variables.get(node.name, UNDEFINED), self.variables.get("foreach", UNDEFINED))
        for index, item in enumerate(items):
            self.variables[node.name] = item
            self.variables["foreach"] = {
                "hasNext": index + 1 < len(items),
                "index": index,
                "count": index + 1,
            }
            self.run(node.body, output)
        for name, value in zip((node.name, "foreach"), saved, strict=True):
            if value is UNDEFINED:
                self.variables.pop(name, None)
            else:
                self.variables[name] = value

    def evaluate(self, expression: Any) -> Any:
        kind = expression[0]
        if kind == "literal":
            return expression[1]
        if kind == "var":
            return self.variables.get(expression[1], UNDEFINED)
        if kind == "get":
            return _member(self.evaluate(expression[1]), expression[2])
        if kind == "index":
            return _index(self.evaluate(expression[1]), self.evaluate(expression[2]))
        if kind == "call":
            return self._call(expression)
        if kind == "interpolate":
            output: list[str] = []
            self.run(expression[1], output)
            return "".join(output)
        if kind == "list":
            return [self.evaluate(item) for item in expression[1]]
        if kind == "map":
            return {self.evaluate(key): self.evaluate(value) for key, value in expression[1]}
        if kind == "not":
            return not _truthy(self.evaluate(expression[1]))
        if kind == "op":
            return self._operate(expression[1], expression[2], expression[3])
        raise TemplateSyntaxError(f"unknown expression {kind}")

    def _call(self, expression: Any) -> Any:
        target = self.evaluate(expression[1])
        arguments = [self.evaluate(argument) for argument in expression[3]]
        method = _method(target, expression[2])
        if method is None:
            return UNDEFINED
        return method(*arguments)

    def _operate(self, operator: str, left_expression: Any, right_expression: Any) -> Any:
        left = self.evaluate(left_expression)
        if operator == "or":
            return _truthy(left) or _truthy(self.evaluate(right_expression))
        if operator == "and":
            return _truthy(left) and _truthy(self.evaluate(right_expression))
        right = self.evaluate(right_expression)
        left = None if left is UNDEFINED else left
        right = None if right is UNDEFINED else right
        comparisons: dict[str, Callable[[Any, Any], bool]] = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            ">": lambda a, b: a > b,
            "<=": lambda a, b: a <= b,
            ">=": lambda a, b: a >= b,
        }
        try:
            return comparisons[operator](left, right)
        except TypeError:
            return False


def _truthy(value: Any) -> bool:
    """Velocity: null and false are false; everything else (empty strings too) is true."""
    return value is not UNDEFINED and value is not None and value is not False


def _member(target: Any, name: str) -> Any:
    if isinstance(target, dict):
        return target.get(name, UNDEFINED)
    if target is UNDEFINED or target is None:
        return UNDEFINED
    value = getattr(target, name, UNDEFINED)
    return UNDEFINED if callable(value) else value


def _index(target: Any, index: Any) -> Any:
    if isinstance(target, list) and isinstance(index, int) and -len(target) <= index < len(target):
        return target[index]
    if isinstance(target, dict):
        return target.get(index, UNDEFINED)
    return UNDEFINED


def _replace_all(text: str, pattern: str, replacement: str) -> str:
    """Java's String.replaceAll: a regular expression, ``$n`` for its groups in the replacement."""
    python_replacement = re.sub(r"\$(\d)", r"\\\1", replacement.replace("\\", "\\\\"))
    return re.sub(pattern, python_replacement, text)


def _append(items: list[Any], item: Any) -> bool:
    items.append(item)
    return True


def _method(target: Any, name: str) -> Callable[..., Any] | None:
    """The Java methods templates call on maps, lists and strings, and the gateway objects' own."""
    if target is UNDEFINED or target is None:
        return None
    if isinstance(target, dict):
        java: dict[str, Callable[..., Any]] = {
            "get": lambda key: target.get(key, UNDEFINED),
            "containsKey": lambda key: key in target,
            "keySet": lambda: list(target.keys()),
            "size": lambda: len(target),
            "isEmpty": lambda: not target,
            "put": lambda key, value: target.__setitem__(key, value),
        }
        return java.get(name)
    if isinstance(target, list):
        java_list: dict[str, Callable[..., Any]] = {
            "get": lambda index: _index(target, index),
            "size": lambda: len(target),
            "isEmpty": lambda: not target,
            "add": lambda item: _append(target, item),
        }
        return java_list.get(name)
    if isinstance(target, str):
        java_string: dict[str, Callable[..., Any]] = {
            "length": lambda: len(target),
            "isEmpty": lambda: not target,
            "toLowerCase": target.lower,
            "toUpperCase": target.upper,
            "trim": target.strip,
            "contains": lambda part: _text(part) in target,
            "startsWith": lambda part: target.startswith(_text(part)),
            "endsWith": lambda part: target.endswith(_text(part)),
            "replace": lambda old, new: target.replace(_text(old), _text(new)),
            "replaceAll": lambda pattern, new: _replace_all(target, _text(pattern), _text(new)),
            "equals": lambda other: target == other,
        }
        return java_string.get(name)
    method = getattr(target, name, None)
    return method if callable(method) else None
