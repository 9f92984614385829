"""`orderbatch bench` end to end at a tiny size: the JSON has every figure, the HTML its table and charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orderbatch.bench.engine import compare_engines, measure
from orderbatch.bench.report import engine_notes
from orderbatch.cli import main

pytestmark = pytest.mark.e2e

SCENARIO_FIGURES = {
    "makespan_seconds",
    "lower_bound_seconds",
    "bound_ratio",
    "orders",
    "doubled",
    "lambda",
    "transitions",
    "dynamodb",
    "cost_per_million_orders",
    "targets",
    "series",
    "time_accounting",
    "resources",
    "simulated",
    "batches",
}


# About a minute on two idle cores, more when they are shared. The engine probe (three processes of their
# own, each a local cloud) is measured apart, below.
@pytest.mark.timeout(420)
def test_a_tiny_bench_writes_every_figure_and_a_self_contained_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path, html_path = tmp_path / "bench.json", tmp_path / "report.html"

    exit_code = main(
        [
            "bench",
            "--orders", "8",
            "--account-concurrency", "2",
            "--work", "0.05",
            "--scenarios", "tuned", "oversubscribed",
            "--orchestrators", "stepfunctions",
            "--engine-items", "0",
            "--json", str(json_path),
            "--html", str(html_path),
        ]
    )  # fmt: skip

    assert exit_code == 0
    printed = capsys.readouterr().out
    assert re.search(r"^tuned\s+\d+\.\d", printed, re.MULTILINE), printed
    assert re.search(r"^oversubscribed\s+\d+\.\d", printed, re.MULTILINE), printed
    assert "Unit prices (" in printed

    document = json.loads(json_path.read_text())
    assert [s["name"] for s in document["scenarios"]] == ["tuned", "oversubscribed"]
    assert set(document["unit_prices"]) >= {"as_of", "standard_per_transition", "lambda_per_gb_second"}
    for scenario in document["scenarios"]:
        assert set(scenario) >= SCENARIO_FIGURES, scenario["name"]
        assert scenario["status"] == "SUCCEEDED"
        assert scenario["orders"] == {
            "total": 8,
            "succeeded": 8,
            "failed": 0,
            "lost": 0,
            "outcomes": {"SUCCEEDED": 8},
            "failure_codes": {},
            "failure_errors": {},
        }
        assert scenario["doubled"] == 0
        assert scenario["lower_bound_seconds"] == pytest.approx(max(8 * 4 * 0.05 / 2, 4 * 0.05))
        assert scenario["makespan_seconds"] >= scenario["lower_bound_seconds"]
        # Each order ran at least its four steps; a first run writes its effect and idempotency records.
        assert scenario["lambda"]["invocations"] >= 8 * 4 + 1
        assert scenario["transitions"]["per_order"] >= 8
        assert scenario["dynamodb"]["write_units_per_order"] >= 4
        assert len(scenario["series"]["completion_times"]) == 8
        assert scenario["series"]["concurrency"], "the concurrency time series is empty"
        cost = scenario["cost_per_million_orders"]
        assert cost["total_standard"] > 0
        assert cost["total_express_children"] > 0
        used = scenario["resources"]
        assert used["cpu_ms_per_task"]["local_cloud"] > 0
        assert used["cpu_ms_per_task"]["environments"] > 0  # the runtimes' own CPU is counted too
        # The DynamoDB data plane's CPU is the local cloud's own, counted apart from the environments'
        assert used["cpu_ms_per_task"]["data_plane"] > 0
        # The yardstick: every task's handler wrote down its own CPU, and the rest is the emulation's.
        assert used["handler_invocations"] == scenario["lambda"]["invocations"]
        assert 0 < used["handler_cpu_ms"] < used["total_cpu_ms"]
        assert used["overhead_factor"] == pytest.approx(
            (used["total_cpu_ms"] - used["handler_cpu_ms"]) / used["handler_cpu_ms"], abs=0.02
        )
        assert set(used["data_plane_cpu_ms"]) >= {"PutItem (conditional)", "TransactWriteItems"}
        assert all(ms > 0 for ms in used["data_plane_cpu_ms"].values())
        assert used["peak_tree_pss_mib"] >= used["tree_pss_mib_before"] > 0
        assert used["peak_processes"] > 2 * 4  # a runtime and its stub per warm environment, at least
        assert scenario["simulated"]["makespan_seconds"] >= scenario["lower_bound_seconds"]
    oversubscribed = document["scenarios"][1]
    assert oversubscribed["max_concurrency"] == 6
    assert oversubscribed["lambda"]["throttles"] > 0, "a Map of 3x the quota was never throttled"
    assert oversubscribed["lambda"]["throttled_task_events"] == oversubscribed["lambda"]["throttles"]
    assert document["engine"] is None
    assert "engine:" not in printed

    page = html_path.read_text()
    summary = page.split('<table id="summary"', 1)[1].split("</table>", 1)[0]
    assert summary.count("<tr>") == 1 + 2  # the header, then a row per scenario
    assert page.count('class="chart"') == 1 + 2  # every scenario compared, then each one's timeline
    # Self-contained: plotly.js inline once, nothing loads from elsewhere (prices' sources are text)
    assert page.count("* plotly.js v") == 1
    assert "<script src=" not in page
    assert "<link" not in page


@pytest.mark.timeout(240)
def test_the_scale_scenario_runs_batches_back_to_back_through_the_distributed_map(tmp_path: Path) -> None:
    json_path = tmp_path / "bench.json"

    exit_code = main(
        [
            "bench",
            "--orders", "12",
            "--account-concurrency", "3",
            "--scenarios", "scale",
            "--batches", "2",
            "--engine-items", "0",
            "--json", str(json_path),
            "--html", str(tmp_path / "report.html"),
        ]
    )  # fmt: skip

    scale = json.loads(json_path.read_text())["scenarios"][0]
    assert exit_code == 0
    assert scale["name"] == "scale"
    assert scale["orders"]["succeeded"] == 12
    assert scale["lower_bound_seconds"] == 0  # d = 0: the makespan is the local cloud's own time
    assert scale["lambda"]["invocations"] >= 12 * 4
    assert scale["lambda"]["tasks_per_second"] > 0
    assert scale["simulated"] is None
    assert [(b["batch"], b["status"], b["lost"], b["doubled"]) for b in scale["batches"]] == [
        (1, "SUCCEEDED", 0, 0),
        (2, "SUCCEEDED", 0, 0),
    ]
    assert all(b["tree_pss_mib_after"] > 0 for b in scale["batches"])


@pytest.mark.timeout(420)
def test_a_repeated_noisy_neighbour_run_counts_orders_failed_by_throttling_over_every_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path = tmp_path / "bench.json"

    exit_code = main(
        [
            "bench",
            "--orders", "6",
            "--account-concurrency", "2",
            "--work", "0.05",
            "--scenarios", "noisy-neighbour",
            "--orchestrators", "stepfunctions", "durable",
            "--repeat", "2",
            "--neighbour-seconds", "1.5",
            "--engine-items", "0",
            "--json", str(json_path),
            "--html", str(tmp_path / "report.html"),
        ]
    )  # fmt: skip

    assert exit_code == 0
    (scenario,) = json.loads(json_path.read_text())["scenarios"]
    batches = scenario["batches"]
    exhaustion = scenario["throttle_exhaustion"]
    assert scenario["neighbour"] == {"slots": 1, "start_seconds": 0.0, "duration_seconds": 1.5}
    assert [batch["batch"] for batch in batches] == [1, 2]
    assert exhaustion["batches"] == 2
    assert exhaustion["orders"] == 12
    assert exhaustion["failed_by_throttling"] == sum(batch["failed_by_throttling"] for batch in batches)
    assert exhaustion["longest_throttle_streak"] == max(batch["longest_throttle_streak"] for batch in batches)
    for batch in batches:
        assert (batch["lost"], batch["doubled"], batch["violations"]) == (0, 0, 0)
        # A streak is made of 429s, and one neighbour slot of two throttles some call within 1.5 s.
        assert 1 <= batch["longest_throttle_streak"] <= batch["throttles"]
    # The durable orchestrator repeats its batch too; its 429s leave no history, so no streak.
    durable = scenario["durable"]
    assert [batch["batch"] for batch in durable["batches"]] == [1, 2]
    assert durable["throttle_exhaustion"]["orders"] == 12
    assert durable["throttle_exhaustion"]["longest_throttle_streak"] is None
    for batch in durable["batches"]:
        assert batch["status"] == "SUCCEEDED"
        assert batch["failed"] == batch["final_records"].get("FAILED", 0)
    assert "over 2 batch(es)" in capsys.readouterr().out


@pytest.mark.timeout(120)
def test_one_engine_measurement_times_its_items_after_a_warm_up() -> None:
    # In this process: the probe's own runs each take a fresh one (the slow test below)
    measured = measure("patched", items=8, max_concurrency=2, timeout_seconds=90)

    assert (measured["interpreter"], measured["items"], measured["max_concurrency"]) == ("patched", 8, 2)
    # Both figures are rounded from one measurement: seconds to 0.01, the rate to 0.1
    seconds = measured["seconds"]
    assert seconds > 0
    slowest, fastest = 8 / (seconds + 0.005), 8 / max(seconds - 0.005, 1e-9)
    assert slowest - 0.05 <= measured["tasks_per_second"] <= fastest + 0.05


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_engine_probe_compares_the_local_cloud_with_moto_alone_and_the_app_handlers() -> None:
    engine = compare_engines(20)

    assert engine["local_cloud"]["tasks_per_second"] > 0
    assert engine["moto_alone"]["tasks_per_second"] > 0
    assert engine["ratio"] == pytest.approx(
        engine["local_cloud"]["tasks_per_second"] / engine["moto_alone"]["tasks_per_second"], abs=0.01
    )
    assert engine["app_handlers"]["tasks"] >= 4 * engine["app_handlers"]["orders"]
    notes = engine_notes({"engine": engine})
    assert notes[0].startswith("engine: local cloud ")
    assert notes[1].startswith("engine, the app's real handlers: ")
