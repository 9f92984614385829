"""moto packages whose ``__init__`` loads what the local cloud never uses, run on first use instead.

moto's Step Functions parser imports ``moto.batch.utils`` for one enum of its AWS Batch integration.
Importing it runs ``moto/batch/__init__.py``, which imports moto's Batch models and, through them, all of
moto's EC2: 0.6 s of every local cloud's start (EC2's region table alone builds a boto3 session), and its
memory, for a service the local cloud does not serve. Here such a package is registered without running
its ``__init__``; its submodules import as before (``__path__`` is set), and the first name asked of the
package that its own namespace lacks (``moto.batch.batch_backends``, as moto's backend registry asks for
it) runs the ``__init__`` then (PEP 562's module ``__getattr__``).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from importlib.abc import Loader
from types import ModuleType
from typing import Any

DEFERRED = ("moto.batch",)
_LOCK = threading.RLock()


def defer_package_inits() -> None:
    """Registers each package of ``DEFERRED`` not imported yet, its ``__init__`` deferred; idempotent."""
    with _LOCK:
        for name in DEFERRED:
            if name in sys.modules:
                continue
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None or spec.submodule_search_locations is None:
                continue
            module = importlib.util.module_from_spec(spec)
            module.__dict__["__getattr__"] = _initialiser(module, spec.loader)
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            setattr(sys.modules[parent], child, module)


def _initialiser(module: ModuleType, loader: Loader) -> Any:
    def run_init_then_get(attribute: str) -> Any:
        with _LOCK:
            if "__getattr__" in module.__dict__:
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        return module.__dict__[attribute] if attribute in module.__dict__ else _missing(module, attribute)

    return run_init_then_get


def _missing(module: ModuleType, attribute: str) -> Any:
    raise AttributeError(f"module {module.__name__!r} has no attribute {attribute!r}")
