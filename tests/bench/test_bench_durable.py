"""`orderbatch bench` on both orchestrators at a tiny size: one row each, side by side, in text and HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orderbatch.cli import main

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


# Two fresh local clouds, each warmed; about a minute on two shared cores.
@pytest.mark.timeout(400)
def test_a_tiny_bench_shows_the_state_machine_and_the_durable_function_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path, html_path = tmp_path / "bench.json", tmp_path / "report.html"

    exit_code = main(
        [
            "bench",
            "--orders", "4",
            "--account-concurrency", "3",
            "--work", "0.05",
            "--scenarios", "tuned",
            "--orchestrators", "stepfunctions", "durable",
            "--engine-items", "0",
            "--json", str(json_path),
            "--html", str(html_path),
        ]
    )  # fmt: skip

    assert exit_code == 0
    printed = capsys.readouterr().out
    assert re.search(r"^tuned\s+\d+\.\d", printed, re.MULTILINE), printed
    durable_row = re.search(
        r"^tuned \(durable\)\s+(\d+\.\d)\s+(\d+\.\d)\s+\S+\s+4/0/0\s", printed, re.MULTILINE
    )
    assert durable_row, printed
    assert "$/M dur = Lambda (tasks and replays)" in printed

    (scenario,) = json.loads(json_path.read_text())["scenarios"]
    durable = scenario["durable"]
    assert scenario["status"] == durable["status"] == "SUCCEEDED"
    assert durable["orders"]["succeeded"] == 4
    assert durable["orders"]["lost"] == 0
    assert durable["orders"]["final_records"] == {"SUCCEEDED": 4}
    # Every order's 4 invokes and its context, plus the execution and its map, at the least.
    assert durable["durable"]["operations"] >= 2 + 4 + 4 * 4
    # The first replay, and at least one per step for the batch.
    assert durable["lambda"]["orchestrator_invocations"] >= 1 + 4
    assert durable["makespan_seconds"] >= durable["lower_bound_seconds"] == scenario["lower_bound_seconds"]
    assert durable["cost_per_million_orders"]["durable_functions"] > 0
    assert durable["simulated"]["makespan_seconds"] > 0
    html = html_path.read_text()
    assert "tuned (durable)" in html
    assert "$/M durable" in html
