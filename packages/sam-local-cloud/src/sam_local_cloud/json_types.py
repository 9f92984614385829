"""The shapes of JSON documents, for annotations: what ``json.loads`` returns and ``json.dumps`` takes.

AWS's APIs, a state machine's input and output, a function's event and a template's parsed body are all
JSON. Annotating them with these instead of ``Any`` keeps mypy checking what code does with them: a value
read out of a ``JsonValue`` must be narrowed (``isinstance``) before it is used as a string or a list.
Use ``JsonObject`` for a document known to be an object, and ``Mapping[str, object]`` for a parameter
that only reads one.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["JsonObject", "JsonScalar", "JsonValue"]

JsonScalar: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
