"""moto's parse of a definition, with the syntax tree kept per definition text.

moto parses a definition with its generated ANTLR parser, in pure Python, where CreateStateMachine and
UpdateStateMachine validate it and again for every execution: each StartExecution, StartSyncExecution and
Distributed Map child. For the app's 63 KB definition the syntax tree alone costs 250-350 ms of CPU per
execution, more than the rest of a small batch's interpreter work.

The tree is a function of the text alone, and nothing writes to it: the Preprocessor only reads it. So the
trees of the last ``PARSE_TREES_KEPT`` texts are kept, and every parse still builds its own program from its
tree with a new Preprocessor. No two executions share a component, and a definition with a syntax error is
refused on every parse (a failed parse is never kept).
"""

from __future__ import annotations

import functools
from typing import Any

from orderbatch.localcloud.moto_seam import hooks

# Enough for every state machine of a template and its Map children; a tree of a 63 KB definition is ~6 MB.
PARSE_TREES_KEPT = 32


def register_hooks() -> None:
    from orderbatch.localcloud.moto_seam.stepfunctions import AmazonStateLanguageParser, Preprocessor

    def parse(definition: str) -> tuple[Any, Any]:
        tree = syntax_tree(definition)
        return Preprocessor().visit(tree), tree

    hooks.replace(AmazonStateLanguageParser, "parse", staticmethod(parse), concern="parse_trees")


@functools.lru_cache(maxsize=PARSE_TREES_KEPT)
def syntax_tree(definition: str) -> Any:
    """The state machine's ANTLR tree, as moto's ``AmazonStateLanguageParser.parse`` builds it."""
    from antlr4 import CommonTokenStream, InputStream

    from orderbatch.localcloud.moto_seam.stepfunctions import (
        ASLLexer,
        ASLParser,
        ASLParserException,
        SyntaxErrorListener,
    )

    listener = SyntaxErrorListener()
    parser = ASLParser(CommonTokenStream(ASLLexer(InputStream(definition))))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    tree = parser.state_machine()
    if listener.errors:
        raise ASLParserException(errors=listener.errors)
    return tree
