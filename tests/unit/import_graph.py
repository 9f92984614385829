"""The import graph of src/orderbatch and of the local cloud's package, read with ``ast``: every import
statement counts, including those inside functions and under TYPE_CHECKING (test_layers.py and
test_layout.py judge it)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from pathlib import Path

import orderbatch
import sam_local_cloud

PACKAGE_DIR = Path(orderbatch.__file__).resolve().parent
LOCAL_CLOUD_DIR = Path(sam_local_cloud.__file__).resolve().parent


def module_name(path: Path) -> str:
    package_dir = LOCAL_CLOUD_DIR if path.is_relative_to(LOCAL_CLOUD_DIR) else PACKAGE_DIR
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package_dir in (PACKAGE_DIR, LOCAL_CLOUD_DIR)
        for path in sorted(package_dir.rglob("*.py"))
    }


def imported_names(path: Path, module: str, modules: Collection[str]) -> Iterator[str]:
    """Every module name an import statement of the file names, anywhere in the file."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                base = node.module or ""
            # `from package import module` depends on that module; `from module import name` on the module.
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                yield submodule if submodule in modules else base


def import_graph() -> dict[str, set[str]]:
    modules = source_modules()
    return {
        module: {name for name in imported_names(path, module, modules) if name in modules and name != module}
        for module, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found
