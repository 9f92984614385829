"""moto's models without the registry that keeps every instance ever created.

moto's ``BaseModel.__new__`` appends every model instance to its class's ``instances_tracked`` list, for
moto's dashboard and for S3 to release key buffers at reset; nothing ever removes one. A DynamoDB item
is a model, and every write makes a new one, so a local cloud running batches kept each version of each
item alive: about 15,000 dead items after 800 orders, growing without bound. Here only S3's models are
still tracked (moto's reset disposes of their buffers through the list); the others are kept by what
holds them (a table, a backend), as anything else in Python is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sam_local_cloud.dynamodb import sized_when_complete

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.services import dynamo_type

# The models moto's reset walks through ``instances_tracked`` (moto.s3.models: FakeKey, FakeMultipart).
_TRACKED_SERVICES = ("moto.s3.",)


def register_hooks() -> None:
    """Both changes below, registered on moto's classes and modules (installers.install_model_registry)."""
    _register_untracked_instances()
    _register_compact_dynamodb_items()


def _register_untracked_instances() -> None:
    """From now on only S3's models are added to ``instances_tracked``; the lists kept so far are emptied."""
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import BaseModel, model_data

    @hooks.around(BaseModel, "__new__", concern="model_registry")
    def new_untracked(proceed: Callable[..., object], cls: type, *args: object, **kwargs: object) -> object:
        if cls.__module__.startswith(_TRACKED_SERVICES):
            return proceed(cls, *args, **kwargs)
        return object.__new__(cls)

    models: list[Any] = [model for models in model_data.values() for model in models.values()]
    for model in models:
        if not model.__module__.startswith(_TRACKED_SERVICES):
            # Emptied, not replaced: the list is moto's data, which its own reset empties too.
            model.instances_tracked.clear()


def _register_compact_dynamodb_items() -> None:
    """moto's DynamoDB values take slots instead of a ``__dict__``, and item attribute names are interned,
    so each stored row costs about a quarter less.

    A table holds one ``DynamoType`` per attribute (and per element of a list or map), a two-field object
    whose ``__dict__`` costs more than its contents; moto's deep copies of every item read and write
    materialise that dict. The class is rebuilt with the same methods and ``__slots__``, and every module
    that imported it is pointed at the new one before any table exists.
    """
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import dynamo_type

    original = dynamo_type.DynamoType
    namespace = {
        name: value for name, value in vars(original).items() if name not in ("__dict__", "__weakref__")
    }
    slotted = type(original.__name__, (), {**namespace, "__slots__": ("type", "value")})
    for module in list(sys.modules.values()):
        # The module's own namespace: a name it lacks must not run a deferred package's __init__.
        namespace_of = getattr(module, "__dict__", {})
        if str(namespace_of.get("__name__", "")).startswith("moto.") and (
            namespace_of.get("DynamoType") is original
        ):
            hooks.replace(module, "DynamoType", slotted, concern="model_registry")

    @hooks.around(dynamo_type.Item, "__init__", concern="model_registry")
    def init_with_interned_names(
        proceed: Callable[..., None],
        self: dynamo_type.Item,
        hash_key: dynamo_type.DynamoType,
        range_key: dynamo_type.DynamoType | None,
        attrs: dict[str, Any],  # moto's annotation of an item's attributes
        *args: object,
        **kwargs: object,
    ) -> None:
        names = {sys.intern(name): value for name, value in attrs.items()}
        # AWS's item size limit is the DynamoDB concern's (dynamodb.py); checked once the item is whole.
        with sized_when_complete(self):
            proceed(self, hash_key, range_key, names, *args, **kwargs)
