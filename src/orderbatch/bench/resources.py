"""What the local cloud costs the machine: memory and CPU of its whole process tree (Linux ``/proc``).

The local cloud is one Python process plus, per execution environment, a runtime (forked from the runtime
fork server, or started afresh) and the stub that waits for it. Memory is PSS summed over the tree, so
pages the runtimes share with the fork server count once; CPU is split between the local cloud's own process
(moto, the interpreter, the Lambda service, the HTTP server), its data plane (the DynamoDB worker) and
everything else below it (runtimes and their stubs), including processes that ended meanwhile: their time
is in their parent's ``cutime``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    # The local cloud's DynamoDB worker (``sam_local_cloud.data_plane``): the local cloud's own work, in a
    # process of its own.
    data_plane: float = 0.0

    def __sub__(self, other: CpuSeconds) -> CpuSeconds:
        return CpuSeconds(
            self.local_cloud - other.local_cloud,
            self.environments - other.environments,
            self.data_plane - other.data_plane,
        )


def cpu_seconds(
    root: int | None = None, data_plane: Iterable[int] = (), exclude: Iterable[int] = ()
) -> CpuSeconds:
    """CPU used so far by the local cloud's process, its data plane processes, and everything else below
    it (runtimes and their stubs, ended ones too), leaving out ``exclude`` (the measurement's own)."""
    root = os.getpid() if root is None else root
    own, reaped = _cpu_ticks(root)
    workers = set(data_plane)
    left_out = set(exclude)
    below = reaped
    worker_ticks = 0
    for pid in descendants(root):
        if pid in left_out:
            continue
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


def memory(root: int | None = None, exclude: Iterable[int] = ()) -> MemorySample:
    root = os.getpid() if root is None else root
    left_out = set(exclude)
    tree = [root, *(pid for pid in descendants(root) if pid not in left_out)]
    return MemorySample(
        tree_pss_mib=sum(pss_kib(pid) for pid in tree) / 1024,
        process_rss_mib=rss_kib(root) / 1024,
        processes=len(tree),
        tree_rss_mib=sum(rss_kib(pid) for pid in tree) / 1024,
    )


class PeakMemory:
    """Samples the tree's memory every ``interval`` seconds in a process of its own; keeps the peaks.

    Reading ``smaps_rollup`` makes the kernel walk a process's page tables: for 150 processes every
    second, it was half of what a benchmarked local cloud's own process did during a batch. The sampler
    therefore runs apart (this file run by path: standard library only), and ``pids`` lets the CPU figures
    leave it out; its own memory is left out of the samples.
    """

    def __init__(self, interval_seconds: float = 1.0, root: int | None = None) -> None:
        self.interval_seconds = interval_seconds
        self.root = os.getpid() if root is None else root
        self.peak_tree_pss_mib = 0.0
        self.peak_process_rss_mib = 0.0
        self.peak_processes = 0
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, seed: MemorySample | None = None) -> PeakMemory:
        """``seed``: a sample already taken of this tree in the window measured, counted in the peaks."""
        if seed is not None:
            self.peak_tree_pss_mib = max(self.peak_tree_pss_mib, seed.tree_pss_mib)
            self.peak_process_rss_mib = max(self.peak_process_rss_mib, seed.process_rss_mib)
            self.peak_processes = max(self.peak_processes, seed.processes)
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                __file__,
                "--root",
                str(self.root),
                "--interval",
                str(self.interval_seconds),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        return self

    def pids(self) -> list[int]:
        return [self._process.pid] if self._process is not None else []

    def stop(self) -> None:
        """The peaks, with a last sample taken now."""
        if self._process is None:
            return
        output, _ = self._process.communicate(timeout=60)  # closing its input makes it answer and exit
        self._process = None
        peaks = json.loads(output.decode().strip().splitlines()[-1])
        self.peak_tree_pss_mib = max(self.peak_tree_pss_mib, peaks["tree_pss_mib"])
        self.peak_process_rss_mib = max(self.peak_process_rss_mib, peaks["process_rss_mib"])
        self.peak_processes = max(self.peak_processes, peaks["processes"])

    def __enter__(self) -> PeakMemory:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _sample_until_stdin_closes(root: int, interval_seconds: float) -> dict[str, float]:
    """Peaks of the tree under ``root`` (this process left out); a last sample once stdin closes."""
    closed = threading.Event()

    def wait_for_end_of_input() -> None:
        sys.stdin.buffer.read()
        closed.set()

    threading.Thread(target=wait_for_end_of_input, daemon=True).start()
    peaks = {"tree_pss_mib": 0.0, "process_rss_mib": 0.0, "processes": 0.0}
    own = os.getpid()
    while True:
        stopping = closed.is_set()
        sample = memory(root, exclude=(own,))
        peaks["tree_pss_mib"] = max(peaks["tree_pss_mib"], sample.tree_pss_mib)
        peaks["process_rss_mib"] = max(peaks["process_rss_mib"], sample.process_rss_mib)
        peaks["processes"] = max(peaks["processes"], sample.processes)
        if stopping:
            return peaks
        closed.wait(interval_seconds)


if __name__ == "__main__":
    _arguments = sys.argv[1:]
    _root = int(_arguments[_arguments.index("--root") + 1])
    _interval = float(_arguments[_arguments.index("--interval") + 1])
    print(json.dumps(_sample_until_stdin_closes(_root, _interval)), flush=True)


def handler_cpu(folder: Path) -> tuple[float, int]:
    """CPU seconds the functions' handlers spent in their own threads, and their invocations, as the
    runtimes wrote them down (``LocalCloudConfig.measure_handler_cpu``): one file per runtime process."""
    seconds, invocations = 0.0, 0
    for record in folder.glob("*") if folder.is_dir() else ():
        try:
            spent, count = record.read_text().split()
        except (OSError, ValueError):  # a runtime killed mid-write: its last whole figures are lost
            continue
        seconds += float(spent)
        invocations += int(count)
    return seconds, invocations
