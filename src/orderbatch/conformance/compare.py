"""Compare a recorded outcome with a local one: status, output, error, cause, history and attempts.

Both sides are expected in canonical form (normalise.py). On the recorded side a placeholder such as
``<ArnPart_0idx>`` or ``<uuid>`` stands for "some value that changes between runs" and matches any
value here; everything else must be equal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from orderbatch.conformance.outcome import Outcome

PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_:. -]*>")
SHOWN_CHARACTERS = 70
# How the interpreter words a States.Runtime cause; the state's name is what the one-line diff keeps.
STATE_ERROR_PREFIX = re.compile(
    r"An error occurred while executing the state '([^']*)' \(entered at the event id #\d+\)\. "
)


@dataclass(frozen=True)
class Difference:
    aspect: str  # status, output, error, cause, events or attempts
    path: str
    expected: object
    actual: object

    def line(self) -> str:
        expected, actual = self.expected, self.actual
        if isinstance(expected, str) and isinstance(actual, str) and not PLACEHOLDER.fullmatch(expected):
            expected, actual = _where_they_part(expected, actual)
        limit = SHOWN_CHARACTERS * 2 if self.aspect == "status" else SHOWN_CHARACTERS
        return f"{self.aspect}{self.path}: expected {_shown(expected)}, got {_shown(actual, limit)}"


def compare_outcomes(
    expected: Outcome, actual: Outcome, *, unordered_events: bool = False
) -> list[Difference]:
    """Every aspect in which ``actual`` differs from ``expected`` (the recording); empty when they agree."""
    if expected.status != actual.status:
        differences = [Difference("status", "", expected.status, _how_it_ended(actual))]
        return differences + _history_differences(expected, actual, unordered_events)
    differences = []
    if expected.status == "SUCCEEDED":
        differences += _value_differences("output", expected.output, actual.output)
    else:
        differences += _value_differences("error", expected.error, actual.error)
        differences += _value_differences(
            "cause", _absent_as_empty(expected.cause), _absent_as_empty(actual.cause)
        )
    return differences + _history_differences(expected, actual, unordered_events)


def _how_it_ended(outcome: Outcome) -> str:
    """The status with the error and the gist of the cause (the state's name, not the boilerplate)."""
    if outcome.status == "SUCCEEDED":
        return "SUCCEEDED"
    cause = outcome.cause if isinstance(outcome.cause, str) else json.dumps(outcome.cause)
    cause = STATE_ERROR_PREFIX.sub(r"[\1] ", cause or "")
    return f"{outcome.status} {outcome.error}: {cause}"


def _absent_as_empty(cause: object) -> object:
    """A failure without a cause: AWS leaves the field out, other engines send ""; boto3 code reads both
    with ``.get("cause")`` alike, so they are taken as one."""
    return "" if cause is None else cause


def _value_differences(aspect: str, expected: object, actual: object) -> list[Difference]:
    mismatch = first_mismatch(expected, actual)
    if mismatch is None:
        return []
    path, expected_part, actual_part = mismatch
    return [Difference(aspect, path, expected_part, actual_part)]


def _history_differences(expected: Outcome, actual: Outcome, unordered: bool) -> list[Difference]:
    if expected.event_types is None:
        return []  # the recording kept only the output or the description
    actual_types = actual.event_types or []
    differences = []
    if unordered:
        missing = Counter(expected.event_types) - Counter(actual_types)
        extra = Counter(actual_types) - Counter(expected.event_types)
        if missing or extra:
            differences.append(
                Difference("events", " (unordered)", f"({_counted(missing)})", f"({_counted(extra)})")
            )
    elif expected.event_types != actual_types:
        index = next(
            (i for i, (e, a) in enumerate(zip(expected.event_types, actual_types, strict=False)) if e != a),
            min(len(expected.event_types), len(actual_types)),
        )
        differences.append(
            Difference(
                "events",
                f"[{index}]",
                _event_at(expected.event_types, index),
                _event_at(actual_types, index),
            )
        )
    if expected.attempts != actual.attempts and not differences:
        differences.append(Difference("attempts", "", expected.attempts, actual.attempts))
    return differences


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{n}x {event}" for event, n in sorted(counts.items())) or "nothing"


def _event_at(types: list[str], index: int) -> str:
    if index >= len(types):
        return f"end of history ({len(types)} events)"
    return f"{types[index]} (of {len(types)})"


def first_mismatch(expected: object, actual: object, path: str = "") -> tuple[str, object, object] | None:
    """The first place where ``actual`` does not match ``expected``: (JSONPath-like path, both values)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return path, expected, actual
        for key in expected.keys() | actual.keys():
            if key not in actual:
                return f"{path}.{key}", expected[key], "(absent)"
            if key not in expected:
                return f"{path}.{key}", "(absent)", actual[key]
        for key, value in expected.items():
            found = first_mismatch(value, actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return path, expected, actual
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = first_mismatch(e, a, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if scalars_match(expected, actual) else (path, expected, actual)


def scalars_match(expected: object, actual: object) -> bool:
    if isinstance(expected, str) and PLACEHOLDER.search(expected):
        if PLACEHOLDER.fullmatch(expected):
            return not isinstance(actual, dict | list)  # a placeholder stands for one value, not a document
        return isinstance(actual, str) and _placeholder_pattern(expected).fullmatch(actual) is not None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(type(expected) is type(actual) and expected == actual) or _same_number(expected, actual)


def _same_number(expected: object, actual: object) -> bool:
    numbers = (int, float)
    return isinstance(expected, numbers) and isinstance(actual, numbers) and expected == actual


@lru_cache(maxsize=4096)
def _placeholder_pattern(expected: str) -> re.Pattern[str]:
    parts = PLACEHOLDER.split(expected)
    return re.compile(".+?".join(re.escape(part) for part in parts), re.DOTALL)


def _where_they_part(expected: str, actual: str) -> tuple[str, str]:
    """Two long strings shown from a little before their first difference, so the line says what it is."""
    common = 0
    for e, a in zip(expected, actual, strict=False):
        if e != a:
            break
        common += 1
    if common <= 20:
        return expected, actual
    start = common - 15
    return "..." + expected[start:], "..." + actual[start:]


def _shown(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    text = value if isinstance(value, str) and value.startswith("(") else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
