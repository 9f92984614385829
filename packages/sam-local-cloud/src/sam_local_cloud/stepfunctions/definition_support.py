"""Definitions AWS accepts and moto's ASL grammar refuses: taken out before moto parses, kept, honoured later.

moto's parser is generated from an older LocalStack grammar whose source is not shipped, so it cannot be
regenerated. Instead every definition passes through :func:`prepare_definition` before moto parses it (both
where CreateStateMachine/UpdateStateMachine validate it and where an execution parses it): one rule per
construct the grammar lacks takes the construct out of the definition, checks it as AWS would (a bad value is
still an InvalidDefinition) and keeps it, keyed by the state's path, in a :class:`MapSupport`. After moto has
built its components, each Map state component is bound to what was kept for it, and the interpreter patches
(``distributed_map``) read it from there, never from moto's objects.

The rules, each general (by construct, never by application):

- ``ProcessorConfig.ExecutionType: EXPRESS``: the grammar knows only ``STANDARD``;
- ``ItemBatcher``: not in the grammar;
- ``ItemReader.ReaderConfig``: the grammar lacks ``JSONL``, ``MANIFEST``, ``CSVDelimiter`` and a reader
  configuration without ``InputType`` (``s3:listObjectsV2`` with ``MaxItems``); the input type and CSV
  settings are kept here, so one reader honours every form, and moto keeps evaluating ``MaxItems(Path)``;
- ``ResultWriter.WriterConfig``: not in the grammar; a ``ResultWriter`` holding only a ``WriterConfig``
  (results to the state's output, not to S3) is taken out whole;
- ``ToleratedFailurePercentage`` written as an integer (``5``): the grammar takes only a decimal (``5.0``);
- whether ``ToleratedFailureCount``/``ToleratedFailurePercentage`` were declared at all: AWS applies only
  the declared ones, moto fills in 0 for the other;
- strings the grammar lexes as its own keywords (``"JSONata"``, ``"JSONPath"``, ``"ErrorPath"``,
  ``"CausePath"``) where the definition means plain text (a payload value, a state name): written with a
  JSON escape so the lexer sees a plain string, decoded again when moto reads it;
- JSON escapes (``\\u00ed``, ``\\"``): the definition is re-serialised from its parsed JSON, so moto sees the
  characters AWS sees, and the strings moto read without decoding what escapes remain (state names,
  ``Next``, ``Assign`` literals) are decoded (paths excepted, as AWS's recordings show).

Error names in ``ErrorEquals`` that the grammar does not know (``States.Http.Socket``, ``States.MyThing``) are
strings moto reads as custom names, which ``error_names`` lets start with ``States.``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sam_local_cloud.json_types import JsonObject, JsonValue
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam.records import EngineRecords

KEYWORD_LOOKALIKES = frozenset({"JSONata", "JSONPath", "ErrorPath", "CausePath"})

READER_INPUT_TYPES = ("CSV", "JSON", "JSONL", "MANIFEST", "PARQUET")
CSV_HEADER_LOCATIONS = ("FIRST_ROW", "GIVEN")
CSV_DELIMITERS = {"COMMA": ",", "PIPE": "|", "SEMICOLON": ";", "SPACE": " ", "TAB": "\t"}
WRITER_TRANSFORMATIONS = ("NONE", "COMPACT", "FLATTEN")
WRITER_OUTPUT_TYPES = ("JSON", "JSONL")
# AWS's cap on a batch's input (the child execution's input quota).
MAX_INPUT_BYTES_PER_BATCH = 262_144


class DefinitionRefusedError(ValueError):
    """A construct taken out here is invalid: CreateStateMachine answers InvalidDefinition with this text."""


@dataclass(frozen=True)
class ReaderConfig:
    """``ItemReader.ReaderConfig``; ``input_type`` None is an S3 listing (``s3:listObjectsV2``)."""

    input_type: str | None = None
    csv_header_location: str = "FIRST_ROW"
    csv_headers: tuple[str, ...] = ()
    csv_delimiter: str = "COMMA"


@dataclass(frozen=True)
class ItemBatcher:
    max_items_per_batch: int | None = None
    max_items_per_batch_path: str | None = None
    max_input_bytes_per_batch: int | None = None
    max_input_bytes_per_batch_path: str | None = None
    batch_input: JsonObject | None = None


@dataclass(frozen=True)
class WriterConfig:
    transformation: str
    output_type: str
    # False: the ResultWriter held only a WriterConfig, so the transformed results are the state's result.
    writes_to_s3: bool


@dataclass
class MapSupport:
    """What a Map state declares that moto's grammar lacks (or that moto fills in when undeclared)."""

    path: str
    express_children: bool = False
    reader_config: ReaderConfig | None = None
    item_batcher: ItemBatcher | None = None
    writer_config: WriterConfig | None = None
    # The ResultWriter names a Resource: the results go to S3 after the children have run.
    writes_results_to_s3: bool = False
    tolerated_failure_count_declared: bool = False
    tolerated_failure_percentage_declared: bool = False


