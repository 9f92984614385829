"""DynamoDB's JSON protocol served straight from moto's backend, without Flask or moto's dispatcher.

moto's server answers a DynamoDB call through its domain dispatcher, a Flask app,
`convert_to_flask_response`, `BaseResponse.setup_class` (URL and form parsing, a query string built
from the JSON body, a protocol parser built for the call) and only then `DynamoHandler.<operation>`.
For the few milliseconds of real work a conditional put needs, that machinery costs as much again.

`DynamoDBApp` keeps moto's own handler and everything that decides an answer (parameter parsing by
the service model, `DynamoHandler.call_action` with its CRC32 header, the serializer, the error
shapes) and replaces only the request plumbing around it. What it does not handle the way moto's
app would, it hands to that app unchanged (the `fallback`), so a request is answered either by moto's
handler called exactly as moto's server calls it, or by moto's server itself.

Three caches (hooks installed by `moto_seam.installers.install_request_caches`, which whoever serves
DynamoDB with this app calls) remove work moto repeats on every request without changing any answer:
`method_names_from_class` (an `inspect.getmembers` of the response class, for every call of every
service), the parse of an UpdateExpression (a pure function of the expression text; moto deep-copies
the tree before it resolves names and values into it) and the tokenising of a condition expression
(also a pure function of the text; the parse that follows resolves names and values per call).
"""

from __future__ import annotations

import functools
import json
import math
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlparse

from werkzeug.http import HTTP_STATUS_CODES

