"""The shapes of JSON documents, for annotations: what ``json.loads`` returns and ``json.dumps`` takes.

The Lambda package cannot depend on the local cloud's ``sam_local_cloud.json_types``: the same aliases.
A value read out of a ``JsonValue`` must be narrowed (``isinstance``) before it is used as a string or a list.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["JsonObject", "JsonScalar", "JsonValue"]

JsonScalar: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
