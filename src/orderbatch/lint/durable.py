"""What a Lambda durable function's handler source says about concurrency, chained invokes and retries.

The source is read with ``ast`` and never imported: the handler named by ``CodeUri`` + ``Handler`` (as
``sam build`` finds it) and the modules under ``CodeUri`` it imports. The analysis follows what is
reasonably static: a ``max_concurrency`` given as a literal, a local or module constant, a parameter fed
by its callers, ``os.environ``/``os.getenv``, or a settings model field whose ``Field(alias=...)`` names
an environment variable, which the template's ``Environment.Variables`` (with ``!Ref`` parameters) sets.
Whatever it cannot follow it reports as unresolved rather than guessing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from orderbatch.lint.handler_source import HandlerProgram, SourceModule, call_name, handler_file
from orderbatch.lint.template_model import LambdaFunction, TemplateModel, function_reference, resolve_int

DURABLE_SDK = "aws_durable_execution_sdk_python"
THROTTLE_ERROR_NAME = "TooManyRequestsException"
INVOKE_ERROR = "InvokeError"

# Where ``config`` sits among the positional arguments of DurableContext.map(inputs, func, name, config)
# and DurableContext.parallel(functions, name, config).
CONFIG_POSITION = {"map": 3, "parallel": 2}
CONFIG_CLASSES = {"map": "MapConfig", "parallel": "ParallelConfig"}
CONTEXT_NAMES = frozenset({"context", "ctx", "durable_context", "branch", "child_context"})

# Bounds on how far the analysis follows names through callers and imports.
MAX_RESOLUTION_DEPTH = 8


@dataclass(frozen=True)
class Concurrency:
    """A ``max_concurrency`` as far as the source and the template fix it."""

    value: int | None
    unbounded: bool
    origin: str
    """How the value was found, or why it was not, for messages."""
    parameter: str | None = None
    """The template parameter that sets it, through an environment variable."""

    @property
    def resolved(self) -> bool:
        return self.unbounded or self.value is not None


@dataclass(frozen=True)
class ConcurrentOperation:
    """One ``context.map`` or ``context.parallel`` call."""

    kind: str
    where: str
    concurrency: Concurrency


@dataclass(frozen=True)
class ChainedInvoke:
    """One ``context.invoke`` call and what, if anything, retries it."""

    where: str
    retry: str | None
    """How it is retried (a loop catching InvokeError), or None when nothing the analysis sees retries it."""
    retry_uncertain: str | None = None
    """Set when something may retry it but the analysis cannot tell whether throttling is retried."""


@dataclass(frozen=True)
class DurableFunction:
    """A function with ``DurableConfig`` and what its source shows."""

    function: LambdaFunction
    execution_timeout_seconds: int | None
    problem: str | None = None
    handler_file: Path | None = None
    operations: tuple[ConcurrentOperation, ...] = ()
    invokes: tuple[ChainedInvoke, ...] = ()
    invoked_functions: tuple[str, ...] = ()
    """Template functions named in its environment, the ones its chained invokes can reach."""

    @property
    def invokes_in_flight_per_branch(self) -> int:
        """A branch runs its code in order, so at most one of its chained invokes is in flight."""
        return 1 if self.invokes else 0

    @property
    def worst_case_concurrency(self) -> int | None:
        """The widest map/parallel's branches at once (1 without any); None when unbounded or unknown."""
        widest = 1
        for operation in self.operations:
            if operation.concurrency.value is None:
                return None
            widest = max(widest, operation.concurrency.value)
        return widest

    @property
    def worst_case_demand(self) -> int | None:
        """Concurrent invocations of one execution: its own invocation plus the chained invokes in flight."""
        widest = self.worst_case_concurrency
        if widest is None:
            return None
        return 1 + widest * self.invokes_in_flight_per_branch


def durable_functions(model: TemplateModel) -> list[DurableFunction]:
    return [analyze(function, model) for function in model.functions.values() if function.durable_config]


