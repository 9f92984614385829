"""The one place that changes moto's code: every hook into moto is registered here and installed once.

A concern (redrive, MockConfigFile, JSONata...) never assigns to a moto class or module. It registers:

- ``around(owner, name, concern=...)``: a listener ``listener(proceed, *args, **kwargs)`` that may act
  before and after moto's own code, or instead of it (by not calling ``proceed``);
- ``replace(owner, name, value, concern=...)``: a value put in place of moto's (a class, a constant, a
  descriptor), owned by one concern only;
- ``add(owner, name, value, concern=...)``: an attribute moto lacks (an API it does not implement). It
  fails if moto grows one of that name, so an upgrade that implements the API is noticed.

``install()`` then wraps each target exactly once. Several listeners on one target are chained in the
order of ``CONCERNS`` (outermost first), never in the order modules happened to be imported. The
registry keeps moto's original of every target, which ``fingerprints`` compares against the pinned
moto release.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# Outermost first: a listener of an earlier concern sees the call before, and its result after, a later
# one. Where two concerns hook one target, the reason for their order is given beside them.
CONCERNS: tuple[str, ...] = (
    "worker_threads",
    "shared_inputs",
    "sync_tracking",
    "task_tokens",
    "activities",
    "api_gateway_tasks",
    "service_errors",
    "preprocessor_scopes",
    "assign_literals",
    "intrinsics",
    "jsonpath",
    "service_tasks",
    "wait_state",
    "context_object",
    "test_state",
    # MockConfigFile's StartExecution strips a test case's name off the ARN before EXPRESS's sees it.
    "mock_config",
    "express",
    "redrive",
    "jsonata",
    "lambda_tasks",
    "executions",
    "histories",
    "history_pages",
    "distributed_map",
    "map_state",
    "task_clients",
    "definitions",
    "definition_support",
    # The parse itself (a replacement, so innermost): definition_support prepares the text it reads.
    "parse_trees",
    "errors",
    "error_names",
    # Services other than Step Functions.
    "dynamodb",
    "event_targets",
    "cloudwatch",
    "model_registry",
    "conformance",
)

HookKind = Literal["around", "replace", "add"]


class HookError(RuntimeError):
    """A hook that cannot be registered or installed: the message names the target and the concern."""


@dataclass
class _Listener:
    concern: str
    kind: HookKind
    value: Any


@dataclass
class Target:
    """One attribute of a moto class or module that the local cloud changes."""

    owner: Any
    name: str
    listeners: list[_Listener] = field(default_factory=list)
    installed: bool = False
    # moto's own attribute, as found before anything was installed; absent for an ``add``.
    original: Any = None

    @property
    def path(self) -> str:
        """The dotted name the fingerprints use: ``module.Class.attribute`` or ``module.attribute``."""
        if isinstance(self.owner, types.ModuleType):
            return f"{self.owner.__name__}.{self.name}"
        return f"{self.owner.__module__}.{self.owner.__qualname__}.{self.name}"

    @property
    def concerns(self) -> list[str]:
        return [listener.concern for listener in self.listeners]


class HookRegistry:
    """Targets and their listeners; the engine uses the one module-level registry (``around`` etc.)."""

    def __init__(self) -> None:
        self._targets: dict[tuple[int, str], Target] = {}
        self._lock = threading.RLock()

    def around(
        self, owner: Any, name: str, *, concern: str
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        _known(concern)

        def register(listener: Callable[..., Any]) -> Callable[..., Any]:
            self._register(owner, name, _Listener(concern, "around", listener))
            return listener

        return register

    def replace(self, owner: Any, name: str, value: Any, *, concern: str) -> None:
        self._register(owner, name, _Listener(concern, "replace", value))

    def add(self, owner: Any, name: str, value: Any, *, concern: str) -> None:
        self._register(owner, name, _Listener(concern, "add", value))

    def install(self) -> list[Target]:
        """Wraps every registered target not yet installed, once each; returns the targets installed now."""
        with self._lock:
            pending = [target for target in self._targets.values() if not target.installed]
            # Base classes first: a hook on a subclass whose method is inherited wraps the base's method as
            # hooked (as inheritance would), whatever order the concerns registered in.
            pending.sort(key=_class_depth)
            for target in pending:
                _install(target, self._motos_own(target))
            return pending

    def targets(self) -> list[Target]:
        """Every target registered in this process, installed or not."""
        with self._lock:
            return list(self._targets.values())

    def _motos_own(self, target: Target) -> Any:
        """moto's own value; for an inherited method also hooked on its base, the base's original."""
        owner, name = target.owner, target.name
        if not isinstance(owner, type):
            return getattr(owner, name, _MISSING)
        for klass in owner.__mro__:
            if name in vars(klass):
                base_target = self._targets.get((id(klass), name))
                if base_target is not None and base_target is not target and base_target.installed:
                    return base_target.original
                return vars(klass)[name]
        return _MISSING

    def _register(self, owner: Any, name: str, listener: _Listener) -> None:
        _known(listener.concern)
        with self._lock:
            key = (id(owner), name)
            target = self._targets.get(key)
            if target is None:
                target = Target(owner, name)
                self._targets[key] = target
            if target.installed:
                raise HookError(f"{target.path} is already installed; {listener.concern} registered too late")
            if any(existing.concern == listener.concern for existing in target.listeners):
                raise HookError(f"{target.path}: {listener.concern} registered twice")
            owning = [existing for existing in target.listeners if existing.kind != "around"]
            if owning and listener.kind != "around":
                raise HookError(f"{target.path}: only one concern may replace or add it ({target.concerns})")
            kinds = {existing.kind for existing in target.listeners} | {listener.kind}
            if "add" in kinds and "around" in kinds:
                raise HookError(f"{target.path}: an added attribute has no moto code to listen around")
            target.listeners.append(listener)


def _class_depth(target: Target) -> int:
    return len(target.owner.__mro__) if isinstance(target.owner, type) else 0


def _known(concern: str) -> None:
    if concern not in CONCERNS:
        raise HookError(f"{concern!r} is not a concern in moto_seam.hooks.CONCERNS")


_registry = HookRegistry()


def around(owner: Any, name: str, *, concern: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``listener(proceed, *args, **kwargs)`` runs whenever moto's ``owner.name`` is called."""
    return _registry.around(owner, name, concern=concern)


