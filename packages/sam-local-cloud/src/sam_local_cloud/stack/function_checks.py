"""A function's runtime, code folder and handler, checked when the template is read, before anything runs.

The first two refuse what would otherwise half-deploy, naming the function; the handler is only looked at:

- ``Runtime``: a name outside Lambda's runtime enum is refused as CreateFunction's request validation
  refuses it ("Value 'x' at 'runtime' failed to satisfy constraint: Member must satisfy enum value set:
  [...]", the enum read from botocore's Lambda model). Known runtimes AWS no longer lets anyone create, and
  runtimes other than Python, stay the Lambda service's to answer (``lambda_service.runtimes``).
- ``CodeUri``: ``sam build`` resolves it against the template's folder and fails when the folder is
  missing, so a missing folder or .zip is refused here. ``sam build`` would package a folder anywhere on
  the disk; the local cloud runs it in place, so it refuses a relative path that climbs out of the project
  (the git work tree holding the template, or the template's folder when there is none): one ``../`` too
  many would otherwise run whatever sits there. A monorepo's ``../src`` inside the same work tree, and an
  absolute path (written on purpose), are accepted.
- ``Handler``: not refused for a missing module or function. AWS creates the function and only finds
  them missing at each invoke (``Runtime.ImportModuleError`` / ``Runtime.HandlerNotFound``), and so does
  the local cloud; a code folder filled by a build step, or a function deployed ahead of its code,
  deploys as it does on AWS. ``handler_problem`` says at deploy what the invokes will answer, for the
  log: a Python handler whose module is in neither the code folder nor a layer folder, or whose module
  binds no such name anywhere. A module it cannot read (a syntax of another Python, names made at run
  time, ``import *``) is taken as fine. A name without a dot deploys too (every invoke fails with
  ``Runtime.MalformedHandlerName``); only what CreateFunction itself refuses (whitespace, over 128
  characters, empty) stops the deploy.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sam_local_cloud.lambda_service.functions import HANDLER_PATTERN
from sam_local_cloud.lambda_service.layers import LayerSpec, python_layer_dirs
from sam_local_cloud.stack.model import TemplateError


@functools.cache
def lambda_runtimes() -> tuple[str, ...]:
    """The Runtime enum of Lambda's API model, in its order."""
    from sam_local_cloud import sdk_models

    model = sdk_models.service_model("lambda")
    runtime: Any = model.shape_for("Runtime")
    return tuple(runtime.enum)


def check_runtime(logical_id: str, runtime: str) -> None:
    known = lambda_runtimes()
    if runtime not in known:
        raise TemplateError(
            f"{logical_id}: Value '{runtime}' at 'runtime' failed to satisfy constraint: Member must satisfy "
            f"enum value set: [{', '.join(known)}]"
        )


def project_root(template_dir: Path) -> Path:
    """The git work tree holding the template, or the template's own folder outside any."""
    for folder in (template_dir, *template_dir.parents):
        if (folder / ".git").exists():
            return folder
    return template_dir


def check_code_location(
    logical_id: str, property_name: str, location: str, path: Path, template_dir: Path
) -> None:
    root = project_root(template_dir)
    # An absolute path is written on purpose (tests and tools point at shared code that way, and `sam build`
    # takes it); a relative one that climbs out of the project is the typo this guards against.
    if not Path(location).is_absolute() and not path.is_relative_to(root):
        raise TemplateError(
            f"{logical_id}: {property_name} {location!r} resolves to {path}, outside the project {root}; "
            "the local cloud runs a function's code in place, so it only runs code from inside the project "
            "(copy or `sam build` it there)"
        )
    if not path.exists():
        raise TemplateError(
            f"{logical_id}: {property_name} {location!r} does not exist (resolved against the template's "
            f"folder {template_dir}, as `sam build` resolves it: {path})"
        )


def handler_problem(
    logical_id: str, handler: str, runtime: str, code_dir: Path, layers: Iterable[LayerSpec]
) -> str | None:
    """What every invoke of this Python function will fail with, if its handler is not there; None when
    it is, or cannot be told by reading the code."""
    module_path, _, function_name = handler.rpartition(".")
    if not HANDLER_PATTERN.fullmatch(handler):
        # CloudFormation passes CreateFunction's refusal on; the function is never created.
        constraint = (
            "Member must have length less than or equal to 128"
            if len(handler) > 128
            else r"Member must satisfy regular expression pattern: [^\s]+"
        )
        raise TemplateError(
            f"{logical_id}: Value '{handler}' at 'handler' failed to satisfy constraint: {constraint}"
        )
    if not module_path or not function_name:
        return (
            f"{logical_id}: Handler {handler!r} is not <module>.<function>: every invoke will fail with "
            "Runtime.MalformedHandlerName, as on AWS"
        )
    search = [code_dir]
    for layer in layers:
        if not layer.content.is_dir():
            return None  # a zipped layer: its modules are the invoke's to find
        search.extend(python_layer_dirs(layer.content, runtime))
    relative = Path(*module_path.replace(".", "/").split("/"))
    source = _module_source(search, relative)
    if source is None:
        return (
            f"{logical_id}: Handler {handler!r}: no module {module_path!r} in {code_dir}"
            f"{' or its layers' if len(search) > 1 else ''}: every invoke will fail with "
            "Runtime.ImportModuleError, as on AWS"
        )
    names = _bound_names(source)
    if names is not None and function_name not in names:
        return (
            f"{logical_id}: Handler {handler!r}: {source} defines no {function_name!r}: every invoke will "
            "fail with Runtime.HandlerNotFound, as on AWS"
        )
    return None


def _module_source(search: list[Path], relative: Path) -> Path | None:
    """The module's file, or a package's ``__init__.py``; a compiled or namespace module counts as found
    (its own file is returned, which the name check does not read)."""
    for folder in search:
        base = folder / relative
        for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        if (
            base.is_dir()
            or any(base.parent.glob(f"{base.name}.*.so"))
            or any(base.parent.glob(f"{base.name}.pyc"))
        ):
            return base
    return None


def _bound_names(source: Path) -> set[str] | None:
    """The names a module binds, nested scopes too (reading wider only accepts more); None when that
    cannot be known by reading it."""
    if source.suffix != ".py":
        return None
    try:
        tree = ast.parse(source.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Global):
            names.update(node.names)
    if "globals" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} or "__getattr__" in names:
        return None
    return names
