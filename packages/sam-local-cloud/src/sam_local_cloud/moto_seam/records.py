"""The engine's own records about moto's objects, kept beside them instead of as attributes on them.

A concern that needs to remember something per execution, per map run or per state keeps an
``EngineRecords`` of its own dataclass: ``records.of(execution)`` finds or makes the record,
``records.get(execution)`` only finds it. A record lives as long as the moto object it describes, so a
finished execution that moto lets go of takes its records with it (the local cloud's memory bound).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

RecordT = TypeVar("RecordT")


class EngineRecords(Generic[RecordT]):
    """Per-object records, keyed by the moto object's identity, gone with the object."""

    def __init__(self, new_record: Callable[[], RecordT]) -> None:
        self._new_record = new_record
        self._records: dict[int, tuple[weakref.ref[Any], RecordT]] = {}
        # Reentrant: a garbage collection started by an allocation made under the lock runs the weakref
        # callbacks of objects it frees, which take the lock again in the same thread.
        self._lock = threading.RLock()

    def of(self, moto_object: object) -> RecordT:
        """The object's record, made on first use."""
        key = id(moto_object)
        with self._lock:
            entry = self._records.get(key)
            if entry is not None and entry[0]() is moto_object:
                return entry[1]
            record = self._new_record()
            self._records[key] = (weakref.ref(moto_object, self._forgetter(key)), record)
            return record

    def get(self, moto_object: object) -> RecordT | None:
        """The object's record if one was made, without making one."""
        with self._lock:
            entry = self._records.get(id(moto_object))
        if entry is None or entry[0]() is not moto_object:
            return None
        return entry[1]

    def forget(self, moto_object: object) -> None:
        with self._lock:
            entry = self._records.get(id(moto_object))
            if entry is not None and entry[0]() is moto_object:
                del self._records[id(moto_object)]

    def records(self) -> list[RecordT]:
        """The records of the objects still alive."""
        with self._lock:
            entries = list(self._records.values())
        return [record for reference, record in entries if reference() is not None]

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def _forgetter(self, key: int) -> Callable[[weakref.ref[Any]], None]:
        records = weakref.ref(self)

        def forget(reference: weakref.ref[Any]) -> None:
            owner = records()
            if owner is None:
                return
            with owner._lock:
                entry = owner._records.get(key)
                # The id may already belong to a newer object whose record must stay.
                if entry is not None and entry[0] is reference:
                    del owner._records[key]

        return forget
