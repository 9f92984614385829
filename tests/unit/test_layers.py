"""The tools' layers, as the imports show them: no cycles, and only the CLI reaches into commands/.

Every import counts, including those inside functions and under TYPE_CHECKING: a cycle that only a lazy
import hides is still two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from pathlib import Path

import orderbatch

PACKAGE_DIR = Path(orderbatch.__file__).resolve().parent
COMMANDS = "orderbatch.commands"
ALLOWED_COMMAND_IMPORTERS = ("orderbatch.cli",)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


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


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    graph = import_graph()
    # Given modules known to import lazily (inside a method) and for typing only
    # Then those imports are edges like any other
    assert "orderbatch.localcloud.cloud" in graph["orderbatch.app_batches"]
    assert "orderbatch.localcloud.lambda_service.faults" in graph["orderbatch.localcloud.lambda_service.api"]


def test_no_import_cycles_between_modules() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_local_cloud_knows_nothing_of_the_app() -> None:
    """localcloud/ emulates AWS for any template: the app's keys and audit are passed in, not imported.

    Besides itself it may use the project's paths and dummy credentials, AWS's documented limits and
    the ASL naming rules, none of which is this app's vocabulary.
    """
    modules = source_modules()
    allowed = (
        "orderbatch.localcloud",
        "orderbatch.project",
        "orderbatch.aws_limits",
        "orderbatch.state_names",
    )
    offenders = sorted(
        f"{module} imports {imported}"
        for module, path in modules.items()
        if module.startswith("orderbatch.localcloud")
        for imported in imported_names(path, module, modules)
        if imported.split(".")[0] in {"orderbatch", "order_processing", "handlers"}
        and not any(imported == name or imported.startswith(f"{name}.") for name in allowed)
    )
    assert offenders == []


def test_only_the_cli_imports_commands() -> None:
    offenders = sorted(
        f"{module} imports {imported}"
        for module, imports in import_graph().items()
        if not module.startswith(COMMANDS) and module not in ALLOWED_COMMAND_IMPORTERS
        for imported in imports
        if imported == COMMANDS or imported.startswith(f"{COMMANDS}.")
    )
    assert offenders == []
