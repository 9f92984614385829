"""A layout a newcomer can read: no module under src/ longer than MAX_MODULE_LINES, and no two top-level
packages (or modules) of src/orderbatch that import each other, directly or through others.

Imports inside functions and under TYPE_CHECKING count (import_graph.py): a lazy import hides a cycle
from Python, not from a reader.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import LOCAL_CLOUD_DIR, PACKAGE_DIR, cycles, import_graph

SOURCE_ROOTS = (PACKAGE_DIR.parent, LOCAL_CLOUD_DIR.parent)
MAX_MODULE_LINES = 700


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_modules(root: Path, limit: int) -> list[str]:
    """``path (lines)`` of every module under ``root`` longer than ``limit`` lines, longest first."""
    counted = [(line_count(path), path.relative_to(root).as_posix()) for path in root.rglob("*.py")]
    return [f"{path} ({lines} lines)" for lines, path in sorted(counted, reverse=True) if lines > limit]


def top_level(module: str) -> str | None:
    """``orderbatch.bench.runner`` -> ``bench``; None for the ``orderbatch`` package itself. The local
    cloud's distribution is one unit beside orderbatch's packages: ``sam_local_cloud``."""
    parts = module.split(".")
    if parts[0] == "sam_local_cloud":
        return parts[0]
    return parts[1] if len(parts) > 1 else None


def top_level_graph(graph: dict[str, set[str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """The import graph between top-level packages and modules, and one import that makes each edge."""
    edges: dict[str, set[str]] = {}
    witnesses: dict[tuple[str, str], str] = {}
    for module, imported_modules in sorted(graph.items()):
        importer = top_level(module)
        if importer is None:
            continue
        edges.setdefault(importer, set())
        for imported in sorted(imported_modules):
            target = top_level(imported)
            if target is None or target == importer:
                continue
            edges[importer].add(target)
            edges.setdefault(target, set())
            witnesses.setdefault((importer, target), f"{module} imports {imported}")
    return edges, witnesses


def package_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each cycle between top-level packages, with the imports that close it."""
    edges, witnesses = top_level_graph(graph)
    found = []
    for component in cycles(edges):
        members = set(component)
        because = sorted(
            witnesses[(importer, target)]
            for importer in component
            for target in edges[importer]
            if target in members
        )
        found.append(f"{' <-> '.join(component)}: {'; '.join(because)}")
    return found


def test_no_module_under_src_is_longer_than_the_limit() -> None:
    assert [path for root in SOURCE_ROOTS for path in long_modules(root, MAX_MODULE_LINES)] == []


def test_no_two_top_level_packages_import_each_other() -> None:
    assert package_cycles(import_graph()) == []


def test_a_long_module_is_named_with_its_length(tmp_path: Path) -> None:
    # Given a package with one module at the limit and one over it
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))

    # Then only the one over it is reported, by path and length
    assert long_modules(tmp_path, MAX_MODULE_LINES) == [f"pkg/long.py ({MAX_MODULE_LINES + 1} lines)"]


def test_a_cycle_between_packages_is_named_with_the_imports_that_close_it() -> None:
    # Given bench importing plan at module level and plan importing bench lazily, and doctor above both
    graph = {
        "orderbatch.bench.suite": {"orderbatch.plan.scenarios", "orderbatch.bench.runner"},
        "orderbatch.bench.runner": set(),
        "orderbatch.plan.scenarios": {"orderbatch.bench.runner"},
        "orderbatch.doctor": {"orderbatch.plan.scenarios", "orderbatch.bench.runner"},
    }

    # Then the two packages are reported together with the import each way; doctor is not part of it
    assert package_cycles(graph) == [
        "bench <-> plan: orderbatch.bench.suite imports orderbatch.plan.scenarios; "
        "orderbatch.plan.scenarios imports orderbatch.bench.runner"
    ]


def test_the_package_graph_counts_lazy_imports() -> None:
    # Given the bench command, which imports the planner's forecast inside its run function
    edges, _ = top_level_graph(import_graph())

    # Then that import is an edge between the two packages
    assert "plan" in edges["commands"]