@dataclass
class PreparedDefinition:
    text: str
    maps: dict[str, MapSupport] = field(default_factory=dict)

    def support_by_state_name(self) -> dict[str, MapSupport]:
        # State names are unique across a state machine (AWS refuses a repeated one, see ``definitions``).
        return {path.rsplit("/", 1)[-1]: support for path, support in self.maps.items()}


def prepare_definition(text: str) -> PreparedDefinition:
    """The definition as moto's grammar can parse it, and what was taken out of each Map state.

    Text that is not a JSON object is passed on unchanged: moto's parser gives the error AWS would.
    """
    try:
        document = json.loads(text)
    except ValueError:
        return PreparedDefinition(text=text)
    if not isinstance(document, dict):
        return PreparedDefinition(text=text)
    maps: dict[str, MapSupport] = {}
    for path, state in _states_of(document, ""):
        for rule in STATE_RULES:
            rule(state, path, maps)
    return PreparedDefinition(text=_dump_program(document), maps=maps)


def canonical_text(text: str, *, single_state: bool = False) -> str:
    """The JSON text for moto's lexer to read what AWS reads: re-serialised from its parsed JSON (escapes
    decoded, keyword lookalikes escaped), nothing taken out. ``single_state``: a state's definition, not a
    program's (TestState without a state name). Text that is not a JSON object is passed on for moto's parser
    to refuse.
    """
    try:
        document = json.loads(text)
    except ValueError:
        return text
    if not isinstance(document, dict):
        return text
    return _dump_state(document) if single_state else _dump_program(document)


def _states_of(program: JsonObject, prefix: str) -> Iterator[tuple[str, JsonObject]]:
    """Every state of a program and of the programs nested in it (Map processors, Parallel branches)."""
    states = program.get("States")
    if not isinstance(states, dict):
        return
    for name, state in states.items():
        if not isinstance(state, dict):
            continue
        path = f"{prefix}/States/{name}"
        yield path, state
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(nested := state.get(key), dict):
                yield from _states_of(nested, f"{path}/{key}")
        branches = state.get("Branches")
        if isinstance(branches, list):
            for index, branch in enumerate(branches):
                if isinstance(branch, dict):
                    yield from _states_of(branch, f"{path}/Branches[{index}]")


# --- One rule per construct ------------------------------------------------------------------------------

StateRule = Callable[[JsonObject, str, dict[str, MapSupport]], None]


