"""moto in server mode, as the local Step Functions, DynamoDB, S3, CloudWatch, SNS and Logs.

moto's Step Functions interpreter (ported from LocalStack) runs the executions. What the local cloud changes
in it, without forking it, lives beside this module, one concern each, and reaches moto only through
``moto_seam``: every module (or subpackage) of this package that defines ``register_hooks()`` registers its
listeners there, and its docstring says what it changes and why. ``apply_interpreter_patches`` finds them
by that function; no list names them.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from sam_local_cloud.aws_limits import INLINE_MAP_CONCURRENCY_LIMIT
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.stepfunctions.distributed_map import RESULTS_PER_FILE
from sam_local_cloud.stepfunctions.express import EXPRESS_MAX_DURATION_SECONDS
from sam_local_cloud.stepfunctions.histories import DEFAULT_MAX_EVENTS_IN_MEMORY, HistoryStore

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.stepfunctions import DomainDispatcherApplication

__all__ = [
    "DEFAULT_MAX_EVENTS_IN_MEMORY",
    "EXPRESS_MAX_DURATION_SECONDS",
    "INLINE_MAP_CONCURRENCY_LIMIT",
    "RESULTS_PER_FILE",
    "HistoryStore",
    "apply_interpreter_patches",
    "create_moto_app",
    "leave_interpreter_as_released",
]

_patch_lock = threading.Lock()
_patched = False
# Set by a measurement of moto's interpreter as released (LocalCloudConfig.moto_interpreter_as_released):
# the patches are process-wide and cannot be taken back, so the choice holds for the process.
_left_as_released = False


def create_moto_app() -> DomainDispatcherApplication:
    """The WSGI application moto's own server runs (`moto_server`), with state machine execution on."""
    from sam_local_cloud.moto_seam.stepfunctions import (
        DomainDispatcherApplication,
        create_backend_app,
        default_user_config,
    )

    default_user_config["stepfunctions"] = {"execute_state_machine": True}
    apply_interpreter_patches()
    return DomainDispatcherApplication(create_backend_app)


def apply_interpreter_patches() -> None:
    """Registers every concern's hooks into moto's Step Functions and installs them, once per process."""
    global _patched
    with _patch_lock:
        if _patched or _left_as_released:
            return
        for concern in _concern_modules():
            concern.register_hooks()
        hooks.install()
        _patched = True


def leave_interpreter_as_released() -> None:
    """moto's Step Functions interpreter as released, for this whole process: the yardstick a benchmark
    measures the local cloud's interpreter against. Refused once the patches are in."""
    global _left_as_released
    with _patch_lock:
        if _patched:
            raise RuntimeError(
                "moto's interpreter is already patched in this process (a local cloud ran here): measure "
                "moto as released in a process of its own"
            )
        _left_as_released = True


def _concern_modules() -> list[ModuleType]:
    """Every module and subpackage of this package that defines ``register_hooks``, imported.

    The order of their listeners on a shared target is what each declares (``hooks.order``), not this one.
    """
    modules = [
        importlib.import_module(f"{__name__}.{found.name}") for found in pkgutil.iter_modules(__path__)
    ]
    return [module for module in modules if callable(getattr(module, "register_hooks", None))]
