"""Entry point that awslambdaric runs inside every local execution environment.

The local Lambda service starts ``python -m awslambdaric orderbatch.localcloud.runtime_shim.handler``
with the function's real handler (``module.function``) in ``ORDERBATCH_REAL_HANDLER``. The real module
is imported under its own name during the runtime's init phase, so anything keyed on
``handler.__module__``/``__qualname__`` (Powertools idempotency) sees exactly what it sees on AWS.

Faults that must act inside the runtime arrive as an instruction under ``FAULT_EVENT_KEY`` in the
event. The key is always removed before the real handler runs; without it the event reaches the
handler untouched. This module imports only the standard library so it adds nothing to a cold start.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from typing import Any

REAL_HANDLER_VARIABLE = "ORDERBATCH_REAL_HANDLER"
FAULT_EVENT_KEY = "__orderbatch_fault__"

ERROR_AFTER_BODY = "error_after_body"
TIMEOUT_BEFORE_BODY = "timeout_before_body"
TIMEOUT_AFTER_BODY = "timeout_after_body"

# Sleeping this long past the remaining time guarantees the emulator's timeout kills us first.
_PAST_DEADLINE_SECONDS = 5.0


def _load_real_handler() -> Callable[[Any, Any], Any]:
    handler_name = os.environ.get(REAL_HANDLER_VARIABLE, "")
    module_name, _, function_name = handler_name.rpartition(".")
    if not module_name or not function_name:
        raise RuntimeError(f"{REAL_HANDLER_VARIABLE} must be 'module.function', got {handler_name!r}")
    handler_function: Callable[[Any, Any], Any] = getattr(importlib.import_module(module_name), function_name)
    return handler_function


def _injected_error(error_type: str, message: str) -> Exception:
    # awslambdaric reports type(error).__name__ as errorType, so the class is named after the wanted type.
    error_class = type(error_type, (Exception,), {"__module__": __name__})
    return error_class(message)


def _sleep_past_deadline(context: Any) -> None:
    time.sleep(context.get_remaining_time_in_millis() / 1000 + _PAST_DEADLINE_SECONDS)


# Inside an environment, importing the real handler here is the runtime's init phase, as on AWS; the
# local Lambda service imports this module only for its constants (the variable is unset there).
_real_handler = _load_real_handler() if REAL_HANDLER_VARIABLE in os.environ else None


def handler(event: Any, context: Any) -> Any:
    real_handler = _real_handler or _load_real_handler()
    fault = event.pop(FAULT_EVENT_KEY, None) if isinstance(event, dict) else None
    if not fault:
        return real_handler(event, context)
    kind = fault.get("kind")
    if kind == TIMEOUT_BEFORE_BODY:
        _sleep_past_deadline(context)
    result = real_handler(event, context)
    if kind == TIMEOUT_AFTER_BODY:
        _sleep_past_deadline(context)
    if kind == ERROR_AFTER_BODY:
        raise _injected_error(fault.get("error_type", "InjectedFaultError"), fault.get("error_message", ""))
    return result
