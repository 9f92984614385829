"""Velocity's values: a reference with no value, how a value is written out, what is true, and the Java
methods templates call on maps, lists and strings."""

from __future__ import annotations

import re
from collections.abc import Callable


class TemplateSyntaxError(ValueError):
    """The template uses something outside the supported part of VTL, or is malformed."""


class _Undefined:
    """A reference with no value."""


UNDEFINED = _Undefined()


def to_text(value: object) -> str:
    """A value as Velocity writes it: strings as they are, maps and lists as Java's toString."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={to_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(to_text(item) for item in value) + "]"
    return str(value)


def as_text(value: object) -> str:
    return value if isinstance(value, str) else to_text(value)


def truthy(value: object) -> bool:
    """Velocity: null and false are false; everything else (empty strings too) is true."""
    return value is not UNDEFINED and value is not None and value is not False


def member_of(target: object, name: str) -> object:
    if isinstance(target, dict):
        return target.get(name, UNDEFINED)
    if target is UNDEFINED or target is None:
        return UNDEFINED
    value = getattr(target, name, UNDEFINED)
    return UNDEFINED if callable(value) else value


def item_at(target: object, index: object) -> object:
    if isinstance(target, list) and isinstance(index, int) and -len(target) <= index < len(target):
        return target[index]
    if isinstance(target, dict):
        return target.get(index, UNDEFINED)
    return UNDEFINED


def _replace_all(text: str, pattern: str, replacement: str) -> str:
    """Java's String.replaceAll: a regular expression, ``$n`` for its groups in the replacement."""
    python_replacement = re.sub(r"\$(\d)", r"\\\1", replacement.replace("\\", "\\\\"))
    return re.sub(pattern, python_replacement, text)


def _append(items: list[object], item: object) -> bool:
    items.append(item)
    return True


def java_method(target: object, name: str) -> Callable[..., object] | None:
    """The Java methods templates call on maps, lists and strings, and the gateway objects' own."""
    if target is UNDEFINED or target is None:
        return None
    if isinstance(target, dict):
        java: dict[str, Callable[..., object]] = {
            "get": lambda key: target.get(key, UNDEFINED),
            "containsKey": lambda key: key in target,
            "keySet": lambda: list(target.keys()),
            "size": lambda: len(target),
            "isEmpty": lambda: not target,
            "put": lambda key, value: target.__setitem__(key, value),
        }
        return java.get(name)
    if isinstance(target, list):
        java_list: dict[str, Callable[..., object]] = {
            "get": lambda index: item_at(target, index),
            "size": lambda: len(target),
            "isEmpty": lambda: not target,
            "add": lambda item: _append(target, item),
        }
        return java_list.get(name)
    if isinstance(target, str):
        java_string: dict[str, Callable[..., object]] = {
            "length": lambda: len(target),
            "isEmpty": lambda: not target,
            "toLowerCase": target.lower,
            "toUpperCase": target.upper,
            "trim": target.strip,
            "contains": lambda part: as_text(part) in target,
            "startsWith": lambda part: target.startswith(as_text(part)),
            "endsWith": lambda part: target.endswith(as_text(part)),
            "replace": lambda old, new: target.replace(as_text(old), as_text(new)),
            "replaceAll": lambda pattern, new: _replace_all(target, as_text(pattern), as_text(new)),
            "equals": lambda other: target == other,
        }
        return java_string.get(name)
    method = getattr(target, name, None)
    return method if callable(method) else None