def analyze(function: LambdaFunction, model: TemplateModel) -> DurableFunction:
    config = function.durable_config or {}
    execution_timeout = resolve_int(config.get("ExecutionTimeout"), {}, function.parameters)
    invoked = tuple(
        sorted(
            {
                found
                for value in function.environment_variables.values()
                if (found := function_reference(value, {}, model.functions)) and found != function.logical_id
            }
        )
    )
    located = handler_file(function, model.template_path)
    if isinstance(located, str):
        return DurableFunction(function, execution_timeout, located, invoked_functions=invoked)
    source, code_root = located
    try:
        program = HandlerProgram.load(source, code_root)
    except (OSError, SyntaxError, UnicodeDecodeError) as error:
        return DurableFunction(
            function, execution_timeout, f"cannot read {source}: {error}", invoked_functions=invoked
        )
    resolver = _Resolver(program, function)
    operations = tuple(resolver.concurrent_operations())
    invokes = tuple(resolver.chained_invokes())
    return DurableFunction(function, execution_timeout, None, source, operations, invokes, invoked)


# --- reading the calls --------------------------------------------------------------------------


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if len(call.args) > position and not any(
        isinstance(arg, ast.Starred) for arg in call.args[: position + 1]
    ):
        return call.args[position]
    return None


def _catches(handler: ast.ExceptHandler, names: set[str]) -> bool:
    caught = handler.type
    items = caught.elts if isinstance(caught, ast.Tuple) else [caught] if caught is not None else []
    for item in items:
        name = item.id if isinstance(item, ast.Name) else item.attr if isinstance(item, ast.Attribute) else ""
        if name in names:
            return True
    return False


