"""`orderbatch bench --scenarios soak` for well under a minute: lines per interval, every batch audited."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orderbatch.bench.soak import INTERVAL_HEADER, SoakSettings, fault_plan
from orderbatch.cli import main
from sam_local_cloud import FaultPlan

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INTERVAL_LINE = re.compile(
    r"^\s*(?P<minute>\d+\.\d)\s+(?P<batches>\d+)\s+(?P<orders>\d+)\s+(?P<lost>\d+)\s+(?P<doubled>\d+)\s+"
    r"(?P<violations>\d+)\s+(?P<rss>\d+\.\d)\s+(?P<change>-|[+-]\d+\.\d%)\s+(?P<tree_rss>\d+\.\d)\s+"
    r"(?P<pss>\d+\.\d)\s+\d+\s+(?P<rows>\d+)\s+(?P<data_plane>\d+\.\d)\s+(?P<s3>\d+\.\d\d)\s+(?P<logs>\d+\.\d\d)\s+"
    r"\d+\.\d\d \d+\.\d\d \d+\.\d\d$",
    re.MULTILINE,
)


def test_the_soak_plan_is_a_valid_fault_plan_with_every_kind_on_every_function(tmp_path: Path) -> None:
    settings = SoakSettings(template=tmp_path / "template.yaml", quota=10, fault_probability=0.05)

    plan = FaultPlan.from_dict(fault_plan(settings, cycle=3))

    assert plan.seed == settings.seed + 3
    assert plan.noisy_neighbour is not None
    assert (plan.noisy_neighbour.slots, plan.noisy_neighbour.duration_seconds) == (5, 30.0)
    assert plan.noisy_neighbour.start_after_seconds == 60.0
    for function in ("ValidateOrderFunction", "CancelOrderFunction", "SummarizeBatchFunction"):
        kinds = {
            (rule.kind, rule.phase if rule.kind == "timeout" else "") for rule in plan.functions[function]
        }
        assert {
            ("error_before_body", ""),
            ("error_after_body", ""),
            ("timeout", "before_body"),
            ("timeout", "after_body"),
            ("response_delay", ""),
            ("crash", ""),
        } <= kinds
        crash_chance = sum(rule.probability or 0 for rule in plan.functions[function] if rule.kind == "crash")
        assert crash_chance == pytest.approx(0.05)


@pytest.mark.timeout(420)
def test_a_short_soak_audits_every_batch_and_reports_memory_every_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path, html_path = tmp_path / "soak.json", tmp_path / "soak.html"

    exit_code = main(
        [
            "bench",
            "--scenarios", "soak",
            "--minutes", "0.75",
            "--report-every", "10",
            "--orders", "6",
            "--account-concurrency", "4",
            "--work", "0.05",
            "--fault-probability", "0.03",
            "--json", str(json_path),
            "--html", str(html_path),
        ]
    )  # fmt: skip

    printed = capsys.readouterr().out
    assert exit_code == 0, printed
    assert INTERVAL_HEADER in printed
    lines = INTERVAL_LINE.findall(printed)
    # 45 s of submitting at one line per 10 s, then the final line once the last batches are audited.
    assert len(lines) >= 5, printed
    assert all(
        float(tree_rss) > float(rss) > 0 and float(pss) > 0
        for *_, rss, _change, tree_rss, pss, _rows, _data_plane, _s3, _logs in lines
    )
    assert "goal (0 lost, 0 doubled, RSS flat within 5%): met (memory not judged)" in printed

    soak = json.loads(json_path.read_text())["soak"]
    batches = soak["batches"]
    assert len(batches) >= 2
    assert {batch["source"] for batch in batches} == {"inline", "s3"}
    assert soak["totals"]["batches_finished"] == len(batches)
    assert soak["totals"]["orders"] == 6 * len(batches)
    assert all(batch["orders"] == 6 and batch["lost"] == 0 and batch["doubled"] == 0 for batch in batches)
    assert (soak["totals"]["lost"], soak["totals"]["doubled"]) == (0, 0)
    last = soak["intervals"][-1]
    assert last["batches_finished"] == len(batches)
    assert last["orders"] == 6 * len(batches)
    assert last["tree_rss_mib"] > last["process_rss_mib"] > 0
    # The S3 batches' input and results, stored in the local cloud's process: data it holds, not a leak.
    assert last["s3_mib"] > 0
    # Every audited order has at least its order record in the stack's tables.
    assert last["rows"] >= last["orders"]
    assert last["data_plane_rss_mib"] > 0
    assert soak["verdict"]["checks"]["local_cloud_rss_flat"]["met"] is None
    # The printed table, line for line, for a closing note to quote.
    assert soak["minute_table"][0] == INTERVAL_HEADER
    assert soak["minute_table"][1:] == [line for line in printed.splitlines() if INTERVAL_LINE.match(line)]
    # Each batch audited once, reading only its own orders' rows: the same requests for each.
    assert len({batch["audit_work"]["api_calls"] for batch in batches if batch["status"] == "SUCCEEDED"}) <= 2
    assert soak["totals"]["injected"]["latency"] > 0
    page = html_path.read_text()
    assert page.index('<table id="summary"') < page.index('class="chart"')
    assert page.count('class="chart"') == 1
