"""API Gateway's variables: ``$input`` (the body, its JSONPaths and the request's parameters) and
``$util``."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from sam_local_cloud.json_types import JsonValue
from sam_local_cloud.vtl.values import UNDEFINED, TemplateSyntaxError, as_text


def select(document: JsonValue, path: str) -> object:
    """A JSONPath's value in ``document`` (``$``, ``$.a.b``, ``$['a']``, ``$.a[0]``); UNDEFINED if absent."""
    path = path.strip()
    if not path.startswith("$"):
        raise TemplateSyntaxError(f"not a JSONPath: {path!r}")
    value = document
    for name, quoted, index in re.findall(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]", path[1:]):
        key = name or quoted
        if key:
            if not isinstance(value, dict) or key not in value:
                return UNDEFINED
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return UNDEFINED
            value = value[int(index)]
    return value


@dataclass
class InputVariable:
    """``$input``: the request (or integration response) body and the request's parameters."""

    body: str
    path_parameters: Mapping[str, str] = field(default_factory=dict)
    query_parameters: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    def _document(self) -> JsonValue:
        try:
            return json.loads(self.body) if self.body.strip() else {}
        except json.JSONDecodeError:
            return self.body

    def json(self, path: str) -> str:
        value = select(self._document(), path)
        return "" if value is UNDEFINED else json.dumps(value, separators=(",", ":"))

    def path(self, path: str) -> object:
        value = select(self._document(), path)
        return None if value is UNDEFINED else value

    def params(self, name: str | None = None) -> dict[str, dict[str, str]] | str:
        every = {
            "path": dict(self.path_parameters),
            "querystring": dict(self.query_parameters),
            "header": dict(self.headers),
        }
        if name is None:
            return every
        for where in ("path", "querystring", "header"):
            if name in every[where]:
                return every[where][name]
        return ""


class UtilVariable:
    """``$util``."""

    @staticmethod
    def escapeJavaScript(text: object) -> str:  # noqa: N802 - the name templates call
        escaped = []
        for character in as_text(text):
            replacement = _JAVASCRIPT_ESCAPES.get(character)
            if replacement is not None:
                escaped.append(replacement)
            elif ord(character) < 0x20:
                escaped.append(f"\\u{ord(character):04X}")
            else:
                escaped.append(character)
        return "".join(escaped)

    @staticmethod
    def parseJson(text: object) -> JsonValue:  # noqa: N802
        return json.loads(as_text(text))

    @staticmethod
    def base64Encode(text: object) -> str:  # noqa: N802
        return base64.b64encode(as_text(text).encode()).decode()

    @staticmethod
    def base64Decode(text: object) -> str:  # noqa: N802
        return base64.b64decode(as_text(text)).decode()

    @staticmethod
    def urlEncode(text: object) -> str:  # noqa: N802
        return urllib.parse.quote_plus(as_text(text))

    @staticmethod
    def urlDecode(text: object) -> str:  # noqa: N802
        return urllib.parse.unquote_plus(as_text(text))


# API Gateway's escapeJavaScript escapes single quotes too (a known trap: \' is not valid JSON).
_JAVASCRIPT_ESCAPES = {
    '"': '\\"',
    "'": "\\'",
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
