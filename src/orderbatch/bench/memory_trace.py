"""Opt-in allocation tracing of the local cloud's process, to name what still grows during a soak.

The soak harness shares the local cloud's process, so ``tracemalloc`` there sees every allocation the
local cloud keeps. ``MemoryTracer`` starts tracing at the reference point (the soak's baseline minute):
what it sees are only allocations made since, and at every later report (and whenever the process gets
SIGUSR2) it writes the sites whose memory still alive grew most: by line, and by the few frames above it
that say who holds the memory. Each dump replaces the file, so the last one covers the longest stretch.
Tracing slows every allocation of the process, so it starts late and is off unless asked for
(``--trace-memory FILE`` or ``ORDERBATCH_TRACE_MEMORY=FILE``).
"""

from __future__ import annotations

import os
import signal
import sysconfig
import threading
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

TRACE_MEMORY_VARIABLE = "ORDERBATCH_TRACE_MEMORY"
DUMP_SIGNAL = signal.SIGUSR2
# Enough frames to get out of a deep copy or a JSON decode to the code that asked for it.
TRACEBACK_FRAMES = 30
TOP_SITES = 25
_STANDARD_LIBRARY = sysconfig.get_paths()["stdlib"]


@dataclass(frozen=True)
class GrowthSite:
    """One allocation site's growth between the reference snapshot and now."""

    where: str
    size_change_kib: float
    count_change: int
    size_kib: float


def trace_path_from_environment() -> Path | None:
    value = os.environ.get(TRACE_MEMORY_VARIABLE, "").strip()
    return Path(value) if value else None


class MemoryTracer:
    """Starts tracemalloc, keeps one reference snapshot, dumps the growth since it on request."""

    def __init__(self, path: Path, *, frames: int = TRACEBACK_FRAMES, top: int = TOP_SITES) -> None:
        self.path = path
        self.frames = frames
        self.top = top
        self._reference: tracemalloc.Snapshot | None = None
        self._reference_label = ""
        self._dump_requested = threading.Event()
        self._previous_handler: signal.Handlers | object | None = None

    def start(self) -> MemoryTracer:
        """Listens for the dump signal; tracing itself starts with the reference (``set_reference``)."""
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(DUMP_SIGNAL, self._on_signal)
        return self

    def stop(self) -> None:
        if self._previous_handler is not None:
            signal.signal(DUMP_SIGNAL, self._previous_handler)  # type: ignore[arg-type]
            self._previous_handler = None
        self._reference = None
        if tracemalloc.is_tracing():
            tracemalloc.stop()

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        # Taking a snapshot inside a signal handler could run in the middle of any allocation: the
        # soak's loop takes it at its next turn instead.
        self._dump_requested.set()

    @property
    def dump_requested(self) -> bool:
        return self._dump_requested.is_set()

    @property
    def has_reference(self) -> bool:
        return self._reference is not None

    def set_reference(self, label: str) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        self._reference = self._snapshot()
        self._reference_label = label

    def dump(self, label: str) -> list[GrowthSite]:
        """Writes the top growing sites since the reference (the reference is taken now if there is none)."""
        self._dump_requested.clear()
        if self._reference is None:
            self.set_reference(label)
            return []
        current = self._snapshot()
        by_line = growth(current, self._reference, "lineno", self.top)
        by_traceback = growth(current, self._reference, "traceback", max(5, self.top // 3))
        traced, peak = tracemalloc.get_traced_memory()
        lines = [
            f"allocation growth from {self._reference_label} to {label}",
            f"traced now {traced / 1024:.0f} KiB (peak {peak / 1024:.0f} KiB), "
            f"tracemalloc's own overhead {tracemalloc.get_tracemalloc_memory() / 1024:.0f} KiB",
            "",
            "by line: size change KiB, count change, size now KiB, where",
            *(_format_site(site) for site in by_line),
            "",
            "by caller (the innermost frame outside the standard library): size change KiB, count change, "
            "size now KiB, where",
            *(_format_site(site) for site in by_caller(current, self._reference, self.top)),
            "",
            "by traceback (innermost frame last): size change KiB, count change, size now KiB",
        ]
        for site in by_traceback:
            lines.append(_format_site(site))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(lines) + "\n")
        return by_line

    def _snapshot(self) -> tracemalloc.Snapshot:
        # Unfiltered: filtering runs in Python over every trace while holding the GIL, which stalls the
        # whole local cloud; tracing starts late, so the import system's allocations are not in it.
        return tracemalloc.take_snapshot()


def growth(
    current: tracemalloc.Snapshot, reference: tracemalloc.Snapshot, key_type: str, top: int
) -> list[GrowthSite]:
    """The ``top`` sites whose size grew most from ``reference`` to ``current``."""
    differences = [d for d in current.compare_to(reference, key_type) if d.size_diff > 0]
    differences.sort(key=lambda difference: difference.size_diff, reverse=True)
    sites = []
    for difference in differences[:top]:
        if key_type == "traceback":
            where = "\n      ".join(str(frame) for frame in difference.traceback)
        else:
            where = str(difference.traceback[0])
        sites.append(
            GrowthSite(
                where=where,
                size_change_kib=round(difference.size_diff / 1024, 1),
                count_change=difference.count_diff,
                size_kib=round(difference.size / 1024, 1),
            )
        )
    return sites


def by_caller(current: tracemalloc.Snapshot, reference: tracemalloc.Snapshot, top: int) -> list[GrowthSite]:
    """Growth summed by the innermost frame outside the standard library: a ``copy.deepcopy`` or a
    ``json.loads`` allocates, but the line that called it is what keeps the result."""
    size: dict[str, int] = {}
    count: dict[str, int] = {}
    now: dict[str, int] = {}
    for difference in current.compare_to(reference, "traceback"):
        caller = _caller(difference.traceback)
        size[caller] = size.get(caller, 0) + difference.size_diff
        count[caller] = count.get(caller, 0) + difference.count_diff
        now[caller] = now.get(caller, 0) + difference.size
    ranked = sorted((where for where in size if size[where] > 0), key=lambda where: size[where], reverse=True)
    return [
        GrowthSite(where, round(size[where] / 1024, 1), count[where], round(now[where] / 1024, 1))
        for where in ranked[:top]
    ]


def _caller(traceback: tracemalloc.Traceback) -> str:
    for frame in reversed(traceback):  # tracemalloc orders frames from the oldest to the innermost
        if not frame.filename.startswith(_STANDARD_LIBRARY):
            return f"{frame.filename}:{frame.lineno}"
    return str(traceback[-1]) if len(traceback) else "?"


def _format_site(site: GrowthSite) -> str:
    return f"{site.size_change_kib:10.1f} {site.count_change:+9d} {site.size_kib:10.1f}  {site.where}"
