"""`orderbatch plan` end to end at a small size: text, JSON, sweep table and a self-contained HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orderbatch.cli import main


def test_the_json_document_carries_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(
        [
            "plan",
            "--orders", "200",
            "--account-concurrency", "10",
            "--map", "Process inline orders",
            "--parameter-overrides", "MapMaxConcurrency=10",
            "--fixed-durations",
            "--cold-start", "0",
            "--step-overhead", "0",
            "--work", "1",
            "--json",
        ]
    )  # fmt: skip

    document = json.loads(capsys.readouterr().out)
    (run,) = document["runs"]
    assert exit_code == 0
    assert run["makespan_seconds"] == 80.0 == run["lower_bound_seconds"]
    assert run["orders"]["succeeded"] == 200
    assert run["lambda"]["throttles_per_order"] == 0
    # 8 per order, and 5 per batch around the Map (the way in, the second pass, the summary).
    assert run["transitions"]["per_order"] == pytest.approx(8 + 5 / 200)
    assert run["dynamodb"]["write_units_per_order"] == 15.0
    assert run["lambda"]["gb_seconds_per_order"] == pytest.approx(4 * 0.25)
    assert set(run["cost_per_million_orders"]) >= {"total_standard", "total_express_children"}
    assert run["timeline"]["points"]


def test_a_sweep_prints_the_table_and_the_best_and_writes_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html_path = tmp_path / "plan.html"

    exit_code = main(
        [
            "plan",
            "--orders", "100",
            "--account-concurrency", "10",
            "--map", "Process inline orders",
            "--sweep", "MapMaxConcurrency=5,10,20",
            "--html", str(html_path),
        ]
    )  # fmt: skip

    out = capsys.readouterr().out
    assert exit_code == 0
    assert "MapMaxConcurrency=20" in out
    assert "Best: MapMaxConcurrency=10" in out
    page = html_path.read_text()
    summary = page.split('<table id="summary"', 1)[1].split("</table>", 1)[0]
    assert summary.count("<tr>") == 1 + 3  # the header, then a row per setting
    assert "MapMaxConcurrency=10 (best)" in summary
    # The sweep compared in one chart, then each setting's timeline; plotly.js inline, once.
    assert page.count('class="chart"') == 1 + 3
    assert page.count("* plotly.js v") == 1


def test_the_text_summary_names_the_parameter_and_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["plan", "--orders", "1000", "--account-concurrency", "100", "--neighbour", "20@0+30"])

    out = capsys.readouterr().out
    assert exit_code == 0
    assert "Process JSON orders from S3" in out
    assert "(template parameter MapMaxConcurrency)" in out
    assert "429s per order" in out
    assert "Cost per million orders: Standard $" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--duration", "NoSuchFunction=1"], "not a function this workflow invokes"),
        (["--duration", "ValidateOrderFunction=1,0.5"], "below the mean"),
        (["--neighbour", "five"], "SLOTS@START+DURATION"),
        (["--sweep", "MapMaxConcurrency"], "KEY=VALUE"),
        (["--parameter-overrides", "Nope=1"], "not a parameter of the template"),
    ],
)
def test_bad_options_are_refused_with_a_reason(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = main(["plan", "--orders", "10", *arguments])

    assert exit_code == 2
    assert message in capsys.readouterr().err
