"""A plan's outputs: the printed summary, the sweep table, the JSON document and the self-contained HTML."""

from __future__ import annotations

import base64
import html
import itertools
import json
from pathlib import Path
from typing import Any

from orderbatch.bench.report import figure_png
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


def document(results: list[PlanResult], best: tuple[PlanResult, str] | None = None) -> dict[str, Any]:
    """The JSON document: every run (its timeline at bounded resolution) and the best setting, if swept."""
    doc: dict[str, Any] = {"runs": [result.to_json() for result in results]}
    if best is not None:
        doc["best"] = {"label": best[0].label, "reason": best[1]}
    return doc


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))


def render_plot(result: PlanResult) -> bytes:
    """PNG: running calls (and the neighbour) against the quota, 429s per second, orders finished."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    points = result.timeline
    quota = result.settings.account_concurrency
    times = [point.time_seconds for point in points]
    fig, (running, throttled, finished) = pyplot.subplots(3, 1, figsize=(8, 7), sharex=True)
    try:
        ours = [point.running_calls for point in points]
        account = [point.running_calls + point.neighbour_slots for point in points]
        running.step(times, account, where="post", label="account (with the neighbour)", color="#1f77b4")
        running.step(times, ours, where="post", label="this plan's calls", color="#2ca02c")
        running.axhline(quota, color="#d62728", linestyle="--", label=f"quota {quota}")
        running.set_ylabel("concurrent executions")
        running.set_ylim(0, max(quota, max(account, default=0)) * 1.25 + 1)
        running.legend(loc="upper right", fontsize=8)
        running.set_title(
            f"{result.label or result.workflow.map_state}: makespan {result.makespan_seconds:,.1f} s, "
            f"bound {result.bound_seconds:,.1f} s"
        )
        rates = [0.0]
        for before, after in itertools.pairwise(points):
            span = after.time_seconds - before.time_seconds
            rates.append((after.throttles - before.throttles) / span if span > 0 else 0.0)
        throttled.step(times, rates, where="pre", color="#d62728")
        throttled.set_ylabel("429s per second")
        finished.plot(times, [point.orders_finished for point in points], color="#9467bd")
        finished.axhline(result.orders, color="grey", linestyle=":")
        finished.axvline(result.bound_seconds, color="#d62728", linestyle="--", label="lower bound")
        finished.set_ylabel("orders finished")
        finished.set_xlabel("virtual seconds since the batches started")
        finished.legend(loc="lower right", fontsize=8)
        return figure_png(fig)
    finally:
        pyplot.close(fig)


def write_html(results: list[PlanResult], path: Path, best: tuple[PlanResult, str] | None = None) -> None:
    """One self-contained file: the table, each run's summary and its plot inline as base64 PNG."""
    sections = []
    for result in results:
        png = base64.b64encode(render_plot(result)).decode()
        title = result.label or f"{result.workflow.state_machine} '{result.workflow.map_state}'"
        sections.append(
            f"<section><h2>{html.escape(title)}</h2><pre>{html.escape(format_summary(result))}</pre>"
            f'<img alt="concurrency against the quota, {html.escape(title)}" '
            f'src="data:image/png;base64,{png}"></section>'
        )
    verdict = f"<p><b>Best:</b> {html.escape(best[1])}</p>" if best is not None else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>orderbatch plan</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
pre{{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px;white-space:pre-wrap}}
img{{max-width:100%}}</style>
</head><body>
<h1>orderbatch plan</h1>
<p>A virtual-time simulation of the template on AWS's quotas (docs/plan.md says what is modelled).</p>
<pre>{html.escape(format_table(results))}

{html.escape(TABLE_LEGEND)}</pre>
{verdict}
{"".join(sections)}
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
