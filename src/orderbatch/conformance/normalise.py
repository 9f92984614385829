"""Make a recorded outcome and a local one comparable without hiding real differences.

AWS's side arrives as LocalStack recorded it: JSON text already parsed, and values that change from run
to run replaced by placeholders (``<uuid:1>``, ``<ArnPart_0idx>``, ``<request_id>``, ``datetime``).
The local side arrives raw. Both go through the same canonical forms here; the comparer treats any
placeholder left on the recorded side as "some value", so only what stays the same between two AWS
runs is compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping

from sam_local_cloud.json_types import JsonObject, JsonValue

UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
RECORDED_UUID = re.compile(r"<uuid:\d+>")
REQUEST_ID = re.compile(r"Request ID: [A-Za-z0-9-]+")
ISO_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w:.])"
)
# What LocalStack's key-based transformers write in place of a timestamp.
RECORDED_TIMESTAMP_WORDS = {"date", "datetime", "timestamp", "time"}
# arn:PARTITION:SERVICE:REGION:ACCOUNT: with each part possibly a placeholder on the recorded side.
ARN_PREFIX = re.compile(
    r"arn:(?:aws|<partition>):([A-Za-z0-9-]+):([a-z]{2}(?:-[a-z]+)+-\d|<region>)?:(\d{12}|<[A-Za-z0-9_-]+>)?:"
)
# Names Step Functions or the test chose at random: the state machine's and the execution's.
EXECUTION_PARTS = re.compile(r":(execution|express|stateMachine|mapRun):([^:\s\"]+)(?::([^:\s\"]+))?")
# A Python runtime's stack trace names the task root: /var/task on AWS, a temporary folder here.
STACK_TRACE_FILE = re.compile(r'File "[^"]*/([^/"]+\.py)"')


def canonical(value: JsonValue, field: str = "output") -> JsonValue:
    """The form both sides are compared in: JSON text parsed, what changes between calls replaced.

    Besides the fixed tokens below, this applies the transformers LocalStack's ``sfn_snapshot`` fixture
    adds to every test: recordings from different years had them at different times, so both sides
    get them here.
    """
    parsed = parse_json_documents(value)
    transformed = _in_history(parsed, field, lambda wrapped: _fixture_transformers(wrapped))
    return _walk(transformed, canonical_text)


def canonical_text(text: str) -> str:
    if text in RECORDED_TIMESTAMP_WORDS:
        return "<timestamp>"
    text = ARN_PREFIX.sub(_arn_prefix, text)
    text = EXECUTION_PARTS.sub(_execution_parts, text)
    text = REQUEST_ID.sub("Request ID: <request_id>", text)
    text = RECORDED_UUID.sub("<uuid>", UUID.sub("<uuid>", text))
    text = ISO_TIMESTAMP.sub("<timestamp>", text)
    return STACK_TRACE_FILE.sub(r'File "/var/task/\1"', text)


def _arn_prefix(match: re.Match[str]) -> str:
    region = "<region>" if match.group(2) else ""
    account = "<account>" if match.group(3) else ""
    return f"arn:<partition>:{match.group(1)}:{region}:{account}:"


def _execution_parts(match: re.Match[str]) -> str:
    kind = match.group(1)
    if match.group(3) is None:
        return f":{kind}:<name>"
    return f":{kind}:<name>:<execution>"


def parse_json_documents(value: JsonValue) -> JsonValue:
    """JSON objects and arrays given as text (outputs, causes, payloads) become values, all the way down.

    LocalStack's snapshots store them parsed, the API returns them as text; scalars stay as they are,
    because a JSON string "1" and the number 1 are different outputs.
    """
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return parse_json_documents(json.loads(stripped))
            except ValueError:
                return value
        return value
    if isinstance(value, dict):
        return {key: parse_json_documents(item) for key, item in value.items()}
    if isinstance(value, list):
        return [parse_json_documents(item) for item in value]
    return value


# What LocalStack's ``sfn_snapshot`` fixture adds to every Step Functions test (stepfunctions_api()):
# headers and metadata that change between calls, replaced by their names.
DEFAULT_JSONPATH_TRANSFORMERS: tuple[JsonObject, ...] = tuple(
    {"jsonpath": path, "replacement": replacement, "replace_reference": False}
    for path, replacement in (
        ("$..SdkHttpMetadata..Date", "date"),
        ("$..SdkResponseMetadata..RequestId", "RequestId"),
        ("$..X-Amzn-Trace-Id", "X-Amzn-Trace-Id"),
        ("$..x-amz-crc32", "x-amz-crc32"),
        ("$..x-amzn-RequestId", "x-amzn-RequestId"),
        ("$..x-amzn-requestid", "x-amzn-requestid"),
    )
)
# The same fixture's cause transformer: a cause quoting the state's input keeps only that input.
QUOTED_INPUT_CAUSE = re.compile(r".*'(\{.*\})'")


def apply_snapshot_transformers(
    value: JsonValue,
    field: str,
    regex: Iterable[tuple[str, str]] = (),
    jsonpath: Iterable[Mapping[str, object]] = (),
) -> JsonValue:
    """What the test did to AWS's answer before storing it, done to the local ``field`` (output, cause).

    Regex transformers replace test-chosen names (``lambda_func_…`` becomes ``<lambda_function_name>``);
    JSONPath transformers (``$..Key``, ``$..Parent.Key``, ``$..Parent..Key``: all the suite uses) replace
    the values they select, matched as if the value sat where it sits in the history LocalStack
    transformed (``events[].executionSucceededEventDetails.output``).
    """
    patterns = []
    for pattern, replacement in regex:
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = re.compile(re.escape(pattern))
        patterns.append((compiled, replacement.replace("\\", "\\\\")))

    def substitute(text: str) -> str:
        for compiled, replacement in patterns:
            text = compiled.sub(replacement, text)
        return text

    substituted = _walk(parse_json_documents(value), substitute, keys=True)
    return _in_history(substituted, field, lambda wrapped: _jsonpath_transformers(wrapped, jsonpath))


def _in_history(value: JsonValue, field: str, transform: Callable[[JsonValue], JsonValue]) -> JsonValue:
    """``transform`` applied to ``value`` placed where the history keeps it."""
    details = "executionSucceededEventDetails" if field == "output" else "executionFailedEventDetails"
    wrapped: JsonValue = {"events": [{details: {field: value}}]}
    transformed = transform(wrapped)
    for step in ("events", 0, details, field):  # the transformers keep the document's shape
        transformed = _item(transformed, step)
    return transformed


def _item(document: JsonValue, step: str | int) -> JsonValue:
    if isinstance(document, dict) and isinstance(step, str):
        return document[step]
    if isinstance(document, list) and isinstance(step, int):
        return document[step]
    raise TypeError(f"{type(document).__name__} has no item {step!r}")


def _fixture_transformers(wrapped: JsonValue) -> JsonValue:
    return _quoted_input_cause(_jsonpath_transformers(wrapped, DEFAULT_JSONPATH_TRANSFORMERS))


def _jsonpath_transformers(wrapped: JsonValue, transformers: Iterable[Mapping[str, object]]) -> JsonValue:
    for transformer in transformers:
        steps = _jsonpath_steps(str(transformer.get("jsonpath", "")))
        if not steps:
            continue
        replacement = str(transformer.get("replacement", ""))
        if transformer.get("replace_reference", True):
            replacement = f"<{replacement}>"
        wrapped = _replace_selected(wrapped, steps, replacement)
    return wrapped


def _jsonpath_steps(path: str) -> list[tuple[bool, str]] | None:
    """``$..A.B..C`` as [(any depth, "A"), (child, "B"), (any depth, "C")]; None for other paths."""
    if not path.startswith("$.."):
        return None
    steps = []
    for index, part in enumerate(re.split(r"(\.\.|\.)", path[1:])[1:]):
        if index % 2 == 0:
            separator = part
        elif not re.fullmatch(r"[A-Za-z0-9_-]+", part):
            return None
        else:
            steps.append((separator == "..", part))
    return steps


def _replace_selected(value: JsonValue, steps: list[tuple[bool, str]], replacement: str) -> JsonValue:
    if not steps:
        return replacement
    anywhere, key = steps[0]
    if isinstance(value, dict):
        result = {}
        for k, v in value.items():
            if k == key:
                v = _replace_selected(v, steps[1:], replacement)
            elif anywhere:
                v = _replace_selected(v, steps, replacement)
            result[k] = v
        return result
    if isinstance(value, list) and anywhere:
        return [_replace_selected(item, steps, replacement) for item in value]
    return value


def _quoted_input_cause(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key == "cause" and isinstance(item, str) and (match := QUOTED_INPUT_CAUSE.match(item)):
                try:
                    json.loads(match.group(1))
                except ValueError:
                    pass
                else:
                    item = item.replace(match.group(1), "<json-input>")
            result[key] = _quoted_input_cause(item)
        return result
    if isinstance(value, list):
        return [_quoted_input_cause(item) for item in value]
    return value


def _walk(value: JsonValue, on_text: Callable[[str], str], keys: bool = False) -> JsonValue:
    if isinstance(value, str):
        return on_text(value)
    if isinstance(value, dict):
        return {(on_text(k) if keys else k): _walk(v, on_text, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(item, on_text, keys) for item in value]
    return value


def parallel_events_as_snapshotted(event_types: list[str]) -> list[str]:
    """The history's event types as LocalStack's SfnNoneRecursiveParallelTransformer leaves them.

    Tests that add it sort each Parallel state's branch events before storing the snapshot. For a
    Parallel nested in another one it also loses events: the outer state's end rewrites the slice from
    the inner state's start with the inner state's events, dropping the inner ParallelStateExited. The
    recording carries that loss, so the local history goes through the same steps, loss included.
    """
    ends = {"ParallelStateSucceeded", "ParallelStateAborted", "ParallelStateExited", "ParallelStateFailed"}
    events = list(event_types)
    start = 0
    branch: list[str] = []
    in_branch = False
    index = 0
    while index < len(events):
        event_type = events[index]
        if event_type in ends:
            events[start:index] = sorted(branch)
            in_branch = False
        elif event_type == "ParallelStateStarted":
            in_branch = True
            branch = []
            start = index + 1
        elif in_branch:
            branch.append(event_type)
        index += 1
    return events
