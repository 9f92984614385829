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


_compact = False


def compact_dynamodb_items() -> None:
    """Idempotent: moto's DynamoDB values take slots instead of a ``__dict__``, and item attribute names
    are interned, so each stored row costs about a quarter less.

    A table holds one ``DynamoType`` per attribute (and per element of a list or map), a two-field object
    whose ``__dict__`` costs more than its contents; moto's deep copies of every item read and write
    materialise that dict. The class is rebuilt with the same methods and ``__slots__``, and every module
    that imported it is pointed at the new one before any table exists.
    """
    global _compact
    with _lock:
        if _compact:
            return
        import sys

        import moto.dynamodb.models.dynamo_type as dynamo_type

        original = dynamo_type.DynamoType
        namespace = {
            name: value for name, value in vars(original).items() if name not in ("__dict__", "__weakref__")
        }
        slotted = type(original.__name__, (), {**namespace, "__slots__": ("type", "value")})
        for module in list(sys.modules.values()):
            if (getattr(module, "__name__", "") or "").startswith("moto.") and (
                getattr(module, "DynamoType", None) is original
            ):
                setattr(module, "DynamoType", slotted)  # noqa: B010
        item_init = dynamo_type.Item.__init__

        def init_with_interned_names(
            self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any], *args: Any, **kwargs: Any
        ) -> None:
            names = {sys.intern(name): value for name, value in attrs.items()}
            item_init(self, hash_key, range_key, names, *args, **kwargs)

        dynamo_type.Item.__init__ = init_with_interned_names  # type: ignore[method-assign]
        _compact = True
