"""Render the workflow source (YAML with anchors) into the definition file the template deploys.

``statemachine/order_batch.workflow.yaml`` writes each retrier and the per-order steps once, with YAML
anchors and aliases. AWS reads a YAML ``DefinitionUri`` file with Jackson, which does not resolve
aliases, so the template names ``statemachine/order_batch.asl.yaml``: the source's ``definition`` with
every alias expanded. Rendering works on YAML nodes, not Python values, so key order and each scalar's
style survive: a plain ``${Name}`` stays plain and becomes a number once CloudFormation substitutes the
raw text, a quoted one stays a string.

State names must be unique in the whole state machine, so states written once and aliased into several
Maps need a different name in each copy: ``x-state-name-suffix`` on an ``ItemProcessor`` (or a Parallel
branch) appends its text to the name of every state in it and to every reference to one (``StartAt``,
``Next``, ``Default``, a Choice rule's or a Catcher's ``Next``). The key itself is not rendered, and a
rendered definition that still repeats a name is refused.

    python -m orderbatch.workflow_source          # rewrite the committed file (``make statemachine``)
    python -m orderbatch.workflow_source --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sam_local_cloud.state_names import duplicate_state_names

# The project in the current directory (`make statemachine` and `make lint` run from its root).
SOURCE = Path("statemachine") / "order_batch.workflow.yaml"
RENDERED = Path("statemachine") / "order_batch.asl.yaml"
DEFINITION_KEY = "definition"
STATE_NAME_SUFFIX_KEY = "x-state-name-suffix"

_MERGE_TAG = "tag:yaml.org,2002:merge"
# Long Comments stay on one line: a folded line is valid YAML but harder to compare with the source.
_NO_WRAP = 1_000_000


class WorkflowSourceError(ValueError):
    """The workflow source cannot be rendered."""


def header(source: Path) -> str:
    return (
        f"# Generated from {source.name} by `make statemachine`; do not edit.\n"
        "# Every alias of the source is expanded here because AWS's YAML reader does not resolve them.\n"
    )


def render(source: Path = SOURCE) -> str:
    """The definition file's text for the workflow source at ``source``."""
    root = yaml.compose(source.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    if not isinstance(root, MappingNode):
        raise WorkflowSourceError(f"{source}: the top level must be a mapping")
    definition = next(
        (value for key, value in root.value if isinstance(key, ScalarNode) and key.value == DEFINITION_KEY),
        None,
    )
    if not isinstance(definition, MappingNode):
        raise WorkflowSourceError(f"{source}: no '{DEFINITION_KEY}' mapping to render")
    body = yaml.serialize(
        _expanded(definition),
        Dumper=yaml.SafeDumper,
        width=_NO_WRAP,
        allow_unicode=True,
        explicit_start=False,
    )
    repeated = duplicate_state_names(yaml.safe_load(body))
    if repeated:
        where = "; ".join(f"'{name}' at {path}" for name, path in repeated)
        raise WorkflowSourceError(
            f"{source}: state names must be unique in the whole state machine; repeated: {where}. "
            f"Give each aliased copy its own `{STATE_NAME_SUFFIX_KEY}`."
        )
    return header(source) + body


def _expanded(node: Node) -> Node:
    """A copy of ``node`` sharing no child with another place, so the serializer writes no anchors."""
    if isinstance(node, ScalarNode):
        return ScalarNode(node.tag, node.value, style=node.style)
    if isinstance(node, SequenceNode):
        return SequenceNode(node.tag, [_expanded(item) for item in node.value], flow_style=node.flow_style)
    if isinstance(node, MappingNode):
        pairs = []
        suffix: str | None = None
        for key, value in _merged_pairs(node):
            if isinstance(key, ScalarNode) and key.value == STATE_NAME_SUFFIX_KEY:
                if not isinstance(value, ScalarNode) or not value.value.strip():
                    raise WorkflowSourceError(
                        f"line {key.start_mark.line + 1}: {STATE_NAME_SUFFIX_KEY} must be a non-empty string"
                    )
                suffix = value.value
                continue
            pairs.append((_expanded(key), _expanded(value)))
        expanded = MappingNode(node.tag, pairs, flow_style=node.flow_style)
        if suffix is not None:
            _suffix_state_names(expanded, suffix, line=node.start_mark.line + 1)
        return expanded
    raise WorkflowSourceError(f"unexpected YAML node {type(node).__name__}")


def _merged_pairs(mapping: MappingNode) -> list[tuple[Node, Node]]:
    """The pairs of ``mapping`` with its merge keys (``<<``) applied as YAML 1.1 defines them.

    Jackson does not apply merge keys, so the renderer does: the merged mapping's pairs come first, in
    their order, and a key written beside the ``<<`` replaces the merged value in place. With a sequence
    of mappings, an earlier one wins over a later one.
    """
    merged: list[tuple[Node, Node]] = []
    explicit: list[tuple[Node, Node]] = []
    for key, value in mapping.value:
        if key.tag != _MERGE_TAG:
            explicit.append((key, value))
            continue
        sources = value.value if isinstance(value, SequenceNode) else [value]
        for source in sources:
            if not isinstance(source, MappingNode):
                raise WorkflowSourceError(
                    f"line {key.start_mark.line + 1}: a merge key (<<) takes a mapping or a list of mappings"
                )
            for pair in _merged_pairs(source):
                if _key_text(pair[0]) not in {_key_text(k) for k, _ in merged}:
                    merged.append(pair)
    overrides = {_key_text(key): (key, value) for key, value in explicit}
    pairs = [overrides.pop(_key_text(key), (key, value)) for key, value in merged]
    return pairs + [pair for pair in explicit if _key_text(pair[0]) in overrides]


def _key_text(key: Node) -> object:
    return key.value if isinstance(key, ScalarNode) else id(key)


def _value_of(mapping: MappingNode, key: str) -> Node | None:
    return next(
        (value for name, value in mapping.value if isinstance(name, ScalarNode) and name.value == key), None
    )


def _suffix_state_names(container: MappingNode, suffix: str, *, line: int) -> None:
    """Append ``suffix`` to every state name in ``container`` (a processor or branch, already expanded,
    so nothing in it is shared) and in the processors and branches nested in it, references included."""
    states = _value_of(container, "States")
    if not isinstance(states, MappingNode):
        raise WorkflowSourceError(f"line {line}: {STATE_NAME_SUFFIX_KEY} is only for a mapping with States")
    names = {key.value for key, _ in states.value if isinstance(key, ScalarNode)}
    renamed = [key for key, _ in states.value]
    renamed.append(_value_of(container, "StartAt"))
    for _, state in states.value:
        if isinstance(state, MappingNode):
            renamed += _transitions(state)
            for nested in _nested_scopes(state):
                _suffix_state_names(nested, suffix, line=line)
    for node in renamed:
        if isinstance(node, ScalarNode) and node.value in names:
            node.value += suffix


def _transitions(state: MappingNode) -> list[Node | None]:
    """The nodes of ``state`` naming a state to go to: Next, Default, each Choice rule's and Catcher's."""
    found = [_value_of(state, "Next"), _value_of(state, "Default")]
    for rules_key in ("Choices", "Catch"):
        rules = _value_of(state, rules_key)
        if isinstance(rules, SequenceNode):
            found += [_value_of(rule, "Next") for rule in rules.value if isinstance(rule, MappingNode)]
    return found


def _nested_scopes(state: MappingNode) -> list[MappingNode]:
    """The Map processor or Parallel branches of ``state``: each has States of its own."""
    scopes = [_value_of(state, key) for key in ("ItemProcessor", "Iterator")]
    branches = _value_of(state, "Branches")
    if isinstance(branches, SequenceNode):
        scopes += branches.value
    return [scope for scope in scopes if isinstance(scope, MappingNode)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--output", type=Path, default=RENDERED)
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is out of date")
    args = parser.parse_args(argv)
    text = render(args.source)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run `make statemachine`", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
