"""EngineRecords under garbage collection: a collection run while a record is made must not deadlock."""

from __future__ import annotations

import gc
import threading
from typing import Any

from sam_local_cloud.moto_seam.records import EngineRecords


class _Cyclic:
    """An object only the cycle collector frees (it refers to itself), as moto's environments do."""

    def __init__(self) -> None:
        self.itself = self


def test_a_collection_while_making_a_record_forgets_the_freed_objects_records() -> None:
    def new_record() -> list[str]:
        # An allocation under the records' lock may start a collection; here one always runs.
        gc.collect()
        return []

    records: EngineRecords[list[str]] = EngineRecords(new_record)
    gc.disable()
    try:
        freed: Any = _Cyclic()
        records.of(freed).append("first")
        del freed  # only the collection inside the next ``of`` frees it, running its weakref callback
        survivor = _Cyclic()
        made = threading.Event()

        def make_record() -> None:
            records.of(survivor).append("second")
            made.set()

        threading.Thread(target=make_record, daemon=True).start()
        assert made.wait(timeout=5), "making a record deadlocked on the records' own lock"
    finally:
        gc.enable()

    assert records.get(survivor) == ["second"]
    assert len(records) == 1
