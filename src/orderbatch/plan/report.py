"""A plan's outputs: the printed summary, the sweep table, the JSON document and the self-contained HTML."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from orderbatch import reports
from orderbatch.plan.durable import DurableResult
from orderbatch.plan.results import PlanResult

TABLE_COLUMNS = (
    ("setting", 26),
    ("makespan s", 11),
    ("bound s", 10),
    ("ratio", 6),
    ("failed", 8),
    ("429/ord", 8),
    ("retry/ord", 9),
    ("trans/ord", 9),
    ("GB-s/ord", 8),
    ("WRU/ord", 7),
    ("$/M std", 8),
    ("$/M expr", 8),
)


def format_summary(result: PlanResult) -> str:
    workflow, settings, counters = result.workflow, result.settings, result.counters
    concurrency = workflow.effective_concurrency(settings.max_concurrency)
    feeds = (
        f" (template parameter {workflow.max_concurrency_parameter})"
        if workflow.max_concurrency_parameter and settings.max_concurrency is None
        else ""
    )
    throttle_retry = workflow.forward[0].throttle_retry
    retrier = throttle_retry.describe() if throttle_retry else "not retried (straight to Catch)"
    path = " -> ".join(step.state_name for step in workflow.forward)
    compensation = ", ".join(step.state_name for step in workflow.compensation) or "none"
    cost = result.cost_per_million_orders
    ratio = result.bound_ratio
    lines = [
        f"Plan of {workflow.state_machine} '{workflow.map_state}' ({workflow.kind}), "
        f"MaxConcurrency {concurrency}{feeds}, retrier '{workflow.retrier}'.",
        f"  {settings.batches} batch(es) x {settings.orders:,} orders, {len(workflow.forward)} Lambda tasks "
        f"per order: {path}; compensation: {compensation}.",
        f"  Account quota {settings.account_concurrency} ({counters.unreserved_pool} unreserved); "
        f"429s retried: {retrier}.",
        f"Makespan {result.makespan_seconds:,.1f} s; bound max(N.k.d/C, k.d) {result.bound_seconds:,.1f} s"
        + ("" if ratio is None else f"; ratio {ratio:.2f}")
        + ".",
        "Throughput each quota allows: "
        + ", ".join(f"{name} {value:,.0f} orders/s" for name, value in result.throughput_limits().items())
        + f"; the tightest: {result.limited_by} "
        f"({result.orders:,} orders take about "
        f"{result.orders / result.throughput_limits()[result.limited_by]:,.0f} s at that rate, "
        "less any burst).",
        f"Orders: {counters.succeeded:,} succeeded, {counters.failed:,} failed after their retries "
        f"({counters.failed_throttled:,} on 429s, {counters.failed_timed_out:,} on timeouts): "
        f"{counters.compensated:,} compensated, {counters.compensation_failed:,} compensation failed.",
        f"Lambda: {result.throttles_per_order:.3f} 429s per order, "
        f"{result.retries_per_order:.3f} retries per order, {result.calls_per_order:.2f} calls per order, "
        f"{sum(counters.cold_starts):,} cold starts, "
        f"peak {counters.peak_busy} running (account incl. neighbour {counters.peak_account}) of "
        f"{settings.account_concurrency}; {result.gb_seconds_per_order:.4f} GB-s per order.",
        f"Step Functions: {result.transitions_per_order:.2f} billed transitions per order "
        "(retries included), "
        f"{counters.transition_wait_seconds:,.1f} s waited for the transitions quota, "
        f"{counters.start_execution_wait_seconds:,.1f} s for StartExecution (summed over orders).",
        f"DynamoDB: {result.write_units_per_order:.1f} write units per order.",
        f"Cost per million orders: Standard ${cost['total_standard']:,.2f} (Lambda ${cost['lambda']:,.2f}, "
        f"DynamoDB ${cost['dynamodb']:,.2f}, Step Functions ${cost['step_functions_standard']:,.2f}); "
        f"Express children ${cost['total_express_children']:,.2f}.",
    ]
    lines.extend(f"Note: {note}" for note in workflow.notes)
    lines.append(
        f"Simulated in {result.wall_seconds:.2f} s (virtual time, seed {settings.seed}; "
        f"{sum(counters.calls) + result.throttles:,} call attempts)."
    )
    return "\n".join(lines)


def format_durable_summary(result: DurableResult) -> str:
    settings, counters, model = result.settings, result.counters, result.model
    cost = result.cost_per_million_orders
    ratio = result.bound_ratio
    lines = [
        f"Durable plan of DurableOrderBatchFunction: {settings.batches} execution(s) x {settings.orders:,} "
        f"orders, map max_concurrency {result.max_concurrency}, replay {model.replay_base_seconds:g} s + "
        f"{model.replay_per_operation_seconds:g} s per checkpointed operation (assumed).",
        f"Makespan {result.makespan_seconds:,.1f} s; bound {result.bound_seconds:,.1f} s"
        + ("" if ratio is None else f"; ratio {ratio:.2f}")
        + ".",
        f"Orders: {counters.succeeded:,} succeeded, {counters.failed_throttled:,} failed after their 429 "
        f"retries ({counters.compensated:,} compensated, {counters.compensation_failed:,} compensation "
        "failed).",
        f"Lambda: {result.throttles_per_order:.3f} 429s per order ({counters.task_throttles:,} on chained "
        f"invokes, {counters.orchestrator_throttles:,} on the orchestrator's own invocations), "
        f"{counters.orchestrator_invocations:,} orchestrator invocations ({result.replays_per_order:.3f} "
        f"per order, {counters.orchestrator_seconds:,.1f} s replaying), {counters.cold_starts:,} cold "
        f"starts, peak {counters.peak_concurrency} running of {settings.account_concurrency}.",
        f"Durable: {result.operations_per_order:.2f} operations per order ({counters.waits:,} waits); "
        f"at most {counters.max_operations_per_execution:,} in one execution (limit 25,000"
        + ("; OVER IT: split the batches" if result.over_operations_limit else "")
        + ").",
        f"Cost per million orders: ${cost['total_durable']:,.2f} (Lambda ${cost['lambda']:,.2f}, "
        f"DynamoDB ${cost['dynamodb']:,.2f}, durable functions ${cost['durable_functions']:,.2f}).",
        f"Simulated in {result.wall_seconds:.2f} s (virtual time, seed {settings.seed}).",
    ]
    return "\n".join(lines)


SIDE_BY_SIDE_COLUMNS = (
    ("orchestrator", 28),
    ("makespan s", 11),
    ("bound s", 10),
    ("ratio", 6),
    ("failed", 8),
    ("429/ord", 8),
    ("invoc/ord", 9),
    ("$/M", 9),
)


def format_side_by_side(sfn: PlanResult, durable: DurableResult) -> str:
    """One line per orchestrator: the same batch, quota and durations; invoc/ord counts every Lambda
    invocation (tasks, and for durable functions the orchestrator's replays)."""

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, (_, width)) in enumerate(zip(cells, SIDE_BY_SIDE_COLUMNS, strict=True))
        )

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    sfn_cost = sfn.cost_per_million_orders
    durable_cost = durable.cost_per_million_orders
    durable_calls = durable.counters.task_calls + durable.counters.orchestrator_invocations
    rows = [
        [
            "Step Functions Standard",
            f"{sfn.makespan_seconds:,.1f}",
            f"{sfn.bound_seconds:,.1f}",
            ratio(sfn.bound_ratio),
            f"{sfn.failed_orders:,}",
            f"{sfn.throttles_per_order:.3f}",
            f"{sfn.calls_per_order:.2f}",
            f"{sfn_cost['total_standard']:,.2f}",
        ],
        [
            "Step Functions Express child",
            "",
            "",
            "",
            "",
            "",
            "",
            f"{sfn_cost['total_express_children']:,.2f}",
        ],
        [
            "durable function",
            f"{durable.makespan_seconds:,.1f}",
            f"{durable.bound_seconds:,.1f}",
            ratio(durable.bound_ratio),
            f"{durable.failed_orders:,}",
            f"{durable.throttles_per_order:.3f}",
            f"{durable_calls / durable.orders:.2f}",
            f"{durable_cost['total_durable']:,.2f}",
        ],
    ]
    header = line([name for name, _ in SIDE_BY_SIDE_COLUMNS])
    return "\n".join([header, "-" * len(header), *(line(row) for row in rows)])


