"""The process groups the local cloud starts (runtime fork servers, emulators, `sam local`'s containers)
end with it, however it ends.

Each of them runs in a session of its own, so that stopping one kills its whole group (an emulator and
the runtime it started). A session of its own also means it outlives the local cloud when that process is
killed (SIGKILL, an out-of-memory kill, a crashed test worker): nothing would stop it. So the first group
started also starts a reaper, a small process that reads the groups from a pipe. The pipe's only writer is
the local cloud's process, so the reaper reads end-of-file exactly when that process ends, and then kills
every group it was told of that is still the same process (its start time, read from ``/proc``, guards
against a reused process ID). On a system without ``/proc`` nothing is watched.

This file is also the reaper: ``python -I process_groups.py`` (the standard library only).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any, TypeAlias

logger = logging.getLogger(__name__)

# What ``signal.signal`` answers: the handler it replaced, to set again later.
SignalHandler: TypeAlias = Callable[[int, FrameType | None], object] | int | signal.Handlers | None

_PROC = Path("/proc")
# Groups the reaper keeps before it forgets the ones that have already ended.
_PRUNE_ABOVE = 512


def start_session(command: Sequence[str], **popen_arguments: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` in a new session whose group is killed when this process ends."""
    process: subprocess.Popen[bytes] = subprocess.Popen(command, start_new_session=True, **popen_arguments)
    _REAPER.watch(process.pid)
    return process


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat``, field 22), or None."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count from after it.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


class _Reaper:
    """The host side: starts the reaper on first use and tells it each new group."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._unavailable = not (_PROC / "self" / "stat").exists()

    def watch(self, pid: int) -> None:
        started = start_time(pid)
        if started is None:
            return
        with self._lock:
            pipe = self._pipe_locked()
            if pipe is None:
                return
            try:
                pipe.write(f"{pid} {started}\n".encode())
                pipe.flush()
            except OSError:
                logger.warning("the process-group reaper is gone: group %d is not watched", pid)
                self._unavailable = True

    def _pipe_locked(self) -> IO[bytes] | None:
        if self._pipe is None and not self._unavailable:
            try:
                reaper = subprocess.Popen(
                    [sys.executable, "-I", __file__],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    # Not in this process's group: a Ctrl-C meant for the local cloud must not end it first.
                    start_new_session=True,
                )
            except OSError as error:
                logger.warning("no process-group reaper (%s): groups outlive a killed local cloud", error)
                self._unavailable = True
                return None
            self._pipe = reaper.stdin
        return self._pipe


_REAPER = _Reaper()


def reap(lines: IO[str]) -> list[int]:
    """Read ``<pid> <start time>`` lines until end-of-file; kill the groups still alive. Returns them."""
    groups: dict[int, str] = {}
    prune_above = _PRUNE_ABOVE
    for line in lines:
        pid, _, started = line.strip().partition(" ")
        if pid.isdigit() and started:
            groups[int(pid)] = started
        if len(groups) > prune_above:
            groups = {group: begun for group, begun in groups.items() if start_time(group) == begun}
            # With that many still alive, the next look waits until as many again have been told.
            prune_above = max(_PRUNE_ABOVE, 2 * len(groups))
    killed = []
    for group, begun in groups.items():
        if start_time(group) == begun:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
                killed.append(group)
    return killed


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reap(sys.stdin)


def exit_on_sigterm() -> SignalHandler:
    """Make SIGTERM unwind the ``with`` block, as Ctrl-C does, so the environments stop with the process.

    Python's default SIGTERM ends the process without running ``__exit__``; the emulators and runtimes,
    which live in their own sessions, would outlive it. Only the main thread can set a handler, and a
    handler the program set itself is left alone. Returns the handler to restore, or None.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def on_sigterm(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, on_sigterm)