def _map_support(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> MapSupport | None:
    if state.get("Type") != "Map":
        return None
    return maps.setdefault(path, MapSupport(path=path))


def _processor_config(state: JsonObject) -> JsonObject:
    for key in ("ItemProcessor", "Iterator"):
        processor = state.get(key)
        if isinstance(processor, dict) and isinstance(config := processor.get("ProcessorConfig"), dict):
            return config
    return {}


def _refuse_unless_distributed(state: JsonObject, field_name: str, path: str) -> None:
    if _processor_config(state).get("Mode") != "DISTRIBUTED":
        raise DefinitionRefusedError(
            _schema_failure(
                f"Field '{field_name}' is only supported for Map states in DISTRIBUTED mode",
                f"{path}/{field_name}",
            )
        )


def _express_children(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> None:
    support = _map_support(state, path, maps)
    if support is None:
        return
    config = _processor_config(state)
    if config.get("ExecutionType") == "EXPRESS":
        config["ExecutionType"] = "STANDARD"
        support.express_children = True


def _item_batcher(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> None:
    support = _map_support(state, path, maps)
    if support is None or "ItemBatcher" not in state:
        return
    _refuse_unless_distributed(state, "ItemBatcher", path)
    where = f"{path}/ItemBatcher"
    batcher = state.pop("ItemBatcher")
    if not isinstance(batcher, dict):
        raise DefinitionRefusedError(_schema_failure("Expected value of type: Object", where))
    known = {
        "MaxItemsPerBatch",
        "MaxItemsPerBatchPath",
        "MaxInputBytesPerBatch",
        "MaxInputBytesPerBatchPath",
        "BatchInput",
    }
    _refuse_unknown_fields(batcher, known, where)
    _refuse_both(batcher, "MaxItemsPerBatch", where)
    _refuse_both(batcher, "MaxInputBytesPerBatch", where)
    if not known.difference({"BatchInput"}) & batcher.keys():
        raise DefinitionRefusedError(
            _schema_failure("ItemBatcher must declare MaxItemsPerBatch or MaxInputBytesPerBatch", where)
        )
    max_bytes = _positive_int(batcher, "MaxInputBytesPerBatch", where)
    if max_bytes is not None and max_bytes > MAX_INPUT_BYTES_PER_BATCH:
        raise DefinitionRefusedError(
            _schema_failure(
                f"MaxInputBytesPerBatch must be at most {MAX_INPUT_BYTES_PER_BATCH}",
                f"{where}/MaxInputBytesPerBatch",
            )
        )
    batch_input = batcher.get("BatchInput")
    if batch_input is not None and not isinstance(batch_input, dict):
        raise DefinitionRefusedError(_schema_failure("Expected value of type: Object", f"{where}/BatchInput"))
    support.item_batcher = ItemBatcher(
        max_items_per_batch=_positive_int(batcher, "MaxItemsPerBatch", where),
        max_items_per_batch_path=_path_string(batcher, "MaxItemsPerBatchPath", where),
        max_input_bytes_per_batch=max_bytes,
        max_input_bytes_per_batch_path=_path_string(batcher, "MaxInputBytesPerBatchPath", where),
        batch_input=batch_input,
    )


def _reader_config(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> None:
    support = _map_support(state, path, maps)
    reader = state.get("ItemReader")
    if support is None or not isinstance(reader, dict):
        return
    where = f"{path}/ItemReader/ReaderConfig"
    config = reader.get("ReaderConfig", {})
    if not isinstance(config, dict):
        raise DefinitionRefusedError(_schema_failure("Expected value of type: Object", where))
    _refuse_unknown_fields(
        config,
        {"InputType", "CSVHeaderLocation", "CSVHeaders", "CSVDelimiter", "MaxItems", "MaxItemsPath"},
        where,
    )
    input_type = _enum(config, "InputType", READER_INPUT_TYPES, where)
    if input_type is None and str(reader.get("Resource", "")).endswith(":s3:getObject"):
        raise DefinitionRefusedError(
            _schema_failure("InputType is required to read an object with s3:getObject", where)
        )
    csv_fields = {"CSVHeaderLocation", "CSVHeaders", "CSVDelimiter"} & config.keys()
    if csv_fields and input_type != "CSV":
        raise DefinitionRefusedError(
            _schema_failure(f"{sorted(csv_fields)[0]} is only valid for InputType CSV", where)
        )
    location = _enum(config, "CSVHeaderLocation", CSV_HEADER_LOCATIONS, where) or "FIRST_ROW"
    headers = config.get("CSVHeaders")
    if location == "GIVEN" and not (isinstance(headers, list) and headers):
        raise DefinitionRefusedError(
            _schema_failure("CSVHeaders must be a non-empty list when CSVHeaderLocation is GIVEN", where)
        )
    support.reader_config = ReaderConfig(
        input_type=input_type,
        csv_header_location=location,
        csv_headers=tuple(str(header) for header in headers) if isinstance(headers, list) else (),
        csv_delimiter=_enum(config, "CSVDelimiter", tuple(CSV_DELIMITERS), where) or "COMMA",
    )
    # What moto's grammar reads stays for moto: MaxItems(Path) in every form (literal, path, variable,
    # JSONata) is evaluated by moto, and its CSV header checks still apply. The input type it is given only
    # satisfies the grammar; the items are read by ``distributed_map`` with the real one.
    moto_config: JsonObject = {"InputType": "CSV" if input_type == "CSV" else "JSON"}
    moto_config.update({k: v for k, v in config.items() if k not in ("InputType", "CSVDelimiter")})
    reader["ReaderConfig"] = moto_config


def _writer_config(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> None:
    support = _map_support(state, path, maps)
    writer = state.get("ResultWriter")
    if support is None or not isinstance(writer, dict):
        return
    support.writes_results_to_s3 = "Resource" in writer
    if "WriterConfig" not in writer:
        return
    _refuse_unless_distributed(state, "ResultWriter", path)
    where = f"{path}/ResultWriter/WriterConfig"
    config = writer.pop("WriterConfig")
    if not isinstance(config, dict):
        raise DefinitionRefusedError(_schema_failure("Expected value of type: Object", where))
    _refuse_unknown_fields(config, {"Transformation", "OutputType"}, where)
    writes_to_s3 = bool(writer)
    if not writes_to_s3:
        # Nothing left for moto's ResultWriter, whose grammar requires a Resource.
        del state["ResultWriter"]
    support.writer_config = WriterConfig(
        transformation=_enum(config, "Transformation", WRITER_TRANSFORMATIONS, where) or "NONE",
        output_type=_enum(config, "OutputType", WRITER_OUTPUT_TYPES, where) or "JSON",
        writes_to_s3=writes_to_s3,
    )


def _tolerated_failures(state: JsonObject, path: str, maps: dict[str, MapSupport]) -> None:
    support = _map_support(state, path, maps)
    if support is None:
        return
    support.tolerated_failure_count_declared = bool(
        {"ToleratedFailureCount", "ToleratedFailureCountPath"} & state.keys()
    )
    support.tolerated_failure_percentage_declared = bool(
        {"ToleratedFailurePercentage", "ToleratedFailurePercentagePath"} & state.keys()
    )
    percentage = state.get("ToleratedFailurePercentage")
    if isinstance(percentage, (int, float)) and not isinstance(percentage, bool):
        if not 0 <= percentage <= 100:
            raise DefinitionRefusedError(
                _schema_failure(
                    "ToleratedFailurePercentage must be between 0 and 100",
                    f"{path}/ToleratedFailurePercentage",
                )
            )
        state["ToleratedFailurePercentage"] = float(percentage)


STATE_RULES: tuple[StateRule, ...] = (
    _express_children,
    _item_batcher,
    _reader_config,
    _writer_config,
    _tolerated_failures,
)


# --- How a refused construct is answered -----------------------------------------------------------------


def _schema_failure(problem: str, where: str) -> str:
    return f"Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: {problem} at {where}'"


def _refuse_unknown_fields(config: JsonObject, known: set[str], where: str) -> None:
    for name in config:
        if name not in known:
            raise DefinitionRefusedError(_schema_failure(f"Field '{name}' is not supported", where))


def _refuse_both(config: JsonObject, name: str, where: str) -> None:
    if name in config and f"{name}Path" in config:
        raise DefinitionRefusedError(_schema_failure(f"{name} and {name}Path cannot both be set", where))


def _enum(config: JsonObject, name: str, allowed: tuple[str, ...], where: str) -> str | None:
    value = config.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise DefinitionRefusedError(_schema_failure("Value is not a valid enum value", f"{where}/{name}"))
    return str(value)


def _non_negative_int(config: JsonObject, name: str, where: str) -> int | None:
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DefinitionRefusedError(_schema_failure("Expected a non-negative integer", f"{where}/{name}"))
    return value


def _positive_int(config: JsonObject, name: str, where: str) -> int | None:
    value = _non_negative_int(config, name, where)
    if value == 0:
        raise DefinitionRefusedError(_schema_failure("Expected a positive integer", f"{where}/{name}"))
    return value


def _path_string(config: JsonObject, name: str, where: str) -> str | None:
    value = config.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("$"):
        raise DefinitionRefusedError(_schema_failure("Expected a reference path", f"{where}/{name}"))
    return value


# --- Serialising for moto's lexer ------------------------------------------------------------------------


def _dump_program(program: JsonObject) -> str:
    """The definition as JSON moto's lexer reads as AWS reads the original.

    Grammar positions (program, state and processor objects) are written as they are; every string where the
    definition means text (payloads, state names) is escaped if the lexer would take it for a keyword.
    """
    parts = []
    for key, value in program.items():
        if key == "States" and isinstance(value, dict):
            states = ",".join(f"{_text(name)}:{_dump_state(state)}" for name, state in value.items())
            parts.append(f'"States":{{{states}}}')
        elif key == "QueryLanguage":
            parts.append(f"{_json(key)}:{_json(value)}")
        else:
            parts.append(f"{_json(key)}:{_dump_payload(value)}")
    return "{" + ",".join(parts) + "}"


def _dump_state(state: JsonValue) -> str:
    if not isinstance(state, dict):
        return _dump_payload(state)
    parts = []
    for key, value in state.items():
        if key in ("ItemProcessor", "Iterator") and isinstance(value, dict):
            parts.append(f"{_json(key)}:{_dump_program(value)}")
        elif key == "Branches" and isinstance(value, list):
            branches = ",".join(_dump_program(b) if isinstance(b, dict) else _dump_payload(b) for b in value)
            parts.append(f"{_json(key)}:[{branches}]")
        elif key == "QueryLanguage":
            parts.append(f"{_json(key)}:{_json(value)}")
        else:
            # A state's own field names are the grammar's (ErrorPath, CausePath ...); their values are text.
            parts.append(f"{_json(key)}:{_dump_payload(value)}")
    return "{" + ",".join(parts) + "}"


def _dump_payload(value: JsonValue) -> str:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_text(k)}:{_dump_payload(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump_payload(v) for v in value) + "]"
    return _json(value)


def _text(value: str) -> str:
    if value in KEYWORD_LOOKALIKES:
        return f'"\\u{ord(value[0]):04x}{value[1:]}"'
    return _json(value)


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- Binding what was kept to moto's components ----------------------------------------------------------


@dataclass
class _BoundSupport:
    support: MapSupport | None = None


_bound_support: EngineRecords[_BoundSupport] = EngineRecords(_BoundSupport)


def support_of(component: object) -> MapSupport | None:
    """What was taken out of the definition of the Map state this component belongs to (the state itself,
    its ItemReader or its iteration component); None for a component of no Map."""
    bound = _bound_support.get(component)
    return bound.support if bound is not None else None


def _bind(program: object, prepared: PreparedDefinition) -> None:
    if not prepared.maps:
        return
    from sam_local_cloud.moto_seam.stepfunctions import StateMap

    by_name = prepared.support_by_state_name()
    for component in _components(program):
        if isinstance(component, StateMap) and component.name in by_name:
            support = by_name[component.name]
            for part in (component, component.item_reader, component.iteration_component):
                if part is not None:
                    _bound_support.of(part).support = support


def _components(root: object) -> Iterator[object]:
    """Every moto component reachable from ``root`` (its attributes, lists and dicts), each once."""
    from sam_local_cloud.moto_seam.stepfunctions import Component

    seen: set[int] = set()
    pending: list[object] = [root]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Component):
            yield item
            pending.extend(vars(item).values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())


# --- Hooks into moto -----------------------------------------------------------------------------------


def register_hooks() -> None:
    _prepare_before_parsing()
    _decode_escapes_in_literal_strings()


def _prepare_before_parsing() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import AmazonStateLanguageParser, ASLParserException

    # Every caller (CreateStateMachine's validation, the execution worker, the static analyser) calls
    # this static method through the class.
    @hooks.around(AmazonStateLanguageParser, "parse", concern="definition_support")
    def parse(proceed: Callable[[str], tuple[object, object]], definition: str) -> tuple[object, object]:
        try:
            prepared = prepare_definition(definition)
        except DefinitionRefusedError as refused:
            raise ASLParserException(errors=[str(refused)]) from refused
        program, tree = proceed(prepared.text)
        _bind(program, prepared)
        return program, tree


def _decode_escapes_in_literal_strings() -> None:
    """moto reads some strings (state names, Next, Assign literals, Comment, Label) without decoding their
    JSON escapes, which AWS decodes. Paths (JSONPath, context and variable paths) stay as moto reads them:
    AWS-recorded executions show their escapes reaching the path evaluation."""
    from sam_local_cloud.moto_seam.stepfunctions import ASLParser, Preprocessor

    paths = (
        ASLParser.String_jsonpathContext,
        ASLParser.String_context_pathContext,
        ASLParser.String_variable_sampleContext,
    )

    @hooks.around(Preprocessor, "_inner_string_of", concern="definition_support")
    def inner_string_of(proceed: Callable[[object], str | None], parser_rule_context: object) -> str | None:
        text = proceed(parser_rule_context)
        if text is None or "\\" not in text or isinstance(parser_rule_context, paths):
            return text
        try:
            decoded = json.loads(f'"{text}"')
        except ValueError:
            return text
        return decoded if isinstance(decoded, str) else text