def replace(owner: Any, name: str, value: Any, *, concern: str) -> None:
    """Put ``value`` where moto has ``owner.name`` (a class, a constant, a descriptor)."""
    _registry.replace(owner, name, value, concern=concern)


def add(owner: Any, name: str, value: Any, *, concern: str) -> None:
    """Give moto's ``owner`` an attribute it lacks (an API moto does not implement)."""
    _registry.add(owner, name, value, concern=concern)


def install() -> list[Target]:
    """Installs every hook registered so far in this process (each target once)."""
    return _registry.install()


def targets() -> list[Target]:
    return _registry.targets()


def _install(target: Target, motos_own: Any) -> None:
    owner, name = target.owner, target.name
    raw = _raw_attribute(owner, name)
    listeners = sorted(target.listeners, key=lambda listener: CONCERNS.index(listener.concern))
    base = next((listener for listener in listeners if listener.kind != "around"), None)
    if base is not None and base.kind == "add":
        if raw is not _MISSING:
            raise HookError(f"{target.path}: moto has it now; {base.concern} adds it, so check moto's own")
        setattr(owner, name, base.value)
        target.installed = True
        return
    if raw is _MISSING:
        raise HookError(f"{target.path}: moto has no such attribute ({', '.join(target.concerns)} hook it)")
    target.original = motos_own
    innermost = base.value if base is not None else raw
    arounds = [listener for listener in listeners if listener.kind == "around"]
    setattr(owner, name, _chained(innermost, arounds) if arounds else innermost)
    target.installed = True


_MISSING = object()


def _raw_attribute(owner: Any, name: str) -> Any:
    """The attribute as the owner (or the first class of its MRO that has it) stores it: descriptors kept."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return _MISSING
    return getattr(owner, name, _MISSING)


def _chained(innermost: Any, arounds: list[_Listener]) -> Any:
    """One callable for the whole chain, with the descriptor kind (static, class method) of moto's own."""
    if isinstance(innermost, staticmethod):
        return staticmethod(_chain(innermost.__func__, arounds))
    if isinstance(innermost, classmethod):
        inner = innermost.__func__
        return classmethod(_chain(inner, arounds))
    if not callable(innermost):
        raise HookError(f"{innermost!r} is not callable, so it cannot be listened around")
    return _chain(innermost, arounds)


def _chain(innermost: Callable[..., Any], arounds: list[_Listener]) -> Callable[..., Any]:
    call = innermost
    for listener in reversed(arounds):
        call = _wrapped(listener.value, call)
    if inspect.isfunction(innermost):
        functools.update_wrapper(call, innermost)
    return call


def _wrapped(listener: Callable[..., Any], proceed: Callable[..., Any]) -> Callable[..., Any]:
    def hooked(*args: Any, **kwargs: Any) -> Any:
        return listener(proceed, *args, **kwargs)

    return hooked
