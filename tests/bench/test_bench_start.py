"""`orderbatch bench-start`: the start and reset figures, each from a run that really happened."""

from __future__ import annotations

import re

import pytest

from orderbatch.cli import main

pytestmark = pytest.mark.e2e


def test_it_prints_a_start_and_a_reset_after_each_batch(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["bench-start", "--starts", "1", "--resets", "2", "--orders", "3", "--command-starts", "1"]) == 0
    )

    printed = capsys.readouterr().out
    assert re.search(r"^first start in this process \(imports included\): \d+\.\d\d s$", printed, re.M)
    assert re.search(r"^start in the warm process: median [\d.]+ s, .* \(1 runs\)$", printed, re.M)
    assert re.search(r"^reset after a batch of 3 orders: median [\d.]+ ms, .* \(2 runs\)$", printed, re.M)
    assert re.search(r"^load average before: [\d.]+ [\d.]+ [\d.]+$", printed, re.M)
    command = re.search(
        r"^`orderbatch local up` to its first answered StartExecution: median ([\d.]+) s", printed, re.M
    )
    assert command is not None
    assert float(command.group(1)) > 0


def test_it_refuses_a_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-start", "--resets", "0"]) == 2
    assert "must be positive" in capsys.readouterr().err
