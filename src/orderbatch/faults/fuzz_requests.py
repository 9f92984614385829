"""Requests for the protocol fuzzer, drawn from botocore's own service models.

A case is one operation's parameters, valid for its input shape (required members, lengths, ranges,
enums), and one way of spoiling the request built from them: a member dropped or of the wrong type, a
member the model does not know, a body cut short, malformed or nested too deep, bytes that are not UTF-8,
the wrong Content-Type, a huge header. Names of the deployed resources are mixed into the strings, so
requests reach past "not found" into each service's real code paths.
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.model import OperationModel, Shape
from hypothesis import strategies as st

from sam_local_cloud.json_types import JsonValue

if TYPE_CHECKING:
    from botocore.awsrequest import AWSRequest

# How the request built from the parameters is spoiled (VALID: not at all).
VALID = "valid"
MISSING_REQUIRED = "missing-required"
WRONG_TYPE = "wrong-type"
UNKNOWN_MEMBER = "unknown-member"
MALFORMED_BODY = "malformed-body"
TRUNCATED_BODY = "truncated-body"
NON_UTF8_BODY = "non-utf8-body"
DEEP_BODY = "deep-body"
WRONG_CONTENT_TYPE = "wrong-content-type"
HUGE_HEADER = "huge-header"
UNKNOWN_OPERATION = "unknown-operation"
MUTATIONS = (
    VALID,
    MISSING_REQUIRED,
    WRONG_TYPE,
    UNKNOWN_MEMBER,
    MALFORMED_BODY,
    TRUNCATED_BODY,
    NON_UTF8_BODY,
    DEEP_BODY,
    WRONG_CONTENT_TYPE,
    HUGE_HEADER,
    UNKNOWN_OPERATION,
)
# Mutations that spoil the body's syntax: a JSON service must answer SerializationException.
# What ``expect`` names for an answer without an error.
SUCCESS = "success"
BODY_SYNTAX_MUTATIONS = frozenset({MALFORMED_BODY, TRUNCATED_BODY, NON_UTF8_BODY, DEEP_BODY})

# Past this depth a structure gets its required members only and lists and maps stay empty: the models are
# recursive (DynamoDB's AttributeValue, Step Functions' nothing, IAM's policies as strings).
_MAX_DEPTH = 4
_MAX_STRING = 48
_MAX_ITEMS = 3
# Longer than any request line or header a server takes (http.server's limit is 65,536 bytes).
HUGE_HEADER_BYTES = 70_000
DEEP_NESTING = 100_000


@dataclass(frozen=True)
class Target:
    """One operation the fuzzer sends requests to."""

    service: str
    operation: str


@dataclass
class FuzzCase:
    target: Target
    params: dict[str, object]
    mutation: str
    # The drawn choices a mutation needs (which member, where to cut), fixed at draw time so a failing case
    # replays and shrinks exactly.
    choice: int = 0
    label: str = ""
    # For a case whose answer AWS documents (a limit, FIELD-NOTES): the codes it may get, SUCCESS for none.
    expect: tuple[str, ...] = ()

    def describe(self, limit: int | None = 400) -> str:
        params = json.dumps(self.params, default=_shown, sort_keys=True)
        if limit is not None and len(params) > limit:
            params = params[:limit] + f"... ({len(params)} chars)"
        where = f"{self.target.service}.{self.target.operation}"
        return f"{where} [{self.mutation}{' ' + self.label if self.label else ''}] {params}"


def _shown(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return repr(value)


class ShapeStrategies:
    """Hypothesis strategies for a service's shapes, with names the local cloud knows mixed in."""

    def __init__(self, known_names: Mapping[str, Sequence[str]]) -> None:
        # Member name (lower case) -> values that name deployed resources: TableName -> the tables...
        self._known = {name.lower(): list(values) for name, values in known_names.items() if values}
        self._cache: dict[tuple[str, str, int], st.SearchStrategy[object]] = {}

    def input_of(self, operation: OperationModel) -> st.SearchStrategy[dict[str, object]]:
        shape = operation.input_shape
        if shape is None:
            return st.just({})
        return self._structure(shape, 0)

    def for_shape(self, shape: Shape, member_name: str, depth: int) -> st.SearchStrategy[object]:
        key = (shape.name, member_name.lower(), depth)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._build(shape, member_name, depth)
        return cached

    def _build(self, shape: Shape, member_name: str, depth: int) -> st.SearchStrategy[object]:
        kind = shape.type_name
        if kind == "structure":
            if shape.serialization.get("eventstream") or shape.metadata.get("document"):
                return _json_values()
            return self._structure(shape, depth)
        if kind in ("list", "map"):
            return self._collection(shape, member_name, depth)
        if kind == "string":
            return self._string(shape, member_name)
        scalar = _SCALARS.get(kind)
        return scalar(shape) if scalar is not None else _json_values()  # a document: any JSON value

    def _collection(self, shape: Shape, member_name: str, depth: int) -> st.SearchStrategy[object]:
        if shape.type_name == "map":
            if depth >= _MAX_DEPTH:
                return st.just({})
            keys = self.for_shape(shape.key, "key", depth + 1)  # type: ignore[attr-defined]
            values = self.for_shape(shape.value, member_name, depth + 1)  # type: ignore[attr-defined]
            return st.dictionaries(keys, values, max_size=_MAX_ITEMS)
        if depth >= _MAX_DEPTH:
            return st.just([])
        member = self.for_shape(shape.member, member_name, depth + 1)  # type: ignore[attr-defined]
        least = min(int(shape.metadata.get("min", 0)), _MAX_ITEMS)
        return st.lists(member, min_size=least, max_size=_MAX_ITEMS)

    def _structure(self, shape: Shape, depth: int) -> st.SearchStrategy[dict[str, object]]:
        members: dict[str, Shape] = shape.members  # type: ignore[attr-defined]
        required = set(shape.required_members)
        if shape.metadata.get("union"):
            if not members:
                return st.just({})
            return st.sampled_from(sorted(members)).flatmap(
                lambda name: self.for_shape(members[name], name, depth + 1).map(lambda value: {name: value})
            )
        # The body's length is botocore's to state: a ContentLength the body does not have leaves the
        # server waiting for bytes that never come (a client's timeout, not an answer to judge).
        members = {name: member for name, member in members.items() if name != "ContentLength"}
        fixed = {
            name: self.for_shape(members[name], name, depth + 1)
            for name in sorted(required)
            if name in members
        }
        optional = (
            {}
            if depth >= _MAX_DEPTH
            else {
                name: self.for_shape(member, name, depth + 1)
                for name, member in sorted(members.items())
                if name not in required
            }
        )
        return st.fixed_dictionaries(fixed, optional=optional)

    def _string(self, shape: Shape, member_name: str) -> st.SearchStrategy[str]:
        enum = shape.enum  # type: ignore[attr-defined]
        if enum:
            return st.sampled_from(list(enum))
        least = int(shape.metadata.get("min", 0))
        most = int(shape.metadata.get("max", 1 << 20))
        ceiling = max(least, min(most, _MAX_STRING))
        drawn = st.text(
            st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=least, max_size=ceiling
        )
        choices: list[st.SearchStrategy[str]] = [
            drawn,
            st.text("abcXYZ-_.0123", min_size=least, max_size=ceiling),
        ]
        if least <= most <= 4096:
            choices.append(st.just("x" * most))  # the longest value the model allows
        known = self._known.get(member_name.lower())
        if known:
            return st.one_of(st.sampled_from(known), *choices)
        return st.one_of(*choices)


