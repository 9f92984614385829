"""moto's parse of a definition, with the syntax tree kept per definition text.

moto parses a definition with its generated ANTLR parser, in pure Python, where CreateStateMachine and
UpdateStateMachine validate it and again for every execution: each StartExecution, StartSyncExecution and
Distributed Map child. For the app's 63 KB definition the syntax tree alone costs 250-350 ms of CPU per
execution, more than the rest of a small batch's interpreter work.

The tree is a function of the text alone, and nothing writes to it: the Preprocessor only reads it. So the
trees of the last ``PARSE_TREES_KEPT`` texts are kept, and every parse still builds its own program from its
tree with a new Preprocessor. No two executions share a component, and a definition with a syntax error is
refused on every parse (a failed parse is never kept).

The Preprocessor asks the tree's nodes for their text about 25,000 times per parse of the app's definition
(``getText``, which joins the texts of a node's children, recursively, anew at every call), and turns each
string literal into its value with ``ast.literal_eval``. Both are functions of the kept tree's text, so a
node of a kept tree keeps its text once asked (``_KeptTrees``), and a literal's value is kept per text.
This made a parse from a kept tree of the app's definition about three times as fast (63-77 -> 20-25 ms of
CPU, docs/benchmark.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from sam_local_cloud.moto_seam import hooks

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import Program, RuleContext

# Enough for every state machine of a template and its Map children; a tree of a 63 KB definition is ~6 MB.
PARSE_TREES_KEPT = 32


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        AmazonStateLanguageParser,
        Preprocessor,
        RuleContext,
        preprocessor,
    )

    def parse(definition: str) -> tuple[Program, RuleContext]:
        tree = syntax_tree(definition)
        return Preprocessor().visit(tree), tree

    hooks.replace(AmazonStateLanguageParser, "parse", staticmethod(parse), concern="parse_trees")

    @hooks.around(RuleContext, "getText", concern="parse_trees")
    def get_text(proceed: Callable[[RuleContext], str], node: RuleContext) -> str:
        return _kept_trees.text(node, proceed)

    @hooks.around(preprocessor, "from_string_literal", concern="parse_trees")
    def from_string_literal(
        proceed: Callable[[RuleContext], str | None], parser_rule_context: RuleContext
    ) -> str | None:
        text = parser_rule_context.getText()
        value = _literal_values.get(text)
        if value is None:
            value = proceed(parser_rule_context)
            if len(_literal_values) >= _LITERAL_VALUES_KEPT:
                _literal_values.clear()
            _literal_values[text] = value
        return value


# A literal's value per its text (``ast.literal_eval`` of a long string is a third of a millisecond).
_LITERAL_VALUES_KEPT = 4096
_literal_values: dict[str, str | None] = {}


class _NodeEntry:
    """A rule node of a kept tree, and its text once asked."""

    __slots__ = ("node", "text")

    def __init__(self, node: RuleContext) -> None:
        self.node = node
        self.text: str | None = None


class _KeptTrees:
    """The syntax trees of the last ``kept`` definition texts, and the text of each of their rule nodes.

    A node's text is computed at its first ``getText`` and kept. Nodes are known by ``id``: antlr's
    contexts have ``__slots__`` and no weak references. An entry holds its node, so the id cannot be reused
    while the entry exists, and a tree's entries go with the tree. A node of any other tree (a JSONPath or
    an intrinsic function parsed at run time, a tree still being built) is answered by antlr's own
    ``getText``.
    """

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.hits = 0
        self.misses = 0
        self._trees: OrderedDict[str, RuleContext] = OrderedDict()
        self._node_ids: dict[str, list[int]] = {}
        self._entries: dict[int, _NodeEntry] = {}
        self._lock = threading.Lock()

    def tree(self, definition: str) -> RuleContext:
        with self._lock:
            tree = self._trees.get(definition)
            if tree is not None:
                self._trees.move_to_end(definition)
                self.hits += 1
                return tree
            self.misses += 1
        tree = _parsed(definition)  # outside the lock: a parse of a large definition takes 0.3 s
        entries = _rule_nodes(tree)
        with self._lock:
            if definition in self._trees:  # another thread parsed it meanwhile: keep one
                return self._trees[definition]
            self._trees[definition] = tree
            self._node_ids[definition] = list(entries)
            self._entries.update(entries)
            while len(self._trees) > self.kept:
                forgotten, _ = self._trees.popitem(last=False)
                for node_id in self._node_ids.pop(forgotten):
                    self._entries.pop(node_id, None)
        return tree

    def text(self, node: RuleContext, compute: Callable[[RuleContext], str]) -> str:
        entry = self._entries.get(id(node))
        if entry is None or entry.node is not node:
            return str(compute(node))
        text = entry.text
        if text is None:
            text = entry.text = compute(node)
        return str(text)


def _rule_nodes(tree: RuleContext) -> dict[int, _NodeEntry]:
    from sam_local_cloud.moto_seam.stepfunctions import RuleContext

    entries: dict[int, _NodeEntry] = {}
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, RuleContext):
            entries[id(node)] = _NodeEntry(node)
            pending.extend(node.getChildren())
    return entries


_kept_trees = _KeptTrees(PARSE_TREES_KEPT)


def syntax_tree(definition: str) -> RuleContext:
    """The state machine's ANTLR tree, as moto's ``AmazonStateLanguageParser.parse`` builds it, kept."""
    return _kept_trees.tree(definition)


def kept_tree_counts() -> tuple[int, int]:
    """How many parses found their tree kept, and how many parsed it."""
    return _kept_trees.hits, _kept_trees.misses


def _parsed(definition: str) -> RuleContext:
    from antlr4 import CommonTokenStream, InputStream

    from sam_local_cloud.moto_seam.stepfunctions import (
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
