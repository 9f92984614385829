"""Every report page in headless Chromium at 1280 px: the summary table first, with its marks; charts that
hold every run and show values on hover; nothing that scrolls sideways; nothing fetched from elsewhere.

The pages are built by the real report builders: the bench and soak pages from documents recorded by real
runs (`orderbatch bench` at 12 orders, quota 3; a 1.5-minute soak), the plan page by the planner itself,
the compat page from the runner's own result records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser_checks import chart_traces, hover_text, open_report, sideways_problems, summary

from orderbatch.bench.report import write_html as write_bench_html
from orderbatch.bench.soak_report import write_soak_html
from orderbatch.cli import main
from orderbatch.compat.report import write_html as write_compat_html
from orderbatch.compat.runner import AppResult

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# plotly.js is about 4.8 MB; the page's own tables, notes and chart data come on top of it.
MAX_PAGE_BYTES = 6_000_000


def recorded(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / name).read_text()))


@pytest.fixture(scope="module")
def bench_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = write_bench_html(recorded("bench.json"), tmp_path_factory.mktemp("bench") / "report.html")
    page = open_report(browser, path)
    yield page
    page.close()


def test_the_bench_page_opens_on_the_summary_table_with_each_scenarios_target_marked(bench_page: Any) -> None:
    scenarios = recorded("bench.json")["scenarios"]

    seen = summary(bench_page)

    assert seen["first"] == "table#summary"
    assert [row["cells"][0] for row in seen["rows"]] == [s["name"] for s in scenarios]
    expected = ["met" if s["targets"]["met"] else "missed" for s in scenarios]
    assert [row["marks"] for row in seen["rows"]] == [[mark] for mark in expected]
    assert {"met", "missed"} <= set(expected), "the recorded run should show both marks"
    # The cost of a scenario and its figures are in the row, not cut off.
    tuned = seen["rows"][0]["cells"]
    assert tuned[1] == f"{scenarios[0]['makespan_seconds']:.1f}"
    assert tuned[10] == f"{scenarios[0]['cost_per_million_orders']['total_standard']:.0f}"


def test_the_bench_page_neither_scrolls_sideways_nor_fetches_anything(bench_page: Any) -> None:
    assert sideways_problems(bench_page) == []
    assert bench_page.outside_requests == []


def test_the_bench_chart_compares_every_scenario_on_makespan_bound_429s_and_cost(bench_page: Any) -> None:
    scenarios = recorded("bench.json")["scenarios"]
    names = [s["name"] for s in scenarios]

    traces = {trace["name"]: trace for trace in chart_traces(bench_page, "scenario-comparison")}

    # The recorded run predates the durable orchestrator: the state machine's bars only.
    assert set(traces) == {
        "makespan, Step Functions",
        "bound",
        "429s per order, Step Functions",
        "cost, Standard",
        "cost, Express children",
    }
    assert all(trace["y"] == names for trace in traces.values())
    assert traces["makespan, Step Functions"]["x"] == [s["makespan_seconds"] for s in scenarios]
    assert traces["bound"]["x"] == [s["lower_bound_seconds"] for s in scenarios]
    assert traces["429s per order, Step Functions"]["x"] == [
        s["lambda"]["throttles_per_order"] for s in scenarios
    ]
    assert traces["cost, Standard"]["x"] == [
        s["cost_per_million_orders"]["total_standard"] for s in scenarios
    ]


def test_a_bar_shows_its_scenario_and_value_on_hover(bench_page: Any) -> None:
    tuned = recorded("bench.json")["scenarios"][0]

    shown = hover_text(bench_page, "#scenario-comparison .trace.bars .point path")

    assert "tuned" in shown
    assert f"makespan, Step Functions: {tuned['makespan_seconds']:.1f} s" in shown
    assert f"{tuned['bound_ratio']:.2f} x the bound" in shown


def test_each_scenario_has_its_timeline_of_concurrency_429s_and_completions(bench_page: Any) -> None:
    scenarios = recorded("bench.json")["scenarios"]

    for index, scenario in enumerate(scenarios):
        traces = {trace["name"] for trace in chart_traces(bench_page, f"timeline-{index}")}
        assert {"account (all tenants)", "this batch", "429s in that second", "orders completed"} <= traces
        assert f"quota {scenario['quota']}" in traces


def test_the_soak_page_opens_on_its_goal_and_lists_every_interval_and_batch(
    browser: Any, tmp_path: Path
) -> None:
    document = recorded("soak.json")
    path = write_soak_html(document, tmp_path / "soak.html")

    page = open_report(browser, path)
    try:
        seen = summary(page)
        tables = page.eval_on_selector_all("section table tbody", "bodies => bodies.map(b => b.rows.length)")
        traces = {trace["name"] for trace in chart_traces(page, "soak-timeline")}
        problems = sideways_problems(page)
    finally:
        page.close()

    assert seen["first"] == "table#summary"
    assert [row["cells"][0] for row in seen["rows"]] == [
        "lost orders",
        "doubled orders",
        "local cloud RSS change",
    ]
    # Short of its baseline minute, the run's memory is not judged: said so, not marked met.
    assert [row["marks"] for row in seen["rows"]] == [["met"], ["met"], ["unjudged"]]
    assert tables == [len(document["soak"]["intervals"]), len(document["soak"]["batches"])]
    assert {"tree RSS", "tree PSS", "local cloud RSS", "orders audited", "lost + doubled"} <= traces
    assert problems == []


def test_the_plan_sweep_page_compares_every_setting_and_marks_the_best(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "plan.html"
    exit_code = main(
        [
            "plan",
            "--orders", "100",
            "--account-concurrency", "10",
            "--map", "Process inline orders",
            "--sweep", "MapMaxConcurrency=5,10,20",
            "--html", str(path),
        ]
    )  # fmt: skip
    assert exit_code == 0

    page = open_report(browser, path)
    try:
        seen = summary(page)
        traces = chart_traces(page, "setting-comparison")
        timelines = page.eval_on_selector_all(
            ".chart div.plotly-graph-div[id^=timeline-]", "charts => charts.length"
        )
        problems = sideways_problems(page)
        outside = page.outside_requests
    finally:
        page.close()

    labels = [f"MapMaxConcurrency={value}" for value in (5, 10, 20)]
    assert seen["first"] == "table#summary"
    assert [row["cells"][0] for row in seen["rows"]] == [labels[0], f"{labels[1]} (best)", labels[2]]
    assert all(len(row["marks"]) == 1 for row in seen["rows"])
    assert all(trace["y"] == labels for trace in traces)
    assert {trace["name"] for trace in traces} >= {"makespan", "bound", "429s per order"}
    assert timelines == 3
    assert problems == []
    assert outside == []


def test_the_compat_page_wraps_long_causes_and_marks_each_app(browser: Any, tmp_path: Path) -> None:
    long_path = "/".join(["a-directory-name-that-goes-on"] * 12) + "/template.yaml"
    results = [
        AppResult(
            "aws/aws-sam-cli-app-templates/python3.12/step-functions-sample-app",
            True,
            True,
            "passed",
            "",
            21.4,
        ),
        AppResult(
            "aws-samples/serverless-test-samples/python-test-samples/async-lambda-dynamodb",
            True,
            False,
            "run",
            f"Lambda function failed: Unable to import module 'app': No module named 'x' at {long_path}",
            12.0,
            "FAILED",
        ),
        AppResult("someone/app", False, False, "deploy", "pip does not support python 3.7", 3.0),
        AppResult("someone/gone", False, False, "source", "someone/gone is not under /src", 0.0),
    ]
    path = write_compat_html(results, tmp_path / "compat.html", generated_at="2026-12-01T21:00:00+00:00")

    page = open_report(browser, path)
    try:
        seen = summary(page)
        traces = chart_traces(page, "stage-chart")
        problems = sideways_problems(page)
    finally:
        page.close()

    assert seen["first"] == "table#summary"
    assert [row["cells"][0] for row in seen["rows"]] == [result.id for result in results]
    assert [row["marks"] for row in seen["rows"]] == [
        ["met", "met"],
        ["met", "missed"],
        ["missed", "missed"],
        ["unjudged", "unjudged"],
    ]
    (apps,) = traces
    assert dict(zip(apps["y"], apps["x"], strict=True)) == {
        "ended as README": 1,
        "stopped at deploy": 1,
        "stopped at run": 1,
        "source not available": 1,
    }
    assert problems == []


def test_a_page_embeds_plotly_js_once_and_stays_a_few_megabytes(tmp_path: Path) -> None:
    document = recorded("bench.json")

    page = write_bench_html(document, tmp_path / "report.html").read_text()

    charts = 1 + len(document["scenarios"])
    assert page.count("* plotly.js v") == 1
    assert page.count('class="chart"') == charts
    assert "<script src=" not in page
    assert "<link" not in page
    assert len(page.encode()) < MAX_PAGE_BYTES
