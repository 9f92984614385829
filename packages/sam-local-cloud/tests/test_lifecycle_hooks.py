"""The executions-and-lifecycle concerns' hooks, as installed through the moto seam."""

from __future__ import annotations

import sys

from sam_local_cloud.moto_seam import installers


def test_every_interpreter_module_gets_the_thread_list_that_keeps_none() -> None:
    installers.install_everything()
    from sam_local_cloud.moto_seam.stepfunctions import utils

    holders = {
        name: module.TMP_THREADS
        for name, module in list(sys.modules.items())
        if name.startswith("moto.stepfunctions.parser") and hasattr(module, "TMP_THREADS")
    }
    utils.TMP_THREADS.append(object())

    # A module of a newer moto that takes the list by name is named here until histories hooks it too.
    assert [name for name, threads in holders.items() if threads is not utils.TMP_THREADS] == []
    assert len(holders) >= 8
    assert len(utils.TMP_THREADS) == 0
