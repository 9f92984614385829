"""Powertools idempotency persistence layers a function builds on every call instead of once.

A persistence layer is meant to live as long as the execution environment (Powertools' examples build it
at module level). Each one registers a User-Agent hook on the boto3 client it is given, or creates a
client of its own: built inside a function that runs per invocation around the environment's shared
client, the hooks pile up, and every request of a warm environment runs one more of them per earlier
invocation. This project's own functions did that until 2026-12-07: an environment spent 4 ms of CPU on
an invocation when fresh and 43 ms after 4,000.

A layer built in module code runs once per environment; one built in a function decorated with a cache
(``functools.cache``, ``lru_cache``, ``cached_property``) once per its arguments. Any other function
enclosing the call is taken to run per invocation when the handler's code names it (the handler itself
counts as named): a helper no module of the handler's code mentions is not reported, and how often a
named one is called is not followed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from orderbatch.lint.handler_source import FunctionNode, HandlerProgram, call_name, handler_file
from orderbatch.lint.template_model import LambdaFunction

PERSISTENCE_LAYERS = frozenset(
    {"DynamoDBPersistenceLayer", "RedisCachePersistenceLayer", "CachePersistenceLayer"}
)
CACHING_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})


@dataclass(frozen=True)
class LayerBuiltPerCall:
    layer: str
    where: str  # file:line, relative to the code folder
    function: str  # the innermost function the call is in


def layers_built_per_call(function: LambdaFunction, template_path: Path | None) -> list[LayerBuiltPerCall]:
    """Where the function's handler code (its module and the local modules it imports) builds a
    persistence layer inside an uncached function; nothing when its source cannot be read."""
    located = handler_file(function, template_path)
    if isinstance(located, str):
        return []
    try:
        program = HandlerProgram.load(*located)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    handler = str(function.properties.get("Handler", "")).rpartition(".")[2]
    named = {handler} | {
        node.id if isinstance(node, ast.Name) else node.attr
        for module in program.modules
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Name | ast.Attribute)
    }
    found = []
    for module, call in program.calls():
        layer = call_name(call)
        if layer not in PERSISTENCE_LAYERS:
            continue
        enclosing = list(module.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        if not enclosing or any(_cached(node) for node in enclosing if isinstance(node, FunctionNode)):
            continue
        innermost = enclosing[0]
        name = innermost.name if isinstance(innermost, FunctionNode) else "<lambda>"
        if name != "<lambda>" and name not in named:
            continue
        found.append(LayerBuiltPerCall(layer, module.where(call, program.code_root), name))
    return found


def _cached(function: FunctionNode) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
        if name in CACHING_DECORATORS:
            return True
    return False