def _cells(result: PlanResult) -> list[str]:
    cost = result.cost_per_million_orders
    ratio = result.bound_ratio
    return [
        result.label or result.workflow.retrier,
        f"{result.makespan_seconds:,.1f}",
        f"{result.bound_seconds:,.1f}",
        "-" if ratio is None else f"{ratio:.2f}",
        f"{result.failed_orders:,}",
        f"{result.throttles_per_order:.3f}",
        f"{result.retries_per_order:.3f}",
        f"{result.transitions_per_order:.2f}",
        f"{result.gb_seconds_per_order:.3f}",
        f"{result.write_units_per_order:.1f}",
        f"{cost['total_standard']:,.0f}",
        f"{cost['total_express_children']:,.0f}",
    ]


def format_table(results: list[PlanResult]) -> str:
    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, (_, width)) in enumerate(zip(cells, TABLE_COLUMNS, strict=True))
        )

    header = line([name for name, _ in TABLE_COLUMNS])
    return "\n".join([header, "-" * len(header), *(line(_cells(result)) for result in results)])


TABLE_LEGEND = (
    "failed = orders whose tasks ran out of retries (then compensated); 429/ord = throttled calls per "
    "order; retry/ord = retries per order (429s and timeouts); trans/ord = billed state transitions per "
    "order; WRU/ord = DynamoDB write units per order; $/M = modelled dollars per million orders, std = "
    "Standard workflow, expr = Distributed Map with Express children."
)


