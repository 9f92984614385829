"""The checks AWS's front end makes on a request before the service's code runs, on botocore's models.

AWS checks every request against the service's model first: a JSON body that does not parse is a
``SerializationException``, a value of the wrong JSON type too, an ``X-Amz-Target`` naming no operation an
``UnknownOperationException``, a missing required member or a value outside its length, range, enum or
pattern a ``ValidationException`` (``ValidationError`` in the query protocol) whose message names each
member, in Coral's words; a member marked sensitive is named without its value. An ARN member holding no ARN
gets the operation's own invalid-ARN error. S3 refuses an XML body that does not parse as ``MalformedXML``.

Patterns the models write in Java's syntax, which Python reads differently, are not checked: a pattern read
wrongly would refuse what AWS accepts.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl
from xml.etree import ElementTree

from botocore.model import OperationModel, ServiceModel, Shape

from sam_local_cloud import sdk_models
from sam_local_cloud.json_types import JsonValue

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

# The services moto serves behind the local cloud's endpoint (botocore's names).
GUARDED_SERVICES = (
    "dynamodb",
    "stepfunctions",
    "sqs",
    "sns",
    "events",
    "cloudwatch",
    "iam",
    "logs",
    "sts",
    "s3",
    "lambda",
)
# The local cloud's answer to an operation the service's model has and moto does not implement.
NOT_IMPLEMENTED_CODE = "UnsupportedOperationException"
_MAX_MESSAGE_ERRORS = 10


@dataclass(frozen=True)
class Refusal:
    """An error answer before (or instead of) the service's: AWS's code, HTTP status and message."""

    code: str
    message: str
    status: int = 400


# Which guarded service an X-Amz-Target prefix or a signature's service names, as botocore's models say
# (a unit test holds these to the models). Read from the models on every start, they cost the first
# request of each process most of a second: eleven models parsed to answer one.
TARGET_PREFIXES = {
    "DynamoDB_20120810": "dynamodb",
    "AWSStepFunctions": "stepfunctions",
    "AmazonSQS": "sqs",
    "AWSEvents": "events",
    "GraniteServiceVersion20100801": "cloudwatch",
    "Logs_20140328": "logs",
}
SIGNING_NAMES = {
    "dynamodb": "dynamodb",
    "states": "stepfunctions",
    "sqs": "sqs",
    "sns": "sns",
    "events": "events",
    "monitoring": "cloudwatch",
    "iam": "iam",
    "logs": "logs",
    "sts": "sts",
    "s3": "s3",
    "lambda": "lambda",
    # Signing names botocore's endpoint rules give single operations (S3's WriteGetObjectResponse).
    "s3-object-lambda": "s3",
}


def service_of(environ: WSGIEnvironment) -> ServiceModel | None:
    """The service a request is for: its ``X-Amz-Target`` prefix, else the service its signature names."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        service = TARGET_PREFIXES.get(target.rpartition(".")[0])
        return sdk_models.service_model(service) if service is not None else None
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    scope = authorization.partition("Credential=")[2].split(",", 1)[0].split("/")
    if len(scope) >= 4 and scope[3] in SIGNING_NAMES:
        return sdk_models.service_model(SIGNING_NAMES[scope[3]])
    return None


def protocol_of(model: ServiceModel) -> str:
    return str(getattr(model, "resolved_protocol", None) or model.protocol)


