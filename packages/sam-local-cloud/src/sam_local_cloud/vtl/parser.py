"""Template text into nodes: text, references, and the ``#set``, ``#if`` and ``#foreach`` directives with
the expressions inside them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from sam_local_cloud.json_types import JsonScalar
from sam_local_cloud.vtl.values import TemplateSyntaxError


@dataclass
class Text:
    text: str


@dataclass
class Reference:
    source: str
    expression: Expression
    quiet: bool


@dataclass
class SetDirective:
    name: str
    path: list[str]
    expression: Expression


@dataclass
class IfDirective:
    branches: list[tuple[Expression, list[Node]]]
    otherwise: list[Node]


@dataclass
class ForEachDirective:
    name: str
    expression: Expression
    body: list[Node]


Node: TypeAlias = Text | Reference | SetDirective | IfDirective | ForEachDirective
# An expression is a tuple tagged by its first item, the way the renderer dispatches on it.
Expression: TypeAlias = (
    tuple[Literal["literal"], JsonScalar]
    | tuple[Literal["var"], str]
    | tuple[Literal["get"], "Expression", str]
    | tuple[Literal["index"], "Expression", "Expression"]
    | tuple[Literal["call"], "Expression", str, list["Expression"]]
    | tuple[Literal["interpolate"], list[Node]]
    | tuple[Literal["list"], list["Expression"]]
    | tuple[Literal["map"], list[tuple["Expression", "Expression"]]]
    | tuple[Literal["not"], "Expression"]
    | tuple[Literal["op"], str, "Expression", "Expression"]
)


_DIRECTIVE = re.compile(r"#(\{)?(set|if|elseif|else|end|foreach)\b\}?")
_MEMBER = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")
_REFERENCE_START = re.compile(r"\$(!)?(\{)?([A-Za-z_][A-Za-z0-9_-]*)")


class Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.position = 0

    def parse(self) -> list[Node]:
        nodes, closing = self._block()
        if closing is not None:
            raise TemplateSyntaxError(f"#{closing} without its #if or #foreach")
        return nodes

    def _block(self) -> tuple[list[Node], str | None]:
        nodes: list[Node] = []
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
                    nodes.append(Text("".join(text)))
                    return nodes, name
                nodes.append(Text("".join(text)))
                text = []
                nodes.append(self._directive(name))
                continue
            if character == "$" and (reference := self._reference()) is not None:
                nodes.append(Text("".join(text)))
                text = []
                nodes.append(reference)
                continue
            text.append(character)
            self.position += 1
        nodes.append(Text("".join(text)))
        return nodes, None

    def _reference(self) -> Reference | None:
        start = self.position
        match = _REFERENCE_START.match(self.source, start)
        if match is None:
            return None
        quiet, braced, name = match.groups()
        self.position = match.end()
        expression = self._accessors(("var", name))
        if braced:
            if not self.source.startswith("}", self.position):
                raise TemplateSyntaxError(f"unclosed ${{ at {start}")
            self.position += 1
        return Reference(self.source[start : self.position], expression, bool(quiet))

    def _accessors(self, expression: Expression) -> Expression:
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

    def _arguments(self) -> list[Expression]:
        self._expect("(")
        arguments: list[Expression] = []
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

    def _directive(self, name: str) -> SetDirective | ForEachDirective | IfDirective:
        if name == "set":
            self._expect("(")
            self._skip_spaces()
            target = _REFERENCE_START.match(self.source, self.position)
            if target is None:
                raise TemplateSyntaxError(f"#set needs a reference at {self.position}")
            self.position = target.end()
            path: list[str] = []
            while (
                member := re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)").match(self.source, self.position)
            ) is not None:
                path.append(member.group(1))
                self.position = member.end()
            self._expect("=")
            value = _ExpressionParser(self).expression()
            self._expect(")")
            return SetDirective(target.group(3), path, value)
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
            return ForEachDirective(target.group(3), iterable, body)
        # if
        branches: list[tuple[Expression, list[Node]]] = []
        otherwise: list[Node] = []
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
            return IfDirective(branches, otherwise)

    def _condition(self) -> Expression:
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

    def __init__(self, parser: Parser) -> None:
        self.parser = parser

    def expression(self) -> Expression:
        return self._binary(0)

    _LEVELS: tuple[tuple[str, ...], ...] = (("or",), ("and",), ("==", "!=", "<", ">", "<=", ">="))

    def _binary(self, level: int) -> Expression:
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

    def _unary(self) -> Expression:
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

    def _primary(self) -> Expression:
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
            entries = self._items("}", keyed=True)
            return ("map", [(key, value) for key, value in entries if value is not None])
        return self._scalar()

    def _string(self) -> Expression:
        parser = self.parser
        source, position = parser.source, parser.position
        quote = source[position]
        end = source.find(quote, position + 1)
        if end < 0:
            raise TemplateSyntaxError(f"unclosed string at {position}")
        parser.position = end + 1
        literal = source[position + 1 : end]
        # Velocity interpolates references in double-quoted strings only.
        return ("interpolate", Parser(literal).parse()) if quote == '"' else ("literal", literal)

    def _items(self, closing: str, *, keyed: bool) -> list[tuple[Expression, Expression | None]]:
        parser = self.parser
        parser.position += 1
        items: list[tuple[Expression, Expression | None]] = []
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

    def _scalar(self) -> Expression:
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