def document(
    results: list[PlanResult],
    best: tuple[PlanResult, str] | None = None,
    durable: list[DurableResult] | None = None,
) -> dict[str, Any]:
    """The JSON document: every run (its timeline at bounded resolution), the best setting, if swept, and
    the durable function's runs of the same batch, if planned."""
    doc: dict[str, Any] = {"runs": [result.to_json() for result in results]}
    if durable:
        doc["durable_runs"] = [result.to_json() for result in durable]
    if best is not None:
        doc["best"] = {"label": best[0].label, "reason": best[1]}
    return doc


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))


SUMMARY_COLUMNS = (
    reports.Column("setting", numeric=False),
    reports.Column("makespan s", explanation="virtual seconds from the first order to the last"),
    reports.Column("bound s", explanation="max(N.k.d / C, k.d): no setting finishes sooner"),
    reports.Column("ratio", explanation="makespan / bound"),
    reports.Column("failed", explanation="orders whose tasks ran out of retries (then compensated)"),
    reports.Column("429 / ord", explanation="throttled calls per order"),
    reports.Column("retry / ord", explanation="retries per order (429s and timeouts)"),
    reports.Column("trans / ord", explanation="billed state transitions per order"),
    reports.Column("GB-s / ord", explanation="Lambda GB-seconds per order"),
    reports.Column("WRU / ord", explanation="DynamoDB write units per order"),
    reports.Column("$/M std", explanation="modelled dollars per million orders, Standard workflow"),
    reports.Column("$/M expr", explanation="modelled dollars per million orders, Express children"),
    reports.Column(
        "every order succeeded", numeric=False, explanation="target: no order failed after its retries"
    ),
)


def _title(result: PlanResult) -> str:
    return result.label or f"{result.workflow.state_machine} '{result.workflow.map_state}'"


def summary_table(results: list[PlanResult], best: tuple[PlanResult, str] | None) -> reports.Table:
    rows: list[list[reports.Cell]] = []
    for result in results:
        cells: list[reports.Cell] = [None if cell == "-" else cell for cell in _cells(result)]
        if best is not None and result is best[0]:
            cells[0] = f"{cells[0]} (best)"
        failed = result.failed_orders
        rows.append([*cells, reports.Mark(failed == 0, "" if failed == 0 else f"{failed:,} failed")])
    first = results[0].settings
    return reports.Table(
        SUMMARY_COLUMNS,
        rows,
        caption=f"Summary: {first.batches} batch(es) x {first.orders:,} orders, account quota "
        f"{first.account_concurrency:,}",
        element_id="summary",
        wide=True,
    )


