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
