"""What the local cloud leaves behind: the process groups it starts end with its process, however it ends,
and the state directory it made for itself goes with the cloud."""

from __future__ import annotations

import gc
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from orderbatch.faults.linearizability_workload import TEMPLATE as ONE_TABLE_TEMPLATE
from sam_local_cloud import LocalCloud, LocalCloudConfig
from sam_local_cloud.process_groups import reap, start_time


def alive(pid: int) -> bool:
    state = start_time(pid)
    if state is None:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_group_outlives_a_killed_parent_only_when_not_started_through_start_session() -> None:
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import subprocess, sys, time
                from sam_local_cloud.process_groups import start_session
                watched = start_session(["sleep", "300"])
                plain = subprocess.Popen(["sleep", "300"], start_new_session=True)
                print(watched.pid, plain.pid, flush=True)
                time.sleep(300)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    watched, plain = (int(pid) for pid in parent.stdout.readline().split())
    try:
        assert alive(watched)
        assert alive(plain)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)

        assert gone_within(watched, 10), "the watched group outlived the killed process that started it"
        assert alive(plain)
    finally:
        for pid in (watched, plain):
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_the_reaper_kills_only_groups_that_are_still_the_process_it_was_told_of() -> None:
    same = subprocess.Popen(["sleep", "300"], start_new_session=True)
    reused = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        # A process ID the reaper was told of with another start time stands for a process that ended.
        told = f"{same.pid} {start_time(same.pid)}\n{reused.pid} 1\nnot a line\n"

        killed = reap(io.StringIO(told))

        assert killed == [same.pid]
        assert same.wait(5) == -signal.SIGKILL
        assert reused.poll() is None
    finally:
        for process in (same, reused):
            if process.poll() is None:
                process.kill()
            process.wait()


def test_a_state_directory_the_cloud_made_goes_with_the_cloud_and_a_given_one_stays(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(ONE_TABLE_TEMPLATE)
    given = tmp_path / "given"
    given.mkdir()
    (given / "the-callers-file").write_text("kept\n")

    made_for_itself = LocalCloud(LocalCloudConfig(template=template, enforce_iam=False))
    with made_for_itself:
        made = made_for_itself.state_dir
    kept = LocalCloud(LocalCloudConfig(template=template, enforce_iam=False, state_dir=given))
    with kept:
        pass

    # What a run logged is still there to read after stop(), while the cloud object is.
    assert made.is_dir()
    (made / "logs").mkdir(exist_ok=True)
    (made / "logs" / "a-function.log").write_text("a run's log line\n")
    del made_for_itself, kept
    gc.collect()
    assert not made.exists()
    assert (given / "the-callers-file").read_text() == "kept\n"
