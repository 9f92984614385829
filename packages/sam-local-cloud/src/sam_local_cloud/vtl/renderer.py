"""Nodes into text: references evaluated against the variables, directives run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sam_local_cloud.vtl.parser import (
    ForEachDirective,
    IfDirective,
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


def render(template: str, variables: Mapping[str, Any]) -> str:
    """The template's text with ``variables`` (name without ``$`` to value)."""
    nodes = Parser(template).parse()
    output: list[str] = []
    _Renderer(dict(variables)).run(nodes, output)
    return "".join(output)


class _Renderer:
    def __init__(self, variables: dict[str, Any]) -> None:
        self.variables = variables

    def run(self, nodes: list[Any], output: list[str]) -> None:
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

    def evaluate(self, expression: Any) -> Any:
        kind = expression[0]
        if kind == "literal":
            return expression[1]
        if kind == "var":
            return self.variables.get(expression[1], UNDEFINED)
        if kind == "get":
            return member_of(self.evaluate(expression[1]), expression[2])
        if kind == "index":
            return item_at(self.evaluate(expression[1]), self.evaluate(expression[2]))
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
            return not truthy(self.evaluate(expression[1]))
        if kind == "op":
            return self._operate(expression[1], expression[2], expression[3])
        raise TemplateSyntaxError(f"unknown expression {kind}")

    def _call(self, expression: Any) -> Any:
        target = self.evaluate(expression[1])
        arguments = [self.evaluate(argument) for argument in expression[3]]
        method = java_method(target, expression[2])
        if method is None:
            return UNDEFINED
        return method(*arguments)

    def _operate(self, operator: str, left_expression: Any, right_expression: Any) -> Any:
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
