"""examples/stock-trader, a public SAM app, tested by its own 30 lines with the package's pytest plugin:
on local clouds under two xdist workers, and with the AWS target, where the quota test is skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stock-trader"


def run_the_examples_tests(*options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", *options]
    return subprocess.run(command, cwd=EXAMPLE, capture_output=True, text=True, timeout=240)


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_the_examples_tests_pass_on_two_workers_each_with_its_cloud() -> None:
    done = run_the_examples_tests("-n", "2")

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


def test_on_the_aws_target_the_quota_test_is_skipped_saying_why() -> None:
    done = run_the_examples_tests("--sam-target=aws", "--sam-stack-name=stock-trader", "-k", "quota")

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 skipped" in done.stdout
    assert "needs the local cloud" in done.stdout
