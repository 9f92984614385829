"""The conformance cases on disk: one folder per AWS-recorded execution (see orderbatch/conformance/NOTICE).

A folder holds ``case.json`` (input, recorded outcome, provenance, functions, S3 objects, DynamoDB
tables, the snapshot's transformers), ``definition.json`` (ASL with ``${FunctionArn_<name>}`` and
``${StateMachineArn_<name>}`` placeholders) and ``handlers/<function>.py.txt`` (the handler's Python
source, verbatim).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Required, TypedDict

from orderbatch.conformance.outcome import Outcome
from sam_local_cloud.json_types import JsonObject, JsonValue

# Shipped inside the package (its data files), so `orderbatch conformance` runs from an installed wheel.
DEFAULT_CASES_DIR = Path(__file__).resolve().parent / "cases"
STATE_TYPES = ("Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Map", "Parallel")
_INTRINSIC = re.compile(r"States\.([A-Za-z0-9]+)\(")
_PLACEHOLDER = re.compile(r"\$\{(FunctionArn|StateMachineArn)_([A-Za-z0-9_-]+)\}")


@dataclass(frozen=True)
class CaseFunction:
    name: str
    handler: str
    runtime: str
    timeout: int
    environment: dict[str, str]
    source: Path


class S3Setup(TypedDict, total=False):
    """An S3 call the recorded test made before its execution: create_bucket or put_object."""

    call: Required[str]
    bucket: Required[str]
    key: str
    body: str


@dataclass
class Case:
    id: str
    folder: Path
    definition_text: str
    input_text: str
    state_machine_name: str
    expected: Outcome
    source: JsonObject
    functions: dict[str, CaseFunction] = field(default_factory=dict)
    nested_state_machines: dict[str, JsonObject] = field(default_factory=dict)
    s3_setup: list[S3Setup] = field(default_factory=list)
    dynamodb_tables: list[dict[str, str]] = field(default_factory=list)  # {"table", "partition_key"}
    regex_transformers: list[tuple[str, str]] = field(default_factory=list)
    jsonpath_transformers: list[JsonObject] = field(default_factory=list)
    # The test sorted Parallel branch events before snapshotting (normalise.parallel_events_as_snapshotted).
    parallel_events_normalised: bool = False
    adjustments: list[str] = field(default_factory=list)

    @cached_property
    def definition(self) -> JsonObject:
        return dict(json.loads(self.definition_text))

    @cached_property
    def state_types(self) -> set[str]:
        return {str(state.get("Type")) for _, state in iter_states(self.definition)} & set(STATE_TYPES)

    @cached_property
    def features(self) -> set[str]:
        return definition_features(self.definition)

    @property
    def runs_branches(self) -> bool:
        """Map and Parallel interleave their branches' events, so only the counts are comparable."""
        return bool(self.state_types & {"Map", "Parallel"})

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]


def load_cases(root: Path = DEFAULT_CASES_DIR, substring: str | None = None) -> list[Case]:
    """Every case under ``root`` whose id contains ``substring`` (all when None), sorted by id."""
    cases = []
    for case_file in sorted(root.glob("*/case.json")):
        if substring and substring not in case_file.parent.name:
            continue
        cases.append(load_case(case_file.parent))
    return cases


def load_case(folder: Path) -> Case:
    data = json.loads((folder / "case.json").read_text())
    functions = {
        name: CaseFunction(
            name=name,
            handler=spec["handler"],
            runtime=spec["runtime"],
            timeout=int(spec["timeout"]),
            environment=dict(spec.get("environment") or {}),
            source=folder / "handlers" / f"{name}.py.txt",
        )
        for name, spec in (data.get("functions") or {}).items()
    }
    transformers = data.get("snapshot_transformers") or {}
    return Case(
        id=data["id"],
        folder=folder,
        definition_text=(folder / "definition.json").read_text(),
        input_text=data["input"],
        state_machine_name=data["state_machine_name"],
        expected=Outcome.from_json(data["expected"]),
        source=dict(data["source"]),
        functions=functions,
        nested_state_machines=dict(data.get("nested_state_machines") or {}),
        s3_setup=list(data.get("s3_setup") or []),
        dynamodb_tables=list(data.get("dynamodb_tables") or []),
        regex_transformers=[(str(a), str(b)) for a, b in transformers.get("regex") or []],
        jsonpath_transformers=list(transformers.get("jsonpath") or []),
        parallel_events_normalised=bool(transformers.get("parallel_events")),
        adjustments=list(data.get("adjustments") or []),
    )


