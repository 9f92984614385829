"""moto's models without the registry that keeps every instance ever created.

moto's ``BaseModel.__new__`` appends every model instance to its class's ``instances_tracked`` list, for
moto's dashboard and for S3 to release key buffers at reset; nothing ever removes one. A DynamoDB item
is a model, and every write makes a new one, so a local cloud running batches kept each version of each
item alive: about 15,000 dead items after 800 orders, growing without bound. Here only S3's models are
still tracked (moto's reset disposes of their buffers through the list); the others are kept by what
holds them (a table, a backend), as anything else in Python is.
"""

from __future__ import annotations

import threading
from typing import Any

_patched = False
_lock = threading.Lock()
# The models moto's reset walks through ``instances_tracked`` (moto.s3.models: FakeKey, FakeMultipart).
_TRACKED_SERVICES = ("moto.s3.",)


def stop_tracking_instances() -> None:
    """Idempotent: from now on only S3's models are added to ``instances_tracked``."""
    global _patched
    with _lock:
        if _patched:
            return
        from moto.core.common_models import BaseModel

        def new_untracked(cls: type[Any], *args: Any, **kwargs: Any) -> Any:
            instance = object.__new__(cls)
            if cls.__module__.startswith(_TRACKED_SERVICES):
                cls.instances_tracked.append(instance)
            return instance

        BaseModel.__new__ = new_untracked  # type: ignore[method-assign]
        for model in _models():
            if not model.__module__.startswith(_TRACKED_SERVICES):
                model.instances_tracked = []
        _patched = True


def _models() -> list[Any]:
    from moto.core.model_instances import model_data

    return [model for models in model_data.values() for model in models.values()]