def _timestamps(shape: Shape) -> st.SearchStrategy[datetime.datetime]:
    return st.datetimes(min_value=datetime.datetime(1990, 1, 1), max_value=datetime.datetime(2100, 1, 1)).map(
        lambda moment: moment.replace(microsecond=0, tzinfo=datetime.UTC)
    )


def _blobs(shape: Shape) -> st.SearchStrategy[bytes]:
    least = int(shape.metadata.get("min", 0))
    return st.binary(min_size=least, max_size=max(least, 64))


def _integers(shape: Shape) -> st.SearchStrategy[int]:
    least = shape.metadata.get("min")
    most = shape.metadata.get("max")
    low = int(least) if least is not None else -(2**31)
    high = int(most) if most is not None else 2**31 - 1
    if low > high:
        low, high = high, low
    bounds = [value for value in (low, high, 0, 1) if low <= value <= high]
    return st.one_of(st.sampled_from(bounds), st.integers(min_value=low, max_value=high))


_SCALARS: dict[str, Callable[[Shape], st.SearchStrategy[object]]] = {
    "integer": _integers,
    "long": _integers,
    "float": lambda shape: st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    "double": lambda shape: st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    "boolean": lambda shape: st.booleans(),
    "timestamp": _timestamps,
    "blob": _blobs,
}


def _json_values() -> st.SearchStrategy[JsonValue]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    )


