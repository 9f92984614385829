"""A definition's syntax tree is parsed once and kept; every parse still builds a program of its own."""

from __future__ import annotations

import json

import pytest

from orderbatch.localcloud.moto_seam.stepfunctions import AmazonStateLanguageParser, ASLParserException
from orderbatch.localcloud.stepfunctions import apply_interpreter_patches
from orderbatch.localcloud.stepfunctions.parse_trees import syntax_tree

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
    before = syntax_tree.cache_info()
    first_program, first_tree = AmazonStateLanguageParser.parse(DEFINITION)
    second_program, second_tree = AmazonStateLanguageParser.parse(DEFINITION)
    after = syntax_tree.cache_info()

    assert second_tree is first_tree
    assert after.hits - before.hits >= 1
    assert second_program is not first_program
    first_states = first_program.states.states
    second_states = second_program.states.states
    assert list(first_states) == list(second_states) == ["Items"]
    assert first_states["Items"] is not second_states["Items"]


def test_a_syntax_error_is_refused_on_every_parse_and_never_kept() -> None:
    broken = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": "yes"}}})
    misses = syntax_tree.cache_info().misses
    for _attempt in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse(broken)
    assert syntax_tree.cache_info().misses == misses + 2
