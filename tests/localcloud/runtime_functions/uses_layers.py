"""Imports what its layers bring, by the module names the event lists, and says where each came from
(and where an executable the event names is found on PATH)."""

from __future__ import annotations

import importlib
import shutil
from typing import Any


def handler(event: Any, context: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in event["modules"]:
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            found[name] = {"error": str(error)}
        else:
            found[name] = {"greeting": getattr(module, "GREETING", None), "file": module.__file__}
    if event.get("which"):
        found["which"] = shutil.which(event["which"])
    if event.get("fail_in"):
        importlib.import_module(event["fail_in"]).fail()
    return found