# ---------------------------------------------------------------------------------------------- mutations
def spoil_params(case: FuzzCase, operation: OperationModel) -> dict[str, object] | None:
    """The parameters a parameter-level mutation sends, or None when the operation offers nothing to spoil
    that way (the case is then sent valid)."""
    shape = operation.input_shape
    members: dict[str, Shape] = shape.members if shape is not None else {}
    params = dict(case.params)
    if case.mutation == MISSING_REQUIRED:
        required = sorted(shape.required_members) if shape is not None else []
        # Members in the URI cannot be left out: the request's path would not be built.
        body_members = [name for name in required if members[name].serialization.get("location") != "uri"]
        if not body_members:
            return None
        dropped = body_members[case.choice % len(body_members)]
        params.pop(dropped, None)
        case.label = dropped
        return params
    if case.mutation == WRONG_TYPE:
        candidates = [
            name
            for name in sorted(members)
            if members[name].serialization.get("location") not in ("uri", "header", "headers", "querystring")
            and members[name].type_name
            in ("string", "integer", "long", "boolean", "list", "map", "structure")
        ]
        if not candidates:
            return None
        name = candidates[case.choice % len(candidates)]
        params[name] = _wrong_value(members[name].type_name)
        case.label = name
        return params
    return params


def _wrong_value(type_name: str) -> JsonValue:
    wrong: dict[str, JsonValue] = {
        "string": 12345,
        "integer": "twelve",
        "long": "twelve",
        "boolean": "maybe",
        "list": {"not": "a list"},
        "map": ["not", "a", "map"],
        "structure": ["not", "a", "structure"],
    }
    return wrong[type_name]


def spoil_request(case: FuzzCase, protocol: str, request: AWSRequest) -> None:
    """Apply a body or header mutation to the botocore request before it is signed (the signature stays
    right, so the service sees the spoiled request itself, not a bad signature)."""
    data = request.data
    body = data if isinstance(data, bytes) else data.encode() if isinstance(data, str) else b""
    spoil = _SPOILERS.get(case.mutation)
    if spoil is not None:
        body = spoil(body, protocol, request, random.Random(case.choice))
    request.data = body
    del request.headers["Content-Length"]
    request.headers["Content-Length"] = str(len(body))


def _with_unknown_member(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    if protocol in ("json", "rest-json") and body.startswith(b"{"):
        document = json.loads(body)
        document["NotAMemberOfThisShape"] = "fuzz"
        return json.dumps(document).encode()
    if protocol in ("query", "ec2"):
        return body + b"&NotAMemberOfThisShape=fuzz"
    request.headers["X-Amz-Not-A-Member"] = "fuzz"
    return body


_MALFORMED = {
    "json": b'{"a": ',
    "rest-json": b'{"a": [1, 2,',
    "query": b"Action=%ZZ&&=&Version",
    "rest-xml": b"<Root><Unclosed>",
    "smithy-rpc-v2-cbor": b"\xbf\xff\xff\x00",
}


def _malformed(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    return _MALFORMED.get(protocol, b"\x00garbage")


def _truncated(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    if len(body) > 1:
        return body[: rng.randrange(1, len(body))]
    return b"{" if protocol in ("json", "rest-json") else b"<"


def _not_utf8(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    if protocol in ("json", "rest-json"):
        return b'{"Name": "\xff\xfe\xfd"}'
    if protocol in ("query", "ec2"):
        return body + b"&Name=%FF%FE"
    return b"\xff\xfe\xfd" + body


def _nested_too_deep(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    if protocol == "smithy-rpc-v2-cbor":
        return b"\x81" * DEEP_NESTING + b"\x00"
    if protocol == "rest-xml":
        return b"<a>" * DEEP_NESTING + b"</a>" * DEEP_NESTING
    return b"[" * DEEP_NESTING + b"]" * DEEP_NESTING


def _wrong_content_type(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    del request.headers["Content-Type"]
    request.headers["Content-Type"] = rng.choice(["text/plain", "application/xml", "image/png", ""])
    return body


def _huge_header(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    request.headers["X-Fuzz-Padding"] = "a" * rng.choice([HUGE_HEADER_BYTES, 8_000])
    return body


def _unknown_operation(body: bytes, protocol: str, request: AWSRequest, rng: random.Random) -> bytes:
    if "X-Amz-Target" in request.headers:
        prefix = request.headers["X-Amz-Target"].rpartition(".")[0]
        del request.headers["X-Amz-Target"]
        request.headers["X-Amz-Target"] = f"{prefix}.NoSuchOperation"
    elif protocol in ("query", "ec2"):
        return b"Action=NoSuchOperation&Version=2010-05-08"
    elif protocol == "smithy-rpc-v2-cbor":
        assert request.url is not None  # botocore has built the request's URL before it signs
        request.url = request.url.rsplit("/", 1)[0] + "/NoSuchOperation"
    return body


_SPOILERS = {
    UNKNOWN_MEMBER: _with_unknown_member,
    MALFORMED_BODY: _malformed,
    TRUNCATED_BODY: _truncated,
    NON_UTF8_BODY: _not_utf8,
    DEEP_BODY: _nested_too_deep,
    WRONG_CONTENT_TYPE: _wrong_content_type,
    HUGE_HEADER: _huge_header,
    UNKNOWN_OPERATION: _unknown_operation,
}
