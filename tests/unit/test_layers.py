"""The tools' layers, as the imports show them: no cycles, and only the CLI reaches into commands/.

Every import counts, including those inside functions and under TYPE_CHECKING: a cycle that only a lazy
import hides is still two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

from import_graph import LOCAL_CLOUD_DIR, cycles, import_graph, imported_names, source_modules

APP_PACKAGES = {"orderbatch", "order_processing", "handlers"}
# The package's own tests, beside its src/: they run without the order app, as a user's would.
LOCAL_CLOUD_TESTS = LOCAL_CLOUD_DIR.parents[1] / "tests"

COMMANDS = "orderbatch.commands"
ALLOWED_COMMAND_IMPORTERS = ("orderbatch.cli",)


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    graph = import_graph()
    # Given modules known to import lazily (inside a method) and for typing only
    # Then those imports are edges like any other
    assert "sam_local_cloud.faults" in graph["orderbatch.app_batches"]
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
        if imported.split(".")[0] in APP_PACKAGES
    )
    assert offenders == []


def test_the_local_clouds_own_tests_import_nothing_of_the_app() -> None:
    test_files = sorted(LOCAL_CLOUD_TESTS.rglob("*.py"))
    assert len(test_files) >= 10
    offenders = sorted(
        f"{path.name} imports {imported}"
        for path in test_files
        for imported in imported_names(path, path.stem, ())
        if imported.split(".")[0] in APP_PACKAGES
    )
    assert offenders == []


# The package's public modules (its README, "The Python API"): what the app may import.
LOCAL_CLOUD_PUBLIC = {
    "sam_local_cloud",
    "sam_local_cloud.aws_limits",
    "sam_local_cloud.cli",
    "sam_local_cloud.executions",
    "sam_local_cloud.faults",
    "sam_local_cloud.json_types",
    "sam_local_cloud.stack",
    "sam_local_cloud.state_names",
    "sam_local_cloud.docker_api",
}


def test_the_app_imports_the_local_clouds_public_modules_only() -> None:
    inside = sorted(
        f"{module} imports {imported}"
        for module, imports in import_graph().items()
        if module.split(".")[0] == "orderbatch"
        for imported in imports
        if imported.split(".")[0] == "sam_local_cloud" and imported not in LOCAL_CLOUD_PUBLIC
    )
    assert inside == []


def test_only_the_cli_imports_commands() -> None:
    offenders = sorted(
        f"{module} imports {imported}"
        for module, imports in import_graph().items()
        if not module.startswith(COMMANDS) and module not in ALLOWED_COMMAND_IMPORTERS
        for imported in imports
        if imported == COMMANDS or imported.startswith(f"{COMMANDS}.")
    )
    assert offenders == []