class _Resolver:
    def __init__(self, program: HandlerProgram, function: LambdaFunction) -> None:
        self.program = program
        self.function = function

    # map and parallel

    def concurrent_operations(self) -> Iterator[ConcurrentOperation]:
        for module, call in self.program.calls():
            if not isinstance(call.func, ast.Attribute) or call.func.attr not in CONFIG_POSITION:
                continue
            kind = call.func.attr
            config = _argument(call, CONFIG_POSITION[kind], "config")
            if DURABLE_SDK not in module.packages or not (
                self._is_config_call(config, kind) or self._is_context(module, call.func.value)
            ):
                continue
            concurrency = self._config_concurrency(module, call, config, kind)
            yield ConcurrentOperation(kind, module.where(call, self.program.code_root), concurrency)

    def _is_config_call(self, node: ast.expr | None, kind: str) -> bool:
        return isinstance(node, ast.Call) and call_name(node) == CONFIG_CLASSES[kind]

    def _is_context(self, module: SourceModule, receiver: ast.expr) -> bool:
        if not isinstance(receiver, ast.Name):
            return False
        if receiver.id in CONTEXT_NAMES:
            return True
        function = module.enclosing_function(receiver)
        if function is None:
            return False
        for argument in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs):
            if argument.arg == receiver.id and argument.annotation is not None:
                return "DurableContext" in ast.unparse(argument.annotation)
        return False

    def _config_concurrency(
        self, module: SourceModule, call: ast.Call, config: ast.expr | None, kind: str
    ) -> Concurrency:
        if config is None or (isinstance(config, ast.Constant) and config.value is None):
            return Concurrency(None, True, f"no {CONFIG_CLASSES[kind]}, so max_concurrency is unset")
        if isinstance(config, ast.Name):
            assigned = self._local_assignment(module, config, config.id)
            if assigned is not None:
                config = assigned
        if not self._is_config_call(config, kind):
            return Concurrency(
                None, False, f"config {ast.unparse(config)} is not a {CONFIG_CLASSES[kind]}(...)"
            )
        assert isinstance(config, ast.Call)
        value = _argument(config, 10_000, "max_concurrency")
        if value is None:
            return Concurrency(None, True, f"{CONFIG_CLASSES[kind]} without max_concurrency")
        resolved = self.resolve(module, value, 0)
        if resolved.value is not None and resolved.value <= 0:
            # The SDK's executor runs ``max_concurrency or len(branches)`` at once: 0 is no bound at all.
            return Concurrency(None, True, f"max_concurrency {resolved.value} ({resolved.origin})")
        return resolved

    # value resolution

    def resolve(self, module: SourceModule, node: ast.expr, depth: int) -> Concurrency:
        text = ast.unparse(node)
        if depth > MAX_RESOLUTION_DEPTH:
            return Concurrency(None, False, f"{text} is passed through too many calls to follow")
        if isinstance(node, ast.Constant):
            if node.value is None:
                return Concurrency(None, True, "max_concurrency=None")
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                return Concurrency(node.value, False, f"the literal {node.value}")
            return Concurrency(None, False, f"{text} is not an integer")
        if isinstance(node, ast.Call) and call_name(node) in ("int", "float") and len(node.args) == 1:
            return self.resolve(module, node.args[0], depth + 1)
        environment = self._environment_read(node)
        if environment is not None:
            name, default = environment
            return self._from_environment(module, name, default, depth)
        if isinstance(node, ast.Name):
            return self._resolve_name(module, node, depth)
        if isinstance(node, ast.Attribute):
            return self._resolve_field(module, node, depth)
        return Concurrency(None, False, f"{text} is computed at run time")

    def _environment_read(self, node: ast.expr) -> tuple[str, ast.expr | None] | None:
        """``os.environ["X"]``, ``os.environ.get("X", d)`` or ``os.getenv("X", d)``: the name and default."""
        if (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value).endswith("environ")
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            return node.slice.value, None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            callee = ast.unparse(node.func)
            if callee.endswith(("environ.get", "getenv")) and isinstance(node.args[0].value, str):
                return node.args[0].value, node.args[1] if len(node.args) > 1 else None
        return None

    def _from_environment(
        self, module: SourceModule, name: str, default: ast.expr | None, depth: int
    ) -> Concurrency:
        variables = self.function.environment_variables
        if name in variables:
            value = variables[name]
            resolved = resolve_int(value, {}, self.function.parameters)
            shown = _template_value(value)
            if resolved is None:
                return Concurrency(
                    None, False, f"environment variable {name} is {shown}, which the template does not fix"
                )
            parameter = value.get("Ref") if isinstance(value, Mapping) and set(value) == {"Ref"} else None
            return Concurrency(
                resolved,
                False,
                f"environment variable {name} = {shown} = {resolved}",
                parameter if isinstance(parameter, str) else None,
            )
        if default is not None:
            from_default = self.resolve(module, default, depth + 1)
            return Concurrency(
                from_default.value,
                from_default.unbounded,
                f"environment variable {name}, unset in the template, defaults to {from_default.origin}",
            )
        return Concurrency(None, False, f"environment variable {name} is not set in the template")

    def _resolve_name(self, module: SourceModule, node: ast.Name, depth: int) -> Concurrency:
        assigned = self._local_assignment(module, node, node.id)
        if assigned is not None:
            return self.resolve(module, assigned, depth + 1)
        function = module.enclosing_function(node)
        if function is not None:
            parameters = [*function.args.posonlyargs, *function.args.args]
            names = [argument.arg for argument in parameters]
            if node.id in names:
                return self._from_callers(function, names.index(node.id), node.id, depth)
        for statement in module.tree.body:
            if isinstance(statement, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == node.id for target in statement.targets
            ):
                return self.resolve(module, statement.value, depth + 1)
        return Concurrency(None, False, f"{node.id} is not a value the analysis can follow")

    def _from_callers(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, position: int, parameter: str, depth: int
    ) -> Concurrency:
        found: list[Concurrency] = []
        for module, call in self.program.calls():
            if call_name(call) != function.name:
                continue
            argument = _argument(call, position, parameter)
            if argument is not None:
                found.append(self.resolve(module, argument, depth + 1))
        if not found:
            return Concurrency(None, False, f"no call of {function.name}() passes {parameter}")
        values = {(item.value, item.unbounded) for item in found}
        if len(values) > 1:
            return Concurrency(
                None, False, f"the calls of {function.name}() pass different {parameter} values"
            )
        return found[0]

    def _resolve_field(self, module: SourceModule, node: ast.Attribute, depth: int) -> Concurrency:
        for statement in self.program.class_fields(node.attr):
            value = statement.value
            if isinstance(value, ast.Call) and call_name(value) == "Field":
                alias = next((item.value for item in value.keywords if item.arg == "alias"), None)
                default = next((item.value for item in value.keywords if item.arg == "default"), None)
                if isinstance(alias, ast.Constant) and isinstance(alias.value, str):
                    return self._from_environment(module, alias.value, default, depth)
            return Concurrency(
                None, False, f"field {node.attr} is not tied to an environment variable by alias"
            )
        return Concurrency(None, False, f"{ast.unparse(node)} is not a value the analysis can follow")

    def _local_assignment(self, module: SourceModule, node: ast.AST, name: str) -> ast.expr | None:
        """The last plain ``name = value`` before ``node`` in the same function."""
        function = module.enclosing_function(node)
        if function is None:
            return None
        latest: ast.expr | None = None
        for statement in ast.walk(function):
            if (
                isinstance(statement, ast.Assign)
                and statement.lineno < getattr(node, "lineno", 0)
                and any(isinstance(target, ast.Name) and target.id == name for target in statement.targets)
            ):
                latest = statement.value
        return latest

    # chained invokes

    def chained_invokes(self) -> Iterator[ChainedInvoke]:
        mentions_throttle = self.program.mentions(THROTTLE_ERROR_NAME)
        for module, call in self.program.calls():
            if (
                DURABLE_SDK not in module.packages
                or not isinstance(call.func, ast.Attribute)
                or call.func.attr != "invoke"
                or any(item.arg == "FunctionName" for item in call.keywords)  # boto3's Lambda client
            ):
                continue
            where = module.where(call, self.program.code_root)
            retry = self._retry_around(module, call, depth=0)
            if retry is None:
                yield ChainedInvoke(where, None)
            elif retry[1] and not mentions_throttle:
                yield ChainedInvoke(
                    where,
                    retry[0],
                    f"{retry[0]} catches every error, and the source never names {THROTTLE_ERROR_NAME}",
                )
            else:
                yield ChainedInvoke(where, retry[0])

    def _retry_around(self, module: SourceModule, node: ast.AST, depth: int) -> tuple[str, bool] | None:
        """How the call at ``node`` is retried: a loop around a ``try`` catching InvokeError here or in a
        caller. The flag says the handler is a broad ``Exception`` rather than InvokeError."""
        for statement in module.enclosing(node, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                break
            assert isinstance(statement, ast.Try)
            if not any(_contains(body, node) for body in statement.body):
                continue
            for handler in statement.handlers:
                broad = _catches(handler, {"Exception", "BaseException"}) or handler.type is None
                if not (_catches(handler, {INVOKE_ERROR}) or broad):
                    continue
                loop = next(
                    module.enclosing(statement, (ast.While, ast.For, ast.FunctionDef, ast.AsyncFunctionDef)),
                    None,
                )
                if isinstance(loop, ast.While | ast.For) and not _leaves_the_loop(handler):
                    where = module.where(loop, self.program.code_root)
                    caught = ast.unparse(handler.type) if handler.type else "every exception"
                    return f"the loop at {where} catching {caught}", broad
        if depth >= MAX_RESOLUTION_DEPTH:
            return None
        function = module.enclosing_function(node)
        if function is None:
            return None
        callers = [
            (caller_module, call)
            for caller_module, call in self.program.calls()
            if call_name(call) == function.name and call is not node
        ]
        if not callers:
            return None
        retries = [self._retry_around(caller_module, call, depth + 1) for caller_module, call in callers]
        if any(retry is None for retry in retries):
            return None
        first = retries[0]
        assert first is not None
        return first


def _contains(root: ast.AST, node: ast.AST) -> bool:
    return any(child is node for child in ast.walk(root))


def _leaves_the_loop(handler: ast.ExceptHandler) -> bool:
    """A handler that always ends in ``raise``, ``return`` or ``break`` catches the error but never
    tries again; one that can fall through (or ``continue``) lets its loop retry."""
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise | ast.Return | ast.Break)


def _template_value(value: object) -> str:
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        return f"!Ref {value['Ref']}"
    return repr(value)
