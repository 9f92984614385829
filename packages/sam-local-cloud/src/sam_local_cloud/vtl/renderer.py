"""Nodes into text: references evaluated against the variables, directives run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sam_local_cloud.vtl.parser import (
    Expression,
    ForEachDirective,
    IfDirective,
    Node,
    Parser,
    Reference,
    SetDirective,
    Text,
)
from sam_local_cloud.vtl.values import (
    UNDEFINED,
    TemplateSyntaxError,
    item_at,
    java_method,
    member_of,
    to_text,
    truthy,
)


def render(template: str, variables: Mapping[str, object]) -> str:
    """The template's text with ``variables`` (name without ``$`` to value)."""
    nodes = Parser(template).parse()
    output: list[str] = []
    _Renderer(dict(variables)).run(nodes, output)
    return "".join(output)


class _Renderer:
    def __init__(self, variables: dict[str, object]) -> None:
        self.variables = variables

    def run(self, nodes: list[Node], output: list[str]) -> None:
        for node in nodes:
            if isinstance(node, Text):
                output.append(node.text)
            elif isinstance(node, Reference):
                value = self.evaluate(node.expression)
                if value is UNDEFINED or value is None:
                    output.append("" if node.quiet else node.source)
                else:
                    output.append(to_text(value))
            elif isinstance(node, SetDirective):
                self._set(node)
            elif isinstance(node, IfDirective):
                self._if(node, output)
            elif isinstance(node, ForEachDirective):
                self._foreach(node, output)

    def _set(self, node: SetDirective) -> None:
        value = self.evaluate(node.expression)
        if not node.path:
            self.variables[node.name] = None if value is UNDEFINED else value
            return
        target = self.variables.get(node.name)
        for name in node.path[:-1]:
            target = target.get(name) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[node.path[-1]] = value

    def _if(self, node: IfDirective, output: list[str]) -> None:
        for condition, body in node.branches:
            if truthy(self.evaluate(condition)):
                self.run(body, output)
                return
        self.run(node.otherwise, output)

    def _foreach(self, node: ForEachDirective, output: list[str]) -> None:
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

    def evaluate(self, expression: Expression) -> object:
        if expression[0] == "literal":
            return expression[1]
        if expression[0] == "var":
            return self.variables.get(expression[1], UNDEFINED)
        if expression[0] == "get":
            return member_of(self.evaluate(expression[1]), expression[2])
        if expression[0] == "index":
            return item_at(self.evaluate(expression[1]), self.evaluate(expression[2]))
        if expression[0] == "call":
            return self._call(expression[1], expression[2], expression[3])
        if expression[0] == "interpolate":
            output: list[str] = []
            self.run(expression[1], output)
            return "".join(output)
        if expression[0] == "list":
            return [self.evaluate(item) for item in expression[1]]
        if expression[0] == "map":
            return {self.evaluate(key): self.evaluate(value) for key, value in expression[1]}
        if expression[0] == "not":
            return not truthy(self.evaluate(expression[1]))
        if expression[0] == "op":
            return self._operate(expression[1], expression[2], expression[3])
        raise TemplateSyntaxError(f"unknown expression {expression[0]}")

    def _call(
        self, target_expression: Expression, name: str, argument_expressions: list[Expression]
    ) -> object:
        target = self.evaluate(target_expression)
        arguments = [self.evaluate(argument) for argument in argument_expressions]
        method = java_method(target, name)
        if method is None:
            return UNDEFINED
        return method(*arguments)

    def _operate(self, operator: str, left_expression: Expression, right_expression: Expression) -> object:
        left = self.evaluate(left_expression)
        if operator == "or":
            return truthy(left) or truthy(self.evaluate(right_expression))
        if operator == "and":
            return truthy(left) and truthy(self.evaluate(right_expression))
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
