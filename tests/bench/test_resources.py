"""What the benchmark counts as the local cloud's: its tree, without the sampler that measures it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from orderbatch.bench import resources


def test_the_memory_sampler_sees_the_tree_but_not_itself() -> None:
    # Given a child process holding 64 MiB, as an environment would
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; b = bytearray(64 << 20); print('x', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        holder.stdout.read(1)
        # Whatever else this test process has started (a test runner's own helpers) counts as well
        tree_before = 1 + len(resources.descendants(os.getpid()))
        peak = resources.PeakMemory(interval_seconds=0.1).start()
        time.sleep(0.5)
        sampler = peak.pids()
        peak.stop()
    finally:
        holder.kill()
        holder.wait()

    # Then the peak counts this process and the holder, not the sampler
    assert len(sampler) == 1
    assert sampler[0] != os.getpid()
    assert tree_before >= 2
    assert peak.peak_processes == tree_before
    assert peak.peak_tree_pss_mib > 64
