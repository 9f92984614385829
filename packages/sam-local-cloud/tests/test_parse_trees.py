"""A definition's syntax tree is parsed once and kept; every parse still builds a program of its own."""

from __future__ import annotations

import json
from typing import Any

import pytest
from antlr4.tree.Tree import TerminalNode

from sam_local_cloud.moto_seam.stepfunctions import AmazonStateLanguageParser, ASLParserException
from sam_local_cloud.stepfunctions import apply_interpreter_patches
from sam_local_cloud.stepfunctions.parse_trees import (
    _KeptTrees,
    _rule_nodes,
    kept_tree_counts,
    syntax_tree,
)

DEFINITION = json.dumps(
    {
        "StartAt": "Items",
        "States": {
            "Items": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "Each", "States": {"Each": {"Type": "Pass", "End": True}}},
                "End": True,
            }
        },
    }
)


@pytest.fixture(autouse=True)
def patched() -> None:
    apply_interpreter_patches()


def test_two_parses_of_one_definition_share_the_tree_and_never_a_component() -> None:
    hits_before, _ = kept_tree_counts()
    first_program, first_tree = AmazonStateLanguageParser.parse(DEFINITION)
    second_program, second_tree = AmazonStateLanguageParser.parse(DEFINITION)
    hits_after, _ = kept_tree_counts()

    assert second_tree is first_tree
    assert hits_after - hits_before >= 1
    assert second_program is not first_program
    first_states = first_program.states.states
    second_states = second_program.states.states
    assert list(first_states) == list(second_states) == ["Items"]
    assert first_states["Items"] is not second_states["Items"]


def test_a_syntax_error_is_refused_on_every_parse_and_never_kept() -> None:
    broken = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": "yes"}}})
    _, misses = kept_tree_counts()
    for _attempt in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse(broken)
    assert kept_tree_counts()[1] == misses + 2


def _text_from_tokens(node: Any) -> str:
    """A node's text as the joined texts of the tokens under it, computed without ``getText``."""
    if isinstance(node, TerminalNode):
        return str(node.symbol.text)
    return "".join(_text_from_tokens(child) for child in node.getChildren())


def test_the_kept_texts_of_a_tree_are_the_texts_of_its_tokens_at_every_node() -> None:
    definition = json.dumps(
        {
            "Comment": 'quotes " and escapes \\n kept as written',
            "StartAt": "Choose",
            "States": {
                "Choose": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.n", "NumericGreaterThan": 1, "Next": "Done"}],
                    "Default": "Done",
                },
                "Done": {"Type": "Pass", "Result": {"text.$": "States.Format('{}', $.n)"}, "End": True},
            },
        }
    )
    tree = syntax_tree(definition)
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        if not isinstance(node, TerminalNode):
            nodes.append(node)
            pending.extend(node.getChildren())

    # Asked twice: the first answer is computed and kept, the second is the kept one.
    for _round in range(2):
        assert [node.getText() for node in nodes] == [_text_from_tokens(node) for node in nodes]
    program, _ = AmazonStateLanguageParser.parse(definition)
    assert list(program.states.states) == ["Choose", "Done"]  # type: ignore[attr-defined]


def test_a_forgotten_tree_takes_its_nodes_with_it_and_they_are_answered_afresh() -> None:
    kept = _KeptTrees(kept=2)
    definitions = [
        json.dumps({"StartAt": name, "States": {name: {"Type": "Pass", "End": True}}}) for name in "ABC"
    ]
    first = kept.tree(definitions[0])
    first_nodes = len(_rule_nodes(first))
    for definition in definitions:
        kept.tree(definition)  # the first is a hit, then B and C are parsed and A is forgotten

    assert (kept.hits, kept.misses) == (1, 3)
    assert len(kept._entries) == sum(len(_rule_nodes(kept.tree(d))) for d in definitions[1:])
    assert all(kept._entries.get(node_id) is None for node_id in _rule_nodes(first))
    assert first_nodes > 0
    # A node no kept tree holds is answered by what computes it, every time.
    calls: list[Any] = []

    def compute(node: Any) -> str:
        calls.append(node)
        return "computed"

    assert kept.text(first, compute) == kept.text(first, compute) == "computed"
    assert calls == [first, first]
