"""The one place that changes moto's code: every hook into moto is registered here and installed once.

A concern (redrive, MockConfigFile, JSONata...) never assigns to a moto class or module. It registers:

- ``around(owner, name, concern=...)``: a listener ``listener(proceed, *args, **kwargs)`` that may act
  before and after moto's own code, or instead of it (by not calling ``proceed``);
- ``replace(owner, name, value, concern=...)``: a value put in place of moto's (a class, a constant, a
  descriptor), owned by one concern only;
- ``add(owner, name, value, concern=...)``: an attribute moto lacks (an API it does not implement). It
  fails if moto grows one of that name, so an upgrade that implements the API is noticed.

``install()`` then wraps each target exactly once. Where listeners of several concerns share one target,
their order is declared by the concern that depends on it, beside its own registrations:
``order(concern, outside=..., inside=...)``, as botocore's handlers state their place when they register.
A chain follows those declarations (and what follows from them), never the order modules happened to be
imported in; two concerns on one target with no declared order between them are refused at install. The
registry keeps moto's original of every target, which ``fingerprints`` compares against the pinned moto
release.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

HookKind = Literal["around", "replace", "add"]
# What a hook targets an attribute of: one of moto's classes or modules.
Owner = type | types.ModuleType
ListenerT = TypeVar("ListenerT", bound=Callable[..., object])


class HookError(RuntimeError):
    """A hook that cannot be registered or installed: the message names the target and the concern."""


@dataclass
class _Listener:
    concern: str
    kind: HookKind
    value: object


@dataclass
class Target:
    """One attribute of a moto class or module that the local cloud changes."""

    owner: Owner
    name: str
    listeners: list[_Listener] = field(default_factory=list)
    installed: bool = False
    # moto's own attribute, as found before anything was installed; absent for an ``add``.
    original: object = None

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
        # concern -> the concerns declared to run inside it (its listeners call theirs through ``proceed``)
        self._inside: dict[str, set[str]] = {}
        self._lock = threading.RLock()

    def order(self, concern: str, *, outside: Iterable[str] = (), inside: Iterable[str] = ()) -> None:
        """Declare that ``concern``'s listeners run outside those of ``outside`` and inside those of
        ``inside``, wherever they share a target."""
        _named(concern)
        pairs = [(concern, other) for other in outside] + [(other, concern) for other in inside]
        with self._lock:
            for outer, inner in pairs:
                _named(outer)
                _named(inner)
                if outer == inner or self._runs_outside(inner, outer):
                    raise HookError(
                        f"{outer} cannot run outside {inner}: {inner} is already declared outside it"
                    )
                self._inside.setdefault(outer, set()).add(inner)

    def _runs_outside(self, outer: str, inner: str) -> bool:
        """Whether ``outer`` runs outside ``inner`` by the declarations, directly or through others."""
        seen, pending = {outer}, [outer]
        while pending:
            for found in self._inside.get(pending.pop(), ()):
                if found == inner:
                    return True
                if found not in seen:
                    seen.add(found)
                    pending.append(found)
        return False

    def chain_order(self, target: Target) -> list[_Listener]:
        """The target's listeners outermost first; refused if two of them have no declared order."""
        arounds = [listener for listener in target.listeners if listener.kind == "around"]
        ordered: list[_Listener] = []
        for listener in arounds:
            place = len(ordered)
            for index, placed in enumerate(ordered):
                if self._runs_outside(listener.concern, placed.concern):
                    place = index
                    break
            ordered.insert(place, listener)
        for index, outer in enumerate(ordered):
            for inner in ordered[index + 1 :]:
                if not self._runs_outside(outer.concern, inner.concern):
                    raise HookError(
                        f"{target.path}: {outer.concern} and {inner.concern} both listen around it and no "
                        "order between them is declared (hooks.order)"
                    )
        return ordered + [listener for listener in target.listeners if listener.kind != "around"]

    def around(self, owner: Owner, name: str, *, concern: str) -> Callable[[ListenerT], ListenerT]:
        _named(concern)

        def register(listener: ListenerT) -> ListenerT:
            self._register(owner, name, _Listener(concern, "around", listener))
            return listener

        return register

    def replace(self, owner: Owner, name: str, value: object, *, concern: str) -> None:
        self._register(owner, name, _Listener(concern, "replace", value))

    def add(self, owner: Owner, name: str, value: object, *, concern: str) -> None:
        self._register(owner, name, _Listener(concern, "add", value))

    def install(self) -> list[Target]:
        """Wraps every registered target not yet installed, once each; returns the targets installed now."""
        with self._lock:
            pending = [target for target in self._targets.values() if not target.installed]
            # Base classes first: a hook on a subclass whose method is inherited wraps the base's method as
            # hooked (as inheritance would), whatever order the concerns registered in.
            pending.sort(key=_class_depth)
            for target in pending:
                _install(target, self._motos_own(target), self.chain_order(target))
            return pending

    def targets(self) -> list[Target]:
        """Every target registered in this process, installed or not."""
        with self._lock:
            return list(self._targets.values())

    def _motos_own(self, target: Target) -> object:
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

    def _register(self, owner: Owner, name: str, listener: _Listener) -> None:
        _named(listener.concern)
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