def placeholders(text: str) -> set[tuple[str, str]]:
    """The (kind, name) pairs of ``${FunctionArn_name}`` and ``${StateMachineArn_name}`` in a text."""
    return {(m.group(1), m.group(2)) for m in _PLACEHOLDER.finditer(text)}


def iter_states(node: JsonValue) -> Iterator[tuple[str, JsonObject]]:
    """Every state of a definition, nested ones (Parallel branches, Map processors) included."""
    if not isinstance(node, dict):
        return
    for name, state in _object(node.get("States")).items():
        if not isinstance(state, dict):
            continue
        yield name, state
        for key in ("Iterator", "ItemProcessor"):
            yield from iter_states(state.get(key))
        for branch in _objects(state.get("Branches")):
            yield from iter_states(branch)


def definition_features(definition: JsonObject) -> set[str]:
    """The ASL features a definition exercises, named as the pass-rate table reports them."""
    features: set[str] = set()
    text = json.dumps(definition)
    features.update(f"Intrinsic {name}" for name in _INTRINSIC.findall(text))
    if '"QueryLanguage": "JSONata"' in text or "{%" in text:
        features.add("JSONata")
    if '"Assign"' in text:
        features.add("Variables (Assign)")
    if "$$." in text or '"$$"' in text:
        features.add("Context object")
    for _, state in iter_states(definition):
        features.update(_state_features(state))
    return features


def _state_features(state: JsonObject) -> set[str]:
    features: set[str] = set()
    kind = state.get("Type")
    if kind == "Map":
        processor = _object(state.get("ItemProcessor"))
        mode = _object(processor.get("ProcessorConfig")).get("Mode", "INLINE")
        features.add("Map (distributed)" if mode == "DISTRIBUTED" else "Map (inline)")
        features.update(f"Map {key}" for key in ("ItemReader", "ItemBatcher", "ResultWriter") if key in state)
    if kind == "Wait":
        features.update(
            f"Wait {key}" for key in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if key in state
        )
    retriers = _objects(state.get("Retry"))
    if retriers:
        features.add("Retry")
        for retrier in retriers:
            features.update(f"Retry {key}" for key in ("MaxDelaySeconds", "JitterStrategy") if key in retrier)
    catchers = _objects(state.get("Catch"))
    if catchers:
        features.add("Catch")
        if any("ResultPath" in catcher for catcher in catchers):
            features.add("Catch ResultPath")
    resource = state.get("Resource")
    if kind == "Task" and isinstance(resource, str):
        features.add(_task_feature(resource))
    return features


def _object(value: JsonValue) -> JsonObject:
    """A definition's object, or an empty one where the definition leaves it out."""
    return value if isinstance(value, dict) else {}


def _objects(value: JsonValue) -> list[JsonObject]:
    """A definition's list of objects (Retry, Catch, Branches), or an empty one where it leaves it out."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _task_feature(resource: str) -> str:
    if resource.startswith("arn:aws:states:::lambda:invoke"):
        return "Lambda (lambda:invoke)"
    if resource.startswith("${FunctionArn_") or ":function:" in resource:
        return "Lambda (function ARN)"
    match = re.match(r"arn:aws:states:::(aws-sdk:)?([a-z0-9-]+)", resource)
    if match and match.group(2) == "states":
        return "Task states:startExecution (nested state machine)"
    if match:
        return f"Task {'aws-sdk:' if match.group(1) else ''}{match.group(2)}"
    return "Task (other)"
