"""State names must be unique within the whole state machine, Map processors and Parallel branches included.

The Amazon States Language says so ("State names MUST be unique within the scope of the whole state
machine"), and CreateStateMachine refuses a definition that repeats one with InvalidDefinition. The
workflow renderer and the local cloud both check it here, so a repeated name shows before a deploy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# Where a state may hold its own States: a Map's processor (Iterator is its older name), Parallel branches.
_PROCESSOR_KEYS = ("ItemProcessor", "Iterator")


def state_paths(definition: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Every state's name and path (``/States/<map>/ItemProcessor/States/<name>``), depth first."""
    for name, path, _ in _states_under(definition, ""):
        yield name, path


def states_that_are_not_objects(definition: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each entry of a ``States`` map whose value is not a state object, as (name, the map's path)."""
    return [
        (name, path.rpartition("/")[0])
        for name, path, state in _states_under(definition, "")
        if not isinstance(state, Mapping)
    ]


def _states_under(container: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    states = container.get("States") if isinstance(container, Mapping) else None
    if not isinstance(states, Mapping):
        return
    for name, state in states.items():
        state_path = f"{path}/States/{name}"
        yield str(name), state_path, state
        if not isinstance(state, Mapping):
            continue
        for key in _PROCESSOR_KEYS:
            yield from _states_under(state.get(key), f"{state_path}/{key}")
        branches = state.get("Branches")
        if isinstance(branches, list):
            for index, branch in enumerate(branches):
                yield from _states_under(branch, f"{state_path}/Branches/{index}")


def duplicate_state_names(definition: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each state whose name an earlier state already has, as (name, path), in definition order."""
    seen: set[str] = set()
    duplicates = []
    for name, path in state_paths(definition):
        if name in seen:
            duplicates.append((name, path))
        seen.add(name)
    return duplicates


def invalid_definition_message(duplicates: list[tuple[str, str]]) -> str:
    """CreateStateMachine's InvalidDefinition message for repeated names, in AWS's words."""
    problems = ", ".join(
        f"DUPLICATE_STATE_NAME: Duplicate State name: {name} at {path}" for name, path in duplicates
    )
    return f"Invalid State Machine Definition: '{problems}'"