def _named(concern: str) -> None:
    if not (concern.isidentifier() and concern.islower()):
        raise HookError(f"{concern!r} is not a concern's name (a lowercase identifier, as ``redrive``)")


_registry = HookRegistry()


def around(owner: Owner, name: str, *, concern: str) -> Callable[[ListenerT], ListenerT]:
    """Decorator: ``listener(proceed, *args, **kwargs)`` runs whenever moto's ``owner.name`` is called."""
    return _registry.around(owner, name, concern=concern)


def replace(owner: Owner, name: str, value: object, *, concern: str) -> None:
    """Put ``value`` where moto has ``owner.name`` (a class, a constant, a descriptor)."""
    _registry.replace(owner, name, value, concern=concern)


def add(owner: Owner, name: str, value: object, *, concern: str) -> None:
    """Give moto's ``owner`` an attribute it lacks (an API moto does not implement)."""
    _registry.add(owner, name, value, concern=concern)


def order(concern: str, *, outside: Iterable[str] = (), inside: Iterable[str] = ()) -> None:
    """Declare where ``concern``'s listeners run on a target they share: outside ``outside``'s, inside
    ``inside``'s. Declared by the concern whose behaviour depends on it, with the reason beside it."""
    _registry.order(concern, outside=outside, inside=inside)


def install() -> list[Target]:
    """Installs every hook registered so far in this process (each target once)."""
    return _registry.install()


def targets() -> list[Target]:
    return _registry.targets()


def _install(target: Target, motos_own: object, listeners: list[_Listener]) -> None:
    owner, name = target.owner, target.name
    raw = _raw_attribute(owner, name)
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


def _raw_attribute(owner: Owner, name: str) -> object:
    """The attribute as the owner (or the first class of its MRO that has it) stores it: descriptors kept."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return _MISSING
    return getattr(owner, name, _MISSING)


def _chained(innermost: object, arounds: list[_Listener]) -> object:
    """One callable for the whole chain, with the descriptor kind (static, class method) of moto's own."""
    if isinstance(innermost, staticmethod):
        return staticmethod(_chain(innermost.__func__, arounds))
    if isinstance(innermost, classmethod):
        inner = innermost.__func__
        return classmethod(_chain(inner, arounds))
    if not callable(innermost):
        raise HookError(f"{innermost!r} is not callable, so it cannot be listened around")
    return _chain(innermost, arounds)


def _chain(innermost: Callable[..., object], arounds: list[_Listener]) -> Callable[..., object]:
    call = innermost
    for listener in reversed(arounds):
        if not callable(listener.value):
            raise HookError(f"{listener.concern}'s listener {listener.value!r} is not callable")
        call = _wrapped(listener.value, call)
    if inspect.isfunction(innermost):
        functools.update_wrapper(call, innermost)
    return call


def _wrapped(listener: Callable[..., object], proceed: Callable[..., object]) -> Callable[..., object]:
    def hooked(*args: object, **kwargs: object) -> object:
        return listener(proceed, *args, **kwargs)

    return hooked
