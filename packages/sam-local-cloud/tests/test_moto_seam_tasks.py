"""Tasks and the Map state on the seam: their hooks are the registry's; no interpreter module is missed."""

from __future__ import annotations

import sys

import pytest

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import stepfunctions as moto_sfn
from sam_local_cloud.stepfunctions import apply_interpreter_patches

TASK_AND_MAP_CONCERNS = {
    "worker_threads",
    "shared_inputs",
    "api_gateway_tasks",
    "service_errors",
    "service_tasks",
    "lambda_tasks",
    "distributed_map",
    "map_state",
    "task_clients",
}


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    apply_interpreter_patches()


def test_no_interpreter_module_keeps_motos_own_client_builder() -> None:
    """Every module of the interpreter that imported ``boto_client_for`` by name calls the local cloud's
    (clients built once, the Task's role, bounded timeouts); a module moto adds that is not listed
    would still build a client per Task with moto's keys."""
    holders = {
        name: module.boto_client_for
        for name, module in list(sys.modules.items())
        if name.startswith("moto.stepfunctions.parser") and hasattr(module, "boto_client_for")
    }

    assert not [name for name, builder in holders.items() if builder is moto_sfn.boto_client_for]
    assert len(set(holders.values())) == 1
    assert len(holders) >= 14


def test_every_task_and_map_hook_is_installed_with_motos_original_kept() -> None:
    targets = [target for target in hooks.targets() if TASK_AND_MAP_CONCERNS & set(target.concerns)]
    by_concern = {concern: [t for t in targets if concern in t.concerns] for concern in TASK_AND_MAP_CONCERNS}

    assert all(target.installed for target in targets)
    assert all(target.original is not None for target in targets)
    assert {concern for concern, hooked in by_concern.items() if not hooked} == set()
    # The Thread class moto's Task states start is the parked-thread pool's.
    assert moto_sfn.execute_state.Thread.__module__ == "sam_local_cloud.stepfunctions.worker_threads"
