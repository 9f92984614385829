"""What the engine takes from moto, fingerprinted against the pinned release.

Every hooked target (``hooks``) and every name the seam's export modules hand to the rest of the engine
is recorded in ``fingerprints.json`` with its signature and a hash of its source, under the moto
version they were read from. ``check()`` reads each recorded name afresh from the installed moto (by its
dotted path, without importing the engine, so it also works against a moto the engine no longer runs
on) and lists what is gone or changed. Run it after installing another moto:

    python -m sam_local_cloud.moto_seam.fingerprints          # exit 1 and the list if changed
    python -m sam_local_cloud.moto_seam.fingerprints --write  # record the installed moto's
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sam_local_cloud.moto_seam import hooks

RECORD_PATH = Path(__file__).with_name("fingerprints.json")
# The modules that hand moto's names to the rest of the engine; everything they export is recorded.
EXPORT_MODULES = (
    "sam_local_cloud.moto_seam.stepfunctions",
    "sam_local_cloud.moto_seam.services",
    "sam_local_cloud.moto_seam.testing",
)
# Each installs one group of hooks (idempotent); ``--write`` and the tests call them all.
ENGINE_INSTALLERS = ("sam_local_cloud.moto_seam.installers:install_everything",)


@dataclass(frozen=True)
class Fingerprint:
    kind: str
    signature: str
    source_sha256: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "signature": self.signature, "source_sha256": self.source_sha256}


@dataclass(frozen=True)
class Change:
    path: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def fingerprint(value: Any) -> Fingerprint:
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    if isinstance(value, types.ModuleType):
        return Fingerprint("module", "", "")
    if inspect.isclass(value):
        # A class's call signature is its __init__'s, which a hook may replace: the source says it all.
        return Fingerprint("class", "", _source_hash(value))
    if inspect.isfunction(value) or inspect.ismethod(value):
        return Fingerprint("function", _signature(value), _source_hash(value))
    if isinstance(value, property):
        getter = fingerprint(value.fget) if value.fget is not None else Fingerprint("", "", "")
        return Fingerprint("property", getter.signature, getter.source_sha256)
    return Fingerprint(f"value:{type(value).__name__}", "", "")


def _source_hash(value: Any) -> str:
    try:
        source = inspect.getsource(value)
    except (OSError, TypeError):
        source = ""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


_PLAIN_DEFAULTS = (type(None), bool, int, float, str, bytes)


def _signature(function: Any) -> str:
    """The parameters as written: names, kinds, annotations and plain defaults. A default that is an
    object (``sys.stdout``) is shown by its type, since its repr differs between processes."""
    try:
        signature = inspect.signature(function, follow_wrapped=False)
    except (TypeError, ValueError):
        return ""
    parameters = []
    for parameter in signature.parameters.values():
        default = parameter.default
        if default is not inspect.Parameter.empty and not isinstance(default, _PLAIN_DEFAULTS):
            parameter = parameter.replace(default=_Placeholder(type(default).__name__))
        parameters.append(parameter)
    return str(signature.replace(parameters=parameters))


class _Placeholder:
    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def moto_version() -> str:
    return importlib.metadata.version("moto")


def used_by_engine() -> dict[str, Fingerprint]:
    """Every moto name the engine hooks or imports through the seam, read from the installed moto."""
    for installer in ENGINE_INSTALLERS:
        module_name, function_name = installer.split(":")
        getattr(importlib.import_module(module_name), function_name)()
    used: dict[str, Fingerprint] = {}
    for target in hooks.targets():
        if target.original is not None:
            used[target.path] = fingerprint(target.original)
    for module_name in EXPORT_MODULES:
        module = importlib.import_module(module_name)
        for value in list(vars(module).values()):
            path = moto_path(value)
            if path is not None:
                used.setdefault(path, fingerprint(value))
    return dict(sorted(used.items()))


def moto_path(value: Any) -> str | None:
    """The dotted path of a moto class, function or module; None for anything not moto's."""
    if isinstance(value, types.ModuleType):
        return value.__name__ if value.__name__.split(".")[0] == "moto" else None
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not module or not qualname or module.split(".")[0] != "moto":
        return None
    return f"{module}.{qualname}"


def resolve(path: str) -> Any:
    """The object at a dotted path in the installed moto; raises LookupError naming what is missing."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            value: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            if missing.name is not None and module_name.startswith(missing.name):
                continue  # no such module: the path goes on inside a shorter one
            raise LookupError(f"{module_name} cannot be imported: {missing}") from missing
        except ImportError as broken:
            raise LookupError(f"{module_name} cannot be imported: {broken}") from broken
        for attribute in parts[split:]:
            if inspect.isclass(value) and attribute in vars(value):
                value = vars(value)[attribute]
            elif hasattr(value, attribute):
                value = getattr(value, attribute)
            else:
                raise LookupError(f"{module_name} has no {'.'.join(parts[split:])}")
        return value
    raise LookupError(f"no module {parts[0]}")


def recorded(record_path: Path = RECORD_PATH) -> tuple[str, dict[str, Fingerprint]]:
    data = json.loads(record_path.read_text())
    return data["moto"], {path: Fingerprint(**entry) for path, entry in data["targets"].items()}


def check(record_path: Path = RECORD_PATH) -> list[Change]:
    """What differs between the recorded fingerprints and the installed moto, one change per target."""
    _, expected = recorded(record_path)
    # In a process that installed the hooks, moto's attribute is the registry's wrapper: compare moto's own.
    originals = {target.path: target.original for target in hooks.targets() if target.original is not None}
    changes: list[Change] = []
    for path, was in expected.items():
        try:
            now = fingerprint(originals[path] if path in originals else resolve(path))
        except LookupError as missing:
            changes.append(Change(path, f"gone ({missing})"))
            continue
        if now.signature != was.signature:
            changes.append(Change(path, f"signature changed: {was.signature} -> {now.signature}"))
        elif now.source_sha256 != was.source_sha256:
            changes.append(Change(path, "source changed"))
        elif now.kind != was.kind:
            changes.append(Change(path, f"now a {now.kind}, was a {was.kind}"))
    return changes


def write() -> int:
    used = used_by_engine()
    payload = {"moto": moto_version(), "targets": {path: entry.as_json() for path, entry in used.items()}}
    RECORD_PATH.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return len(used)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="record the installed moto's fingerprints")
    arguments = parser.parse_args(argv)
    if arguments.write:
        count = write()
        print(f"recorded {count} moto targets of moto {moto_version()} in {RECORD_PATH}")
        return 0
    pinned, expected = recorded()
    changes = check()
    for change in changes:
        print(change)
    print(
        f"{len(changes)} of {len(expected)} hooked or imported moto targets changed "
        f"(recorded against moto {pinned}, installed {moto_version()})"
    )
    return 1 if changes else 0


if __name__ == "__main__":
    sys.exit(main())
