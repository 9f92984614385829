"""A noisy neighbour: another workload in the account holding part of the unreserved concurrency."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_NEIGHBOUR_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class NoisyNeighbour:
    """Another workload in the account holding ``slots`` of the unreserved concurrency for a while."""

    slots: int
    duration_seconds: float
    start_after_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.slots < 1 or self.duration_seconds <= 0 or self.start_after_seconds < 0:
            raise ValueError(
                "noisy_neighbour needs slots >= 1, duration_seconds > 0, start_after_seconds >= 0"
            )


class NoisyNeighbourRunner:
    """Holds the neighbour's slots during its window; a new plan or close() ends it early."""

    def __init__(self, hold: Callable[[int], int], release: Callable[[int], None]) -> None:
        self._hold = hold
        self._release = release
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.held = 0

    def start(self, neighbour: NoisyNeighbour | None) -> None:
        self.stop()
        if neighbour is None:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(neighbour, self._stop), name="lambda-noisy-neighbour", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self, neighbour: NoisyNeighbour, stop: threading.Event) -> None:
        if stop.wait(neighbour.start_after_seconds):
            return
        # Like real load arriving, the neighbour takes slots as they free up until it holds its share.
        deadline = time.monotonic() + neighbour.duration_seconds
        try:
            while not stop.is_set():
                if self.held < neighbour.slots:
                    self.held += self._hold(neighbour.slots - self.held)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                stop.wait(
                    min(remaining, _NEIGHBOUR_POLL_SECONDS) if self.held < neighbour.slots else remaining
                )
        finally:
            self._release(self.held)
            self.held = 0
