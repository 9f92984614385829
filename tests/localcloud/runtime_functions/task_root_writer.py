"""Tries to write where Lambda lets a function write (/tmp) and where it does not (its task root, /opt)."""

from __future__ import annotations

import errno
import os
import tempfile
from typing import Any


def _write(folder: str) -> str:
    """``written``, or the errno's name of the failed write."""
    try:
        with open(os.path.join(folder, "written-by-handler.txt"), "w") as written:
            written.write("x")
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error.errno))
    return "written"


def handler(event: Any, context: Any) -> dict[str, Any]:
    task_root = os.environ["LAMBDA_TASK_ROOT"]
    outcome: dict[str, Any] = {"task_root": _write(task_root), "tmp": _write(tempfile.gettempdir())}
    if event.get("layer_folder"):
        outcome["layer_folder"] = _write(event["layer_folder"])
    own = sorted(name for name in os.environ if name.startswith("SAM_LOCAL_CLOUD_"))
    outcome["local_cloud_variables"] = own
    return outcome