TARGET_PREFIX = "DynamoDB_20120810."
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
# What Flask's Response (moto's server) declares when moto's headers name no Content-Type.
FLASK_DEFAULT_CONTENT_TYPE = "text/html; charset=utf-8"
_EXPRESSIONS_CACHED = 512
# Everything werkzeug builds a request's root URL and raw path from.
_URL_ENVIRON_KEYS = (
    "wsgi.url_scheme",
    "HTTP_HOST",
    "SERVER_NAME",
    "SERVER_PORT",
    "SCRIPT_NAME",
    "PATH_INFO",
    "RAW_URI",
    "REQUEST_URI",
    "HTTP_X_FORWARDED_HOST",
)
_URLS_REMEMBERED = 256

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DynamoDBApp:
    """A WSGI app for DynamoDB (`X-Amz-Target: DynamoDB_20120810.<Operation>`) on moto's backend.

    `fallback` (moto's own WSGI app) answers whatever this app does not handle itself: other services,
    operations DynamoHandler has no method for, compressed or chunked bodies, CORS requests, a body naming
    an AWSAccessKeyId without a signature moto reads, moto's IAM authentication or request recorder when
    they are switched on.
    """

    def __init__(self, fallback: WsgiApp) -> None:
        from sam_local_cloud.moto_seam.services import DynamoHandler, settings

        self._fallback = fallback
        self._handler_class = DynamoHandler
        self._parsers: dict[str, Any] = {}
        self._parsers_lock = threading.Lock()
        self._urls: dict[tuple[Any, ...], str] = {}
        self._cors = not settings.DISABLE_GLOBAL_CORS
        self.handled = 0
        self.passed_on = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        operation = self._operation_handled(environ)
        if operation is None:
            self.passed_on += 1
            return self._fallback(environ, start_response)
        self.handled += 1
        status, headers, body = self._answer(environ, operation)
        start_response(f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN')}", headers)
        return [body]

    # ------------------------------------------------------------------ what is handled here
    def _operation_handled(self, environ: dict[str, Any]) -> str | None:
        from sam_local_cloud.moto_seam.backend_internals import recorder_enabled
        from sam_local_cloud.moto_seam.services import settings

        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if (
            environ.get("REQUEST_METHOD") != "POST"
            or not target.startswith(TARGET_PREFIX)
            or environ.get("CONTENT_TYPE") != JSON_CONTENT_TYPE
            or environ.get("HTTP_CONTENT_ENCODING")
            # A chunked body has no length up front; werkzeug's Request knows how to read one.
            or not environ.get("CONTENT_LENGTH")
            or "HTTP_ORIGIN" in environ
            or environ.get("PATH_INFO", "/") != "/"
            or environ.get("QUERY_STRING")
            # Without an access key moto can read in the signature (the SDKs' usual "testing" is not one),
            # moto takes AWSAccessKeyId from the form it parses the body into, else "AKIAEXAMPLE" (as
            # _handler's get_access_key does): only a body that names one goes moto's way.
            or (
                not _signed_access_key(environ.get("HTTP_AUTHORIZATION", ""))
                and b"AWSAccessKeyId" in _read_body(environ)
            )
            or recorder_enabled()
            # moto authenticates calls once INITIAL_NO_AUTH_ACTION_COUNT is set (infinite by default).
            or math.inf != settings.INITIAL_NO_AUTH_ACTION_COUNT
        ):
            return None
        operation = target[len(TARGET_PREFIX) :]
        from sam_local_cloud.moto_seam.services import camelcase_to_underscores, core_utils

        if camelcase_to_underscores(operation) not in core_utils.method_names_from_class(self._handler_class):
            return None
        return operation

    # ------------------------------------------------------------------ answering
    def _answer(self, environ: dict[str, Any], operation: str) -> tuple[int, list[tuple[str, str]], bytes]:
        from botocore.exceptions import ClientError

        try:
            status, headers, content = self._handler(environ, operation).call_action()
        except ClientError as error:  # what moto's convert_to_flask_response answers for one
            status, headers, content = 400, {}, error.response["Error"]["Message"]
        body = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        rendered = [(name, str(value)) for name, value in headers.items()]
        if not any(name.lower() == "content-type" for name, _ in rendered):
            rendered.append(("Content-Type", FLASK_DEFAULT_CONTENT_TYPE))
        rendered.append(("Content-Length", str(len(body))))
        if self._cors:
            # flask-cors on moto's app (all origins, always sent) answers a request without Origin so.
            rendered.append(("Access-Control-Allow-Origin", "*"))
        return int(status), rendered, body

    def _handler(self, environ: dict[str, Any], operation: str) -> Any:
        """A DynamoHandler set up as `BaseResponse.setup_class` sets it up for this request.

        Not set: `normalized_request` and `form_data`, which a DynamoDB call with an X-Amz-Target never
        reads (moto reads the first only to route a call without a target, the second for S3 forms).
        """
        from sam_local_cloud.moto_seam.services import (
            EnvironHeaders,
            get_partition,
            mark_account_as_visited,
        )

        raw_body = _read_body(environ)
        headers = EnvironHeaders(environ)
        full_url = self._url_of(environ)
        handler = self._handler_class()
        # moto's server marks every request it receives; Werkzeug's server then sends the Date header.
        handler.is_werkzeug_request = True
        handler.uri = full_url
        handler.parsed_url = urlparse(full_url)
        handler.path = "/"
        handler.raw_path = "/"
        handler.method = "POST"
        handler.headers = headers
        handler.raw_body = raw_body
        handler.body = raw_body.decode("utf-8")
        # moto fills these from a form parse of the JSON body; only IAM authentication (passed on) and an
        # unsigned request's access key (passed on) read them.
        handler.querystring = {}
        handler.data = {}
        handler.uri_match = {}
        handler.region = handler.get_region_from_url(types.SimpleNamespace(headers=headers), full_url)
        handler.partition = get_partition(handler.region)
        handler.response_headers = {"server": "amazon.com"}
        handler.params = self._parser(operation).parse({"body": raw_body})
        handler.access_key = handler.get_access_key()
        handler.current_account = handler.get_current_account()
        mark_account_as_visited(
            account_id=handler.current_account,
            access_key=handler.access_key,
            service="dynamodb",
            region=handler.region,
        )
        return handler

    def _url_of(self, environ: dict[str, Any]) -> str:
        """The URL moto's Request reports (`raw_url`), worked out once per host a client calls."""
        key = tuple(environ.get(name) for name in _URL_ENVIRON_KEYS)
        url = self._urls.get(key)
        if url is None:
            from sam_local_cloud.moto_seam.services import Request

            url = Request(environ).raw_url
            if len(self._urls) >= _URLS_REMEMBERED:
                self._urls.clear()
            self._urls[key] = url
        return url

    def _parser(self, operation: str) -> Any:
        """moto's request parser for one operation; it holds no per-request state, so one serves all."""
        parser = self._parsers.get(operation)
        if parser is None:
            from sam_local_cloud.moto_seam.services import (
                PROTOCOL_PARSERS,
                BaseResponse,
                get_service_model,
            )

            service_model = get_service_model("dynamodb")
            parser = PROTOCOL_PARSERS["json"](
                service_model.operation_model(operation), map_type=BaseResponse.PROTOCOL_PARSER_MAP_TYPE
            )
            with self._parsers_lock:
                self._parsers[operation] = parser
        return parser


def _read_body(environ: dict[str, Any]) -> bytes:
    import io

    length = int(environ.get("CONTENT_LENGTH") or 0)
    body: bytes = environ["wsgi.input"].read(length) if length > 0 else b""
    # moto's Request may still read the stream (its form parse does for some content types).
    environ["wsgi.input"] = io.BytesIO(body)
    return body


@functools.cache
def _access_key_pattern() -> Any:
    from sam_local_cloud.moto_seam.services import BaseResponse

    return BaseResponse.access_key_regex


def _signed_access_key(authorization: str) -> bool:
    return bool(authorization) and _access_key_pattern().search(authorization) is not None


# ---------------------------------------------------------------------- caches hooked into moto
def register_hooks() -> None:
    """The caches and shortcuts below, registered on moto's classes and modules (install_request_caches)."""
    from sam_local_cloud.moto_seam import dynamodb_shortcuts

    _register_method_names_cache()
    _register_update_expression_cache()
    dynamodb_shortcuts.register_hooks()
    _register_update_tree_copies()
    _register_condition_lexing_cache()
    _register_json_errors_without_xml()
    _register_attribute_alias_cache()
    _register_request_ids_in_one_draw()
    _register_action_name_cache()


def _register_method_names_cache() -> None:
    """moto lists a response class's methods with inspect.getmembers on every request; list them once.

    The list is kept per class and per the sizes of the namespaces in its MRO, so a method added to (or
    removed from) a class later is seen.
    """
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import core_responses, core_utils

    names_by_class: dict[tuple[Any, ...], list[str]] = {}

    def method_names_from_class(proceed: Callable[[object], list[str]], clazz: object) -> list[str]:
        mro = getattr(clazz, "__mro__", None)
        if mro is None:
            return proceed(clazz)
        key = (clazz, *(len(vars(cls)) for cls in mro))
        names = names_by_class.get(key)
        if names is None:
            names = names_by_class[key] = proceed(clazz)
        return list(names)

    # moto's responses module imported the function by name: both names are hooked, with one cache.
    for module in (core_utils, core_responses):
        hooks.around(module, "method_names_from_class", concern="dynamodb")(method_names_from_class)


def _register_update_expression_cache() -> None:
    """Parse each distinct UpdateExpression text once.

    `UpdateExpressionParser.make` depends on the text alone (names and values stay placeholders in the
    tree), every reader of the tree only searches it (`find_clauses`), and the one that resolves names
    and values into it, `UpdateExpressionValidator`, deep-copies it first. An invalid expression raises
    every time (exceptions are not cached).
    """
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import UpdateExpressionParser

    @functools.lru_cache(maxsize=_EXPRESSIONS_CACHED)
    def parse_once(parse: Callable[[Any, str], Any], expression: str) -> Any:
        return parse(UpdateExpressionParser, expression)

    @hooks.around(UpdateExpressionParser, "make", concern="dynamodb")
    def make(proceed: Callable[[Any, str], Any], cls: Any, expression_str: str) -> Any:
        if cls is not UpdateExpressionParser or not isinstance(expression_str, str):
            return proceed(cls, expression_str)
        # `proceed` is the same callable on every call, so it does not split the cache.
        return parse_once(proceed, expression_str)


def _register_condition_lexing_cache() -> None:
    """Tokenise each distinct condition, filter or key-condition expression text once.

    `ConditionExpressionParser._lex_condition_expression` reads nothing but the expression text; names and
    values are resolved by the steps after it, which run on every call as before. Each call gets new token
    nodes (and a new deque, which the parser consumes). A text that cannot be tokenised raises every time.
    """
    from collections import deque

    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import ConditionExpressionParser

    @functools.lru_cache(maxsize=_EXPRESSIONS_CACHED)
    def tokens_of(lex: Callable[[Any], Any], expression: str) -> tuple[Any, ...]:
        return tuple(lex(ConditionExpressionParser(expression, None, None)))

    @hooks.around(ConditionExpressionParser, "_lex_condition_expression", concern="dynamodb")
    def lex_once(proceed: Callable[[Any], Any], self: Any) -> Any:
        if type(self) is not ConditionExpressionParser or not isinstance(self.condition_expression, str):
            return proceed(self)
        return deque(token._replace(children=[]) for token in tokens_of(proceed, self.condition_expression))


def _register_json_errors_without_xml() -> None:
    """A JSON protocol error renders its JSON body only.

    moto's ``JsonRESTError`` first renders the XML body of its base class with xmltodict, then replaces it
    with the JSON one. A refused condition is an everyday answer (most conditional writes under a race
    end in one), and the XML took about 0.17 ms of CPU per error, 9 % of a data plane request.
    """
    from werkzeug.exceptions import HTTPException

    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import JsonRESTError

    def json_only(self: Any, error_type: str, message: str, _: str = "", **__: Any) -> None:
        HTTPException.__init__(self)
        self.error_type = error_type
        self.message = message
        self.description = json.dumps({"__type": error_type, "message": message})
        self.content_type = "application/json"

    hooks.replace(JsonRESTError, "__init__", json_only, concern="dynamodb")


def _register_attribute_alias_cache() -> None:
    """moto's response serializer finds each output member's value by trying a list of aliases; list them
    once per kind of object and member.

    ``AttributePicker.get_possible_keys`` asks every alias provider anew for every member of every response
    (a third of a DynamoDB response's serialization). Its answer depends on the picker's class, the
    object's class (its ``Meta.serialization_aliases``), the member's name, its shape's serialization name
    and its parent structure (name and members), all within one service. An object whose aliases are its
    own (``Meta`` set on the instance) is asked every time, as before.
    """
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import MISSING, AttributePicker, core_utils

    aliases: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def pick(proceed: Callable[[Any, Any], Any], self: Any, context: Any) -> Any:
        obj, shape = context.obj, context.shape
        if shape is None or "Meta" in getattr(obj, "__dict__", ()):
            return proceed(self, context)
        parent = getattr(shape, "parent", None)
        key = (
            type(self),
            type(obj),
            context.key,
            context.service_model.service_name,
            shape.name,
            shape.serialization.get("name"),
            parent.name if parent is not None else None,
        )
        names = aliases.get(key)
        if names is None:
            names = aliases[key] = tuple(self.get_possible_keys(context))
        value = None
        for name in names:
            found = core_utils.get_value(obj, name, MISSING)
            if found is not MISSING:
                value = found
                break
        if self.response_transformers:
            key_path = f"{context.key_path}.{context.key}"
            for transform_path, transform in self.response_transformers.items():
                if key_path.endswith(transform_path):
                    return transform(value)
        return value

    hooks.around(AttributePicker, "__call__", concern="dynamodb")(pick)


def _register_request_ids_in_one_draw() -> None:
    """A response's request ID drawn with one call of moto's seeded random, not one call per character.

    moto draws the 52 characters of ``x-amzn-requestid`` with 52 calls of ``random.choice``: 0.07 ms of
    every response. ``random.choices`` draws them from the same alphabet and the same seeded generator.
    """
    import string

    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import core_responses, mock_random

    alphabet = string.ascii_letters + string.digits

    def request_id(headerdict: dict[str, Any] | None = None) -> str:
        drawn = "".join(mock_random.choices(alphabet, k=52))
        if isinstance(headerdict, dict):
            headerdict["x-amzn-requestid"] = drawn
        return drawn

    hooks.replace(core_responses, "gen_amzn_requestid_long", request_id, concern="dynamodb")


def _register_action_name_cache() -> None:
    """moto turns a request's action (``UpdateItem``) into its method's name (``update_item``) character by
    character, twice per request: 3 % of the data plane's CPU. The name depends on the action alone."""
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import core_responses

    cached = functools.lru_cache(maxsize=1024)(core_responses.camelcase_to_underscores)
    hooks.replace(core_responses, "camelcase_to_underscores", cached, concern="dynamodb")


def _register_update_tree_copies() -> None:
    """The validator's copy of a parsed UpdateExpression made node by node instead of by ``copy.deepcopy``.

    moto's ``Validator`` deep-copies the parsed tree before its processors rewrite it (the tree is the
    parse cache's, shared by every request with that text). ``deepcopy`` reduces and rebuilds each node
    through its generic protocol: 40% of the validator's time, the largest part of a conditional
    UpdateItem. A node holds its type name, its children and its parent; the copy keeps that shape, each
    copied child pointing to its copied parent, and deep-copies any other value (a DynamoType leaf). A
    subtree (a node with a parent) is copied by ``deepcopy`` as before, since that copies its ancestors too.
    """
    import copy

    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import UpdateNode, update_validators

    unchanged = (str, int, float, bool, type(None))

    def copy_value(value: Any, memo: dict[int, Any]) -> Any:
        return value if type(value) in unchanged else copy.deepcopy(value, memo)

    def copy_node(node: Any, parent: Any, memo: dict[int, Any]) -> Any:
        copied = object.__new__(type(node))
        for name, value in vars(node).items():
            if name == "parent":
                copied.parent = parent
            elif name == "children" and type(value) is list:
                copied.children = [
                    copy_node(child, copied, memo)
                    if isinstance(child, UpdateNode)
                    else copy_value(child, memo)
                    for child in value
                ]
            else:
                setattr(copied, name, copy_value(value, memo))
        return copied

    def tree_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, UpdateNode) and getattr(value, "parent", None) is None:
            return copy_node(value, None, {} if memo is None else memo)
        return copy.deepcopy(value, memo)

    hooks.replace(update_validators, "deepcopy", tree_copy, concern="dynamodb")
