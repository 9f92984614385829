"""What the local cloud costs the machine: memory and CPU of its whole process tree (Linux ``/proc``).

The local cloud is one Python process plus, per execution environment, an emulator and a runtime (forked
from the runtime fork server, or started afresh). Memory is PSS summed over the tree, so pages the
runtimes share with the fork server count once; CPU is split between the local cloud's own process
(moto, the interpreter, the Lambda service, the HTTP server), its data plane (the DynamoDB worker) and
everything else below it (emulators and runtimes), including processes that ended meanwhile: their time
is in their parent's ``cutime``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children of all its threads, recursively)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for children_file in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(child) for child in children_file.read_text().split()]
            except OSError:
                continue
            found += children
            frontier += children
    return found


def _cpu_ticks(pid: int) -> tuple[int, int]:
    """(own utime+stime, reaped children's cutime+cstime) of one process, in clock ticks."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0, 0
    fields = text[text.rindex(")") + 2 :].split()
    # After the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15), counting state as 1.
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class CpuSeconds:
    local_cloud: float
    environments: float
    # The local cloud's DynamoDB worker (``localcloud.data_plane``): the local cloud's own work, in a
    # process of its own.
    data_plane: float = 0.0

    def __sub__(self, other: CpuSeconds) -> CpuSeconds:
        return CpuSeconds(
            self.local_cloud - other.local_cloud,
            self.environments - other.environments,
            self.data_plane - other.data_plane,
        )


def cpu_seconds(root: int | None = None, data_plane: Iterable[int] = ()) -> CpuSeconds:
    """CPU used so far by the local cloud's process, its data plane processes, and everything else below
    it (emulators and runtimes, ended ones too)."""
    root = os.getpid() if root is None else root
    own, reaped = _cpu_ticks(root)
    workers = set(data_plane)
    below = reaped
    worker_ticks = 0
    for pid in descendants(root):
        child_own, child_reaped = _cpu_ticks(pid)
        if pid in workers:
            worker_ticks += child_own + child_reaped
        else:
            below += child_own + child_reaped
    return CpuSeconds(own / _CLOCK_TICKS, below / _CLOCK_TICKS, worker_ticks / _CLOCK_TICKS)


@dataclass(frozen=True)
class MemorySample:
    tree_pss_mib: float
    process_rss_mib: float
    processes: int
    # Summed RSS counts the pages the runtimes share with their fork server once per process.
    tree_rss_mib: float = 0.0


def memory(root: int | None = None) -> MemorySample:
    root = os.getpid() if root is None else root
    tree = [root, *descendants(root)]
    return MemorySample(
        tree_pss_mib=sum(pss_kib(pid) for pid in tree) / 1024,
        process_rss_mib=rss_kib(root) / 1024,
        processes=len(tree),
        tree_rss_mib=sum(rss_kib(pid) for pid in tree) / 1024,
    )


class PeakMemory:
    """Samples the tree's memory every ``interval`` seconds in the background; keeps the peaks."""

    def __init__(self, interval_seconds: float = 1.0, root: int | None = None) -> None:
        self.interval_seconds = interval_seconds
        self.root = os.getpid() if root is None else root
        self.peak_tree_pss_mib = 0.0
        self.peak_process_rss_mib = 0.0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

    def start(self) -> PeakMemory:
        self._take()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._take()

    def __enter__(self) -> PeakMemory:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _take(self) -> None:
        sample = memory(self.root)
        self.peak_tree_pss_mib = max(self.peak_tree_pss_mib, sample.tree_pss_mib)
        self.peak_process_rss_mib = max(self.peak_process_rss_mib, sample.process_rss_mib)
        self.peak_processes = max(self.peak_processes, sample.processes)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            self._take()
