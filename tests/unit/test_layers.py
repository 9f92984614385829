"""The tools' layers, as the imports show them: no cycles, and only the CLI reaches into commands/.

Every import counts, including those inside functions and under TYPE_CHECKING: a cycle that only a lazy
import hides is still two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

from import_graph import cycles, import_graph, imported_names, source_modules

COMMANDS = "orderbatch.commands"
ALLOWED_COMMAND_IMPORTERS = ("orderbatch.cli",)


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    graph = import_graph()
    # Given modules known to import lazily (inside a method) and for typing only
    # Then those imports are edges like any other
    assert "sam_local_cloud.cloud" in graph["orderbatch.app_batches"]
    assert "sam_local_cloud.lambda_service.faults" in graph["sam_local_cloud.lambda_service.api"]


def test_no_import_cycles_between_modules() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_local_cloud_imports_nothing_of_the_app() -> None:
    """sam_local_cloud emulates AWS for any template, as a distribution of its own: the app's keys and
    audit are passed in, never imported."""
    modules = source_modules()
    offenders = sorted(
        f"{module} imports {imported}"
        for module, path in modules.items()
        if module.split(".")[0] == "sam_local_cloud"
        for imported in imported_names(path, module, modules)
        if imported.split(".")[0] in {"orderbatch", "order_processing", "handlers"}
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
