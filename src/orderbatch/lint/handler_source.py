"""A Python function's handler source as ``sam build`` finds it, read with ``ast`` and never imported.

The handler module named by ``CodeUri`` + ``Handler`` and the modules under ``CodeUri`` it imports (up to
``MAX_MODULES``), each with its syntax tree and each node's parent: what the rules that read handler
code (durable functions, persistence layers) walk.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from orderbatch.lint.template_model import LambdaFunction

MAX_MODULES = 60

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def handler_file(function: LambdaFunction, template_path: Path | None) -> tuple[Path, Path] | str:
    properties = function.properties
    runtime = properties.get("Runtime")
    if isinstance(runtime, str) and not runtime.startswith("python"):
        return f"its runtime {runtime} is not Python, whose source this linter reads"
    handler = properties.get("Handler")
    if not isinstance(handler, str) or "." not in handler:
        return "it has no Handler of the form module.function"
    code_uri = properties.get("CodeUri", properties.get("Code", "."))
    if not isinstance(code_uri, str) or code_uri.startswith("s3://"):
        return "its code is not a local CodeUri directory"
    base = template_path.parent if template_path else Path.cwd()
    code_root = (base / code_uri).resolve()
    module = handler.rsplit(".", 1)[0]
    for candidate in (
        code_root / f"{module.replace('.', '/')}.py",
        code_root / module.replace(".", "/") / "__init__.py",
    ):
        if candidate.is_file():
            return candidate, code_root
    return f"its handler module {module} is not under CodeUri {code_uri} ({code_root})"


@lru_cache(maxsize=256)
def parse_source(path: Path, modified: float) -> ast.Module:
    del modified  # part of the cache key only: an edited file is parsed again
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@dataclass
class SourceModule:
    path: Path
    tree: ast.Module
    # The top-level packages it imports (``boto3``, ``aws_lambda_powertools``...).
    packages: frozenset[str]
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)

    def enclosing(self, node: ast.AST, kinds: tuple[type[ast.AST], ...]) -> Iterator[ast.AST]:
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, kinds):
                yield current
            current = self.parents.get(current)

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for found in self.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef)
            return found
        return None

    def where(self, node: ast.AST, code_root: Path) -> str:
        try:
            shown = self.path.relative_to(code_root)
        except ValueError:
            shown = self.path
        return f"{shown}:{getattr(node, 'lineno', 0)}"


@dataclass
class HandlerProgram:
    code_root: Path
    modules: list[SourceModule]

    @classmethod
    def load(cls, handler_file: Path, code_root: Path) -> HandlerProgram:
        modules: list[SourceModule] = []
        queue = [handler_file]
        seen: set[Path] = set()
        while queue and len(modules) < MAX_MODULES:
            path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            tree = parse_source(path, path.stat().st_mtime)
            imported = list(imported_modules(tree, path, code_root))
            module = SourceModule(path, tree, frozenset(name.split(".")[0] for name, _ in imported))
            for parent in ast.walk(tree):
                for child in ast.iter_child_nodes(parent):
                    module.parents[child] = parent
            modules.append(module)
            for _name, local in imported:
                if local is not None:
                    queue.append(local)
        return cls(code_root, modules)

    def calls(self) -> Iterator[tuple[SourceModule, ast.Call]]:
        for module in self.modules:
            for node in ast.walk(module.tree):
                if isinstance(node, ast.Call):
                    yield module, node

    def functions_named(
        self, name: str
    ) -> Iterator[tuple[SourceModule, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for module in self.modules:
            for node in ast.walk(module.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                    yield module, node

    def class_fields(self, name: str) -> Iterator[ast.AnnAssign]:
        for module in self.modules:
            for node in ast.walk(module.tree):
                if isinstance(node, ast.ClassDef):
                    for statement in node.body:
                        if (
                            isinstance(statement, ast.AnnAssign)
                            and isinstance(statement.target, ast.Name)
                            and statement.target.id == name
                        ):
                            yield statement

    def mentions(self, text: str) -> bool:
        return any(
            isinstance(node, ast.Constant) and isinstance(node.value, str) and text in node.value
            for module in self.modules
            for node in ast.walk(module.tree)
        )


def imported_modules(tree: ast.Module, path: Path, code_root: Path) -> Iterator[tuple[str, Path | None]]:
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = path.parent
                for _ in range(node.level - 1):
                    package = package.parent
                try:
                    prefix = ".".join(package.relative_to(code_root).parts)
                except ValueError:
                    continue
                base = ".".join(part for part in (prefix, node.module or "") if part)
            else:
                base = node.module or ""
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            yield name, local_module(name, code_root)


def local_module(name: str, code_root: Path) -> Path | None:
    if not name:
        return None
    relative = name.replace(".", "/")
    for candidate in (code_root / f"{relative}.py", code_root / relative / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None