def comparison(results: list[PlanResult]) -> reports.Chart:
    """Every setting side by side: makespan against the bound, 429s per order, cost per million orders."""
    ratios = ["" if r.bound_ratio is None else f"{r.bound_ratio:.2f} x the bound" for r in results]
    return reports.comparison_chart(
        [_title(result) for result in results],
        [
            reports.BarsPanel(
                "Makespan against the bound",
                [
                    reports.Bars("makespan", [r.makespan_seconds for r in results], "{:,.1f} s", ratios),
                    reports.Bars("bound", [r.bound_seconds for r in results], "{:,.1f} s"),
                ],
                axis_title="virtual seconds",
            ),
            reports.BarsPanel(
                "429s per order",
                [reports.Bars("429s per order", [r.throttles_per_order for r in results], "{:,.3f}")],
                axis_title="throttled calls per order",
            ),
            reports.BarsPanel(
                "Cost per million orders",
                [
                    reports.Bars(
                        "cost, Standard",
                        [r.cost_per_million_orders["total_standard"] for r in results],
                        "${:,.0f}",
                    ),
                    reports.Bars(
                        "cost, Express children",
                        [r.cost_per_million_orders["total_express_children"] for r in results],
                        "${:,.0f}",
                    ),
                ],
                axis_title="dollars (modelled)",
            ),
        ],
        title="Every setting: makespan against the bound, 429s per order, cost per million orders",
        element_id="setting-comparison",
    )


def timeline(result: PlanResult, element_id: str) -> reports.Chart:
    """Running calls (and the neighbour) against the quota, 429s per second, orders finished."""
    points = result.timeline
    times = [point.time_seconds for point in points]
    rates = [0.0]
    for before, after in itertools.pairwise(points):
        span = after.time_seconds - before.time_seconds
        rates.append((after.throttles - before.throttles) / span if span > 0 else 0.0)
    quota = result.settings.account_concurrency
    return reports.timeline_chart(
        [
            reports.TimePanel(
                "concurrent executions",
                [
                    reports.Line(
                        "account (with the neighbour)",
                        times,
                        [point.running_calls + point.neighbour_slots for point in points],
                        step=True,
                    ),
                    reports.Line(
                        "this plan's calls", times, [point.running_calls for point in points], step=True
                    ),
                ],
                references=[reports.Reference(quota, f"quota {quota:,}")],
            ),
            reports.TimePanel(
                "429s per second", [reports.Line("429s per second", times, rates, number_format=",.1f")]
            ),
            reports.TimePanel(
                "orders finished",
                [reports.Line("orders finished", times, [point.orders_finished for point in points])],
                references=[
                    reports.Reference(result.orders, "orders in the plan"),
                    reports.Reference(result.bound_seconds, "lower bound", vertical=True),
                ],
            ),
        ],
        title=f"{_title(result)}: makespan {result.makespan_seconds:,.1f} s, "
        f"bound {result.bound_seconds:,.1f} s",
        x_title="virtual seconds since the batches started",
        element_id=element_id,
    )


def report_page(results: list[PlanResult], best: tuple[PlanResult, str] | None = None) -> reports.Page:
    """The summary table first, every setting compared when there are several, then each run."""
    page = reports.Page(
        "orderbatch plan",
        subtitle="A virtual-time simulation of the template on AWS's quotas "
        "(docs/plan.md says what is modelled).",
    )
    page.add(summary_table(results, best))
    if best is not None:
        page.add(reports.Notes([f"Best: {best[1]}"], bullets=False))
    if len(results) > 1:
        page.add(comparison(results))
    page.add(reports.Notes([TABLE_LEGEND], bullets=False))
    for index, result in enumerate(results):
        section = reports.Section(_title(result), element_id=f"run-{index}")
        section.add(reports.Notes(format_summary(result).splitlines()))
        section.add(timeline(result, f"timeline-{index}"))
        page.add(section)
    return page


def write_html(results: list[PlanResult], path: Path, best: tuple[PlanResult, str] | None = None) -> Path:
    """One self-contained file: tables, notes and interactive charts (plotly.js inline, once)."""
    return report_page(results, best).write(path)
