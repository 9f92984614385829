"""What the language concerns remember about moto's objects lives in the engine's records, not on them.

A Map state's support (what ``definition_support`` took out of its definition) and a state's pending
Assign (``jsonata``: set as the state exits) are kept in ``EngineRecords`` keyed by moto's objects; the
behaviour they carry is the same, and a record goes when moto lets go of its object.
"""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest

from sam_local_cloud.moto_seam.stepfunctions import AmazonStateLanguageParser, StateMap, VariableStore
from sam_local_cloud.stepfunctions import apply_interpreter_patches, definition_support, jsonata


@pytest.fixture(scope="module", autouse=True)
def hooks_installed() -> None:
    apply_interpreter_patches()


def _distributed_map(max_items_per_batch: int) -> str:
    return json.dumps(
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemBatcher": {"MaxItemsPerBatch": max_items_per_batch},
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                        "StartAt": "Echo",
                        "States": {"Echo": {"Type": "Pass", "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )


def _state_maps(root: Any) -> list[Any]:
    components = definition_support._components(root)
    return [component for component in components if isinstance(component, StateMap)]


def test_a_maps_support_is_found_for_its_components_and_goes_with_them() -> None:
    program, _tree = AmazonStateLanguageParser.parse(_distributed_map(7))
    (state_map,) = _state_maps(program)

    support = definition_support.support_of(state_map)
    assert support is not None
    assert support.express_children is True
    assert support.item_batcher is not None
    assert support.item_batcher.max_items_per_batch == 7
    assert definition_support.support_of(state_map.iteration_component) is support
    # Another definition's Map gets its own support, not the first one's.
    other_program, _other_tree = AmazonStateLanguageParser.parse(_distributed_map(3))
    (other_map,) = _state_maps(other_program)
    other_support = definition_support.support_of(other_map)
    assert other_support is not None
    assert other_support.item_batcher is not None
    assert other_support.item_batcher.max_items_per_batch == 3
    assert not any(value is support for value in vars(state_map).values())

    # Other tests' local clouds in this process make and drop records too: follow only this test's.
    records = definition_support._bound_support
    ours = [
        weakref.ref(component)
        for root in (program, other_program)
        for component in definition_support._components(root)
        if records.get(component) is not None
    ]
    assert len(ours) >= 2
    del program, _tree, state_map, other_program, _other_tree, other_map
    gc.collect()
    assert [reference for reference in ours if reference() is not None] == []


def test_a_pending_assign_is_set_as_the_state_exits_and_then_forgotten() -> None:
    store = VariableStore()
    store.set(variable_identifier="answer", variable_value=42)
    store.reset_tracing()
    jsonata._pending_assignments(store).update({"answer": "<omitted>", "question": "why"})

    # Until the state exits, the variables are as the state found them (its Output reads these).
    assert store.get("answer") == 42
    assigned = store.get_assigned_variables()

    assert assigned == {"answer": '"<omitted>"', "question": '"why"'}
    assert store.get("answer") == "<omitted>"
    assert jsonata._pending.get(store) is None
    assert not any(name.startswith(("_assigned", "orderbatch")) for name in vars(store))
    # Nothing pending: the next state's exit sets nothing.
    store.reset_tracing()
    assert store.get_assigned_variables() == {}
    assert store.get("question") == "why"
