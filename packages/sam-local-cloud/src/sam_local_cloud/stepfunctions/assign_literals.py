"""Text written in an ``Assign`` block holds what its JSON string says, escapes decoded.

moto kept the string's JSON source: ``"Assign": {"quote": "\\""}`` gave the variable a backslash and a
quote, and ``"{\\"key\\":\\"value\\"}"`` a text that ``States.StringToJson($var)`` could not parse. AWS
assigns the decoded text (recorded: ``$quote = '"'`` is true).
"""

from __future__ import annotations

import json
from typing import Any

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import AssignTemplateValueTerminalLit, Preprocessor

    def visit_string_literal(self: Any, ctx: Any) -> Any:
        source = ctx.string_literal().getText()
        try:
            value = json.loads(source)
        except json.JSONDecodeError:
            value = internals.inner_string_of(self, ctx.string_literal())
        return AssignTemplateValueTerminalLit(value=value)

    hooks.replace(
        Preprocessor,
        "visitAssign_template_value_terminal_string_literal",
        visit_string_literal,
        concern="assign_literals",
    )