def operation_name(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> str | None:
    protocol = protocol_of(model)
    if protocol == "json":
        return str(environ.get("HTTP_X_AMZ_TARGET", "")).rpartition(".")[2] or None
    if protocol == "query":
        values = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        with contextlib.suppress(UnicodeDecodeError):
            values.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        return values.get("Action")
    return None


def check_request(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    """AWS's answer to a request its front end refuses, or None to let the service answer."""
    protocol = protocol_of(model)
    if protocol == "json":
        return _check_json(model, environ, body)
    if protocol == "query":
        return _check_query(model, environ, body)
    if protocol == "rest-xml":
        return (
            _check_s3_key(model, environ)
            or _check_bucket_policy(model, environ, body)
            or _check_xml_payload(model, environ, body)
        )
    if protocol == "rest-json":
        return _check_json_payload(model, environ, body)
    return None


def _check_json_payload(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    """A REST-JSON body that is not JSON, for an operation whose members travel in the body."""
    operation = rest_operation(model, str(environ.get("REQUEST_METHOD", "GET")), environ)
    shape = operation.input_shape if operation is not None else None
    if operation is None or shape is None or not body.strip() or shape.serialization.get("payload"):
        return None
    members: dict[str, Shape] = shape.members
    if all(member.serialization.get("location") for member in members.values()):
        return None
    try:
        json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        modelled = {shape.name for shape in operation.error_shapes}
        code = (
            "InvalidRequestContentException"
            if "InvalidRequestContentException" in modelled
            else "SerializationException"
        )
        return Refusal(code, f"Could not parse request body into json: {error}"[:300])
    return None


MALFORMED_XML = "The XML you provided was not well-formed or did not validate against our published schema"


# S3's longest object key, in UTF-8 bytes.
S3_MAX_KEY_BYTES = 1024


def _check_s3_key(model: ServiceModel, environ: WSGIEnvironment) -> Refusal | None:
    """A path-style S3 request naming a key longer than S3 takes: ``KeyTooLongError``."""
    if model.service_name != "s3":
        return None
    # PATH_INFO is the path's bytes decoded as latin-1: encoded back, they are the key's UTF-8 bytes.
    raw_path = str(environ.get("PATH_INFO", "")).encode("latin-1", errors="replace")
    key = raw_path.lstrip(b"/").partition(b"/")[2]
    if len(key) > S3_MAX_KEY_BYTES:
        return Refusal("KeyTooLongError", "Your key is too long")
    return None


def _check_bucket_policy(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    """A bucket policy S3 cannot read as JSON: ``MalformedPolicy``, in S3's two wordings. (A policy stored
    as sent would come back as bytes no SDK can decode.)"""
    if model.service_name != "s3" or environ.get("REQUEST_METHOD") != "PUT":
        return None
    operation = rest_operation(model, "PUT", environ)
    if operation is None or operation.name != "PutBucketPolicy":
        return None
    if not body.lstrip().startswith(b"{"):
        return Refusal("MalformedPolicy", "Policies must be valid JSON and the first byte must be '{'")
    try:
        json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Refusal("MalformedPolicy", "This policy contains invalid Json")
    return None


def _check_xml_payload(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    """An XML body that does not parse, or whose root is not the operation's: S3's MalformedXML."""
    operation = rest_operation(model, str(environ.get("REQUEST_METHOD", "GET")), environ)
    shape = operation.input_shape if operation is not None else None
    payload_name = shape.serialization.get("payload") if shape is not None else None
    if shape is None or not payload_name:
        return None
    payload: Shape = shape.members[payload_name]
    if payload.type_name != "structure":
        return None
    if not body.strip():
        if payload_name in shape.required_members:
            return Refusal("MissingRequestBodyError", "Request Body is empty")
        return None
    try:
        root = ElementTree.fromstring(body)
    except (ElementTree.ParseError, RecursionError, ValueError):
        return Refusal("MalformedXML", MALFORMED_XML)
    if root.tag.rsplit("}", 1)[-1] != payload.serialization.get("name", payload_name):
        return Refusal("MalformedXML", MALFORMED_XML)
    return None


def rest_operation(model: ServiceModel, method: str, environ: WSGIEnvironment) -> OperationModel | None:
    """The operation a path-style REST request names: its method, path depth and query markers
    (``?encryption``), the most specific template winning (the model's first of equally specific ones)."""
    candidates = rest_operations(model, method, environ)
    return candidates[0] if candidates else None


def rest_operations(model: ServiceModel, method: str, environ: WSGIEnvironment) -> list[OperationModel]:
    """Every operation whose template fits a path-style REST request as closely as any does: more than one
    where templates differ only in members the query may carry (S3's Get and List of annotations)."""
    segments = [segment for segment in str(environ.get("PATH_INFO", "")).split("/") if segment]
    query = {key for key, _ in parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True)}
    best: list[OperationModel] = []
    most = -1
    for template, markers, operation in _rest_templates(model.service_name, method):
        if not markers <= query or not _path_fits(template, segments):
            continue
        if len(markers) > most:
            best, most = [operation], len(markers)
        elif len(markers) == most:
            best.append(operation)
    return best


@cache
def _rest_templates(
    service: str, method: str
) -> list[tuple[tuple[str, ...], frozenset[str], OperationModel]]:
    model = sdk_models.service_model(service)
    templates = []
    for name in model.operation_names:
        operation = model.operation_model(name)
        if operation.http.get("method") != method:
            continue
        path, _, query = operation.http.get("requestUri", "/").partition("?")
        markers = frozenset(part.split("=", 1)[0] for part in query.split("&") if part)
        templates.append((tuple(part for part in path.split("/") if part), markers, operation))
    return templates


def _path_fits(template: tuple[str, ...], segments: list[str]) -> bool:
    greedy = bool(template) and template[-1].endswith("+}")
    if len(segments) < len(template) or (not greedy and len(segments) != len(template)):
        return False
    return all(
        part.startswith("{") or part == segment for part, segment in zip(template, segments, strict=False)
    )


def _check_json(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    name = str(environ.get("HTTP_X_AMZ_TARGET", "")).rpartition(".")[2]
    if name not in model.operation_names:
        return Refusal("UnknownOperationException", "")
    operation = model.operation_model(name)
    try:
        document = json.loads(body.decode("utf-8")) if body.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Refusal("SerializationException", "")
    if not isinstance(document, dict):
        return Refusal("SerializationException", "Start of list found where not expected")
    if operation.input_shape is None:
        return None
    problems = _Problems()
    _walk(operation.input_shape, document, "", problems)
    if problems.serialization:
        return Refusal("SerializationException", problems.serialization)
    refusal = _validation_refusal(problems.constraints, "ValidationException")
    if refusal is None and problems.bad_arns:
        return _arn_refusal(operation, problems.bad_arns, "ValidationException")
    return refusal


def _check_query(model: ServiceModel, environ: WSGIEnvironment, body: bytes) -> Refusal | None:
    pairs = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    if body and "x-www-form-urlencoded" in str(environ.get("CONTENT_TYPE", "")):
        try:
            pairs += parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
        except (UnicodeDecodeError, ValueError):
            return Refusal("MalformedQueryString", "The query string contains a syntax error.", 404)
    values = dict(pairs)
    action = values.get("Action")
    if not action:
        return Refusal("MissingAction", "Missing Action")
    if action not in model.operation_names:
        return Refusal("InvalidAction", f"The action {action} is not valid for this web service.")
    operation = model.operation_model(action)
    shape = operation.input_shape
    if shape is None:
        return None
    problems = _Problems()
    members: dict[str, Shape] = shape.members
    prefixes = {key.split(".", 1)[0] for key in values}
    for member_name in shape.required_members:
        serialized = members[member_name].serialization.get("name", member_name)
        if serialized not in prefixes:
            problems.constraint("null", _coral_path("", member_name), "Member must not be null")
    for member_name, member in members.items():
        serialized = member.serialization.get("name", member_name)
        if serialized in values and member.type_name == "string":
            _check_scalar(member, values[serialized], _coral_path("", member_name), problems)
    refusal = _validation_refusal(problems.constraints, "ValidationError")
    if refusal is None and problems.bad_arns:
        return _arn_refusal(operation, problems.bad_arns, "ValidationError")
    return refusal


class _Problems:
    def __init__(self) -> None:
        self.constraints: list[str] = []
        self.serialization = ""
        # ARN members whose value is no ARN: the operation's own "invalid ARN" error, where it has one.
        self.bad_arns: list[tuple[str, str]] = []

    def arn(self, value: str, path: str) -> None:
        self.bad_arns.append((value, path))

    def constraint(self, value: str, path: str, rule: str) -> None:
        # A sensitive member's value is never repeated back: "Value at 'definition' failed ...".
        said = f"Value {value} at" if value else "Value at"
        self.constraints.append(f"{said} '{path}' failed to satisfy constraint: {rule}")

    def wrong_type(self, message: str) -> None:
        if not self.serialization:
            self.serialization = message


def _validation_refusal(constraints: list[str], code: str) -> Refusal | None:
    if not constraints:
        return None
    count = len(constraints)
    shown = "; ".join(constraints[:_MAX_MESSAGE_ERRORS])
    noun = "error" if count == 1 else "errors"
    return Refusal(code, f"{count} validation {noun} detected: {shown}")


def _coral_path(parent: str, member_name: str) -> str:
    name = member_name[:1].lower() + member_name[1:]
    return f"{parent}.{name}" if parent else name


_JSON_KINDS = {bool: "BOOLEAN_VALUE", int: "NUMBER_VALUE", float: "NUMBER_VALUE", str: "STRING_VALUE"}
_EXPECTED_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "boolean": (bool,),
    "timestamp": (int, float, str),
    "blob": (str,),
}


def _walk(shape: Shape, value: JsonValue, path: str, problems: _Problems) -> None:
    """Check one value against its shape: Coral's deserialiser (types) and validator (constraints)."""
    kind = shape.type_name
    if kind == "structure":
        _walk_structure(shape, value, path, problems)
    elif kind == "list":
        _walk_list(shape, value, path, problems)
    elif kind == "map":
        _walk_map(shape, value, path, problems)
    elif kind in _EXPECTED_SCALARS:
        _walk_scalar(shape, value, path, problems)


def _walk_structure(shape: Shape, value: JsonValue, path: str, problems: _Problems) -> None:
    if shape.metadata.get("document"):
        return
    if not isinstance(value, dict):
        problems.wrong_type(_unexpected(value))
        return
    members: dict[str, Shape] = shape.members  # type: ignore[attr-defined]
    for member_name in shape.required_members:
        if value.get(member_name) is None:
            problems.constraint("null", _coral_path(path, member_name), "Member must not be null")
    for member_name, member_value in value.items():
        member = members.get(member_name)
        if member is not None and member_value is not None:
            _walk(member, member_value, _coral_path(path, member_name), problems)


def _walk_list(shape: Shape, value: JsonValue, path: str, problems: _Problems) -> None:
    if not isinstance(value, list):
        problems.wrong_type(_unexpected(value))
        return
    _check_size(shape, len(value), path, problems)
    for index, item in enumerate(value, start=1):
        if item is not None:
            _walk(shape.member, item, f"{path}.{index}.member", problems)  # type: ignore[attr-defined]


def _walk_map(shape: Shape, value: JsonValue, path: str, problems: _Problems) -> None:
    if not isinstance(value, dict):
        problems.wrong_type(_unexpected(value))
        return
    _check_size(shape, len(value), path, problems)
    for key, item in value.items():
        _walk(shape.key, key, f"{path}.key", problems)  # type: ignore[attr-defined]
        if item is not None:
            _walk(shape.value, item, f"{path}.{key}.member", problems)  # type: ignore[attr-defined]


def _walk_scalar(shape: Shape, value: Any, path: str, problems: _Problems) -> None:
    kind = shape.type_name
    integral = kind in ("integer", "long") and isinstance(value, float) and value.is_integer()
    wrong_type = not isinstance(value, _EXPECTED_SCALARS[kind]) and not integral
    if wrong_type or (kind != "boolean" and isinstance(value, bool)):
        problems.wrong_type(f"{_json_kind(value)} can not be converted to {kind.title()}")
        return
    if kind == "blob":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            problems.wrong_type("Base64 encoded value is not valid")
        return
    _check_scalar(shape, value, path, problems)


def _check_scalar(shape: Shape, value: Any, path: str, problems: _Problems) -> None:
    metadata = shape.metadata
    if shape.type_name == "string":
        enum = shape.enum  # type: ignore[attr-defined]
        names_an_arn = _names_an_arn(path)
        if not (enum or names_an_arn or "min" in metadata or "max" in metadata or "pattern" in metadata):
            return  # nothing to check: most of a DynamoDB item's strings
        shown = _shown(shape, value)
        if enum and value not in enum:
            problems.constraint(shown, path, f"Member must satisfy enum value set: [{', '.join(enum)}]")
            return
        before = len(problems.constraints)
        _check_size(shape, len(value), path, problems, shown)
        pattern = shape.metadata.get("pattern")
        compiled = _python_pattern(pattern) if pattern else None
        if len(problems.constraints) == before and compiled is not None and not compiled.fullmatch(value):
            problems.constraint(shown, path, f"Member must satisfy regular expression pattern: {pattern}")
        if names_an_arn and not _ARN.match(value):
            problems.arn(value, path)
    elif shape.type_name in ("integer", "long", "float", "double"):
        least, most = metadata.get("min"), metadata.get("max")
        if least is None and most is None:
            return
        shown = _shown(shape, value)
        if least is not None and value < least:
            problems.constraint(shown, path, f"Member must have value greater than or equal to {least}")
        elif most is not None and value > most:
            problems.constraint(shown, path, f"Member must have value less than or equal to {most}")


def _shown(shape: Shape, value: Any) -> str:
    """The value as a validation message quotes it (nothing for a sensitive member)."""
    if shape.metadata.get("sensitive"):
        return ""
    return f"'{value}'" if isinstance(value, str) else str(value)


# Java's syntax Python reads differently or not at all: such a pattern is not checked rather than misread.
_JAVA_ONLY = ("\\p{", "\\P{", "++", "*+", "?+", "\\z", "\\Z", "(?<", "&&")
_ARN = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:[^:]*:.+", re.DOTALL)


@cache
def _python_pattern(pattern: str) -> re.Pattern[str] | None:
    if any(token in pattern for token in _JAVA_ONLY):
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _names_an_arn(path: str) -> bool:
    # By the member's name: shapes named ...Arn also take plain names (DynamoDB's TableName is a TableArn).
    # The path's last three characters: a shorter last member name would put the dot before it among them.
    return path[-3:].lower() == "arn"


def _arn_refusal(operation: OperationModel, bad_arns: list[tuple[str, str]], fallback: str) -> Refusal:
    """The operation's own error for a malformed ARN: InvalidArn where it has one, else its invalid-parameter
    error, else the protocol's validation error."""
    value, path = bad_arns[0]
    errors = {shape.name: shape for shape in operation.error_shapes}
    if "InvalidArn" in errors:
        return Refusal("InvalidArn", f"Invalid Arn: '{value}'")
    for name in ("InvalidParameterException", "InvalidParameterValueException", "InvalidInputException"):
        if name in errors:
            code = errors[name].metadata.get("error", {}).get("code", name)
            return Refusal(code, f"Invalid parameter: {path} Reason: An ARN must have at least 6 elements")
    member = path[:1].upper() + path[1:]
    return Refusal(fallback, f"Invalid {member}: '{value}' is not an ARN")


def _check_size(shape: Shape, size: int, path: str, problems: _Problems, shown: str | None = None) -> None:
    least, most = shape.metadata.get("min"), shape.metadata.get("max")
    said = shown if shown is not None else ("" if shape.metadata.get("sensitive") else "'[...]'")
    if least is not None and size < least:
        problems.constraint(said, path, f"Member must have length greater than or equal to {least}")
    elif most is not None and size > most:
        problems.constraint(said, path, f"Member must have length less than or equal to {most}")


def _json_kind(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "TRUE_VALUE" if value else "FALSE_VALUE"
    return _JSON_KINDS.get(type(value), "VALUE")


def _unexpected(value: JsonValue) -> str:
    if isinstance(value, dict):
        return "Start of structure or map found where not expected."
    if isinstance(value, list):
        return "Start of list found where not expected"
    return f"{_json_kind(value)} can not be converted to a structure, list or map"
