"""JSONPath as Step Functions evaluates it: Jayway's dialect, with AWS's result shapes.

Step Functions reads ``InputPath``, ``OutputPath``, the ``.$`` fields of ``Parameters``/``ResultSelector``/
``ItemSelector``, Choice ``Variable``s and intrinsic-function arguments with Jayway JsonPath. moto used
``jsonpath_ng``, whose dialect and result shapes differ; this module takes its place (``extract_json``):

- a *definite* path (only single names and single indexes, ``$.a[0].b``, ``$['a'][-1]``) yields one value,
  and fails with moto's ``NoSuchJsonPathError`` (States.Runtime "... could not be found in the input ...")
  when nothing is there; moto answered a list for ``$.items[0].b`` and ``$.items[-1]``;
- any other path (wildcards, slices such as ``[-1:]``, unions, filters, deep scans ``..``) yields a JSON
  array of every match, ``[]`` when nothing matches: a filter that matched nothing failed the state in moto;
- filters ``[?(...)]`` take ``&&``, ``||``, ``!`` and parentheses; ``==``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=`` on numbers and on strings; ``=~ /regex/i``; ``in``, ``nin``, ``subsetof``, ``anyof``, ``noneof``,
  ``size``, ``empty``, ``contains``; ``@.x`` alone tests that x is there and not null;
- path functions (``length()``, ``sum()``, ...) are not evaluated: AWS answers such a path with "could
  not be found" (recorded for ``$.Jobs.sum()``), and so does this module; that cause quotes the input as
  compact JSON, as AWS does (moto put spaces after ``:`` and ``,``);
- an InputPath, OutputPath or Seconds path that names nothing fails with Jayway's words for where it
  stopped (``Invalid path '$.a.b' : Missing property in path $['a']``).

``ResultPath`` keeps moto's jsonpath_ng, each path parsed once (``_parse_result_paths_once``). Paths are
read by ``jsonpath_syntax`` and applied by ``jsonpath_evaluation``; this module hooks them into moto.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from sam_local_cloud.json_types import JsonValue
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.stepfunctions.jsonpath_evaluation import MISSING, read
from sam_local_cloud.stepfunctions.jsonpath_syntax import (
    Indexes,
    JsonPathSyntaxError,
    Names,
    Slice,
    compile_path,
)


def extract_json(path: str, data: JsonValue) -> JsonValue:
    """The value of ``path`` in ``data`` as Step Functions gives it; ``NoSuchJsonPathError`` if none."""
    from sam_local_cloud.moto_seam.stepfunctions import NoSuchJsonPathError

    compiled = compile_path(path)
    value = read(compiled, data, data)
    if value is MISSING:
        raise NoSuchJsonPathError(json_path=path, data=data)
    # A slice applied to the input itself needs an array there (LocalStack recorded AWS failing on it).
    if compiled.segments and isinstance(compiled.segments[0], Slice) and not isinstance(data, list):
        raise NoSuchJsonPathError(json_path=path, data=data)
    return value


def missing_path_message(path: str, data: JsonValue) -> str:
    """Jayway's words for a definite path that names nothing, as AWS quotes them after "Invalid path".

    The path is followed as far as it goes: a missing last step is "No results for path: $['a']['b']",
    a missing step before it "Missing property in path $['a']" (both recorded).
    """
    try:
        compiled = compile_path(path)
    except JsonPathSyntaxError:
        return f"No results for path: {path}"
    node, evaluated = data, "$"
    for position, segment in enumerate(compiled.segments, start=1):
        if isinstance(segment, Names) and len(segment.names) == 1:
            name = segment.names[0]
            evaluated += f"['{name}']"
            found = isinstance(node, dict) and name in node
            node = node[name] if isinstance(node, dict) and found else None
        elif isinstance(segment, Indexes) and len(segment.indexes) == 1:
            index = segment.indexes[0]
            evaluated += f"[{index}]"
            found = isinstance(node, list) and -len(node) <= index < len(node)
            node = node[index] if isinstance(node, list) and found else None
        else:
            break
        if not found:
            last = position == len(compiled.segments)
            return f"No results for path: {evaluated}" if last else f"Missing property in path {evaluated}"
    return f"No results for path: {evaluated}"


def _word_invalid_paths_as_jayway() -> None:
    """InputPath, OutputPath and the Seconds paths: the cause after "Invalid path" in Jayway's words.

    moto wrote "No results for path" with the whole path after ``$`` (``$['no.such.path']``) for any
    missing step; AWS says where the path stopped (recorded: ``Missing property in path $['no']``).
    """
    from sam_local_cloud.moto_seam.stepfunctions import (
        FailureEventException,
        HeartbeatSecondsPath,
        InputPath,
        NoSuchJsonPathError,
        OutputPath,
        TimeoutSecondsPath,
    )

    def reworded(proceed: Callable[[object, object], object], self: object, env: object) -> object:
        try:
            return proceed(self, env)
        except FailureEventException as failure:
            missing = failure.__context__
            details: dict[str, object] = dict(failure.failure_event.event_details or {})
            if isinstance(missing, NoSuchJsonPathError):
                message = missing_path_message(missing.json_path, missing.data)
                for event_details in details.values():
                    if isinstance(event_details, dict) and str(event_details.get("cause", "")).startswith(
                        "Invalid path '"
                    ):
                        event_details["cause"] = f"Invalid path '{missing.json_path}' : {message}"
            raise

    for owner, name in (
        (InputPath, "_eval_body"),
        (OutputPath, "_eval_body"),
        (TimeoutSecondsPath, "_eval_seconds"),
        (HeartbeatSecondsPath, "_eval_seconds"),
    ):
        hooks.around(owner, name, concern="jsonpath")(reworded)


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        argument,
        boolean_equals,
        json_path,
        numeric,
        states,
        string_expression,
        string_operators,
        timestamp_operators,
    )

    # moto's own definition, and the modules that bound ``extract_json`` by name when they were imported.
    for module in (
        json_path,
        string_expression,
        argument,
        timestamp_operators,
        boolean_equals,
        numeric,
        string_operators,
        states,
    ):
        hooks.replace(module, "extract_json", extract_json, concern="jsonpath")
    _quote_inputs_compactly()
    _word_invalid_paths_as_jayway()
    _parse_result_paths_once()


def _parse_result_paths_once() -> None:
    """ResultPath's jsonpath_ng expression parsed once per path, not on every state that writes one.

    moto's ``ResultPath`` calls ``jsonpath_ng.parse`` each time it runs, and every call builds a new ply
    parser (lexer and LALR tables) before parsing: a fifth of the interpreter's CPU per Task. The parsed
    expression is immutable (``update_or_create`` only reads its fields), so one can serve every thread.
    """
    from jsonpath_ng import parse

    from sam_local_cloud.moto_seam.stepfunctions import result_path

    hooks.replace(result_path, "parse", functools.lru_cache(maxsize=4096)(parse), concern="jsonpath")


def _quote_inputs_compactly() -> None:
    """The input a "could not be found" cause quotes is compact JSON on AWS (``{"Jobs":[0,1]}``)."""
    from sam_local_cloud.moto_seam.stepfunctions import state, string_expression, to_json_str

    def compact_json(obj: object, separators: tuple[str, str] | None = None) -> str:
        return to_json_str(obj, separators=separators or (",", ":"))

    # Both modules call this name only to write JSON into history details and causes.
    for module in (state, string_expression):
        hooks.replace(module, "to_json_str", compact_json, concern="jsonpath")
