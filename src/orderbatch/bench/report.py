"""The benchmark's outputs: the printed table, the JSON document and the self-contained HTML report."""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

COLUMNS = (
    ("scenario", 16),
    ("makespan s", 10),
    ("bound s", 8),
    ("ratio", 6),
    ("ok/fail/lost", 13),
    ("doubled", 7),
    ("calls/ord", 9),
    ("429/ord", 7),
    ("trans/ord", 9),
    ("WRU/ord", 7),
    ("$/M std", 8),
    ("$/M expr", 8),
    ("tasks/s", 7),
    ("cpu ms/task", 14),
    ("peak PSS", 8),
    ("target", 9),
)


def _row(figures: dict[str, Any]) -> list[str]:
    orders = figures["orders"]
    cost = figures["cost_per_million_orders"]
    targets = figures["targets"]
    if targets["compare_with"]:
        verdict = f"vs {targets['compare_with']}"
    else:
        verdict = "met" if targets["met"] else "MISSED"
    ratio = figures["bound_ratio"]
    children_counted = figures.get("source", "inline") == "inline"
    return [
        figures["name"],
        f"{figures['makespan_seconds']:.1f}",
        f"{figures['lower_bound_seconds']:.1f}",
        "-" if ratio is None else f"{ratio:.2f}",
        f"{orders['succeeded']}/{orders['failed']}/{orders['lost']}",
        str(figures["doubled"]),
        f"{figures['lambda']['attempts_per_order']:.2f}",
        f"{figures['lambda']['throttles_per_order']:.2f}",
        f"{figures['transitions']['per_order']:.1f}" if children_counted else "-",
        f"{figures['dynamodb']['write_units_per_order']:.1f}",
        f"{cost['total_standard']:.0f}" if children_counted else "-",
        f"{cost['total_express_children']:.0f}" if children_counted else "-",
        f"{figures['lambda']['invocations'] / figures['makespan_seconds']:.0f}"
        if figures["makespan_seconds"]
        else "-",
        "{local_cloud:.1f}+{data_plane:.1f}+{environments:.1f}".format(
            **{"data_plane": 0.0, **figures["resources"]["cpu_ms_per_task"]}
        ),
        f"{figures['resources']['peak_tree_pss_mib']:.0f}",
        verdict,
    ]


def format_table(results: list[dict[str, Any]]) -> str:
    header = "  ".join(
        name.rjust(width) if i else name.ljust(width) for i, (name, width) in enumerate(COLUMNS)
    )
    lines = [header, "-" * len(header)]
    for figures in results:
        cells = _row(figures)
        lines.append(
            "  ".join(
                cell.rjust(width) if i else cell.ljust(width)
                for i, (cell, (_, width)) in enumerate(zip(cells, COLUMNS, strict=True))
            )
        )
    return "\n".join(lines)


def format_details(document: dict[str, Any]) -> str:
    """What the table abbreviates: units, prices, targets missed, comparisons and the engine figure."""
    settings = document["settings"]
    prices = document["unit_prices"]
    lines = [
        f"N = {settings['orders']} orders, k = {settings['steps']} Lambda steps, "
        f"d = {settings['work_seconds']} s, account quota C = {settings['quota']}; "
        "bound = max(N.k.d / capacity available, k.d); a ratio below 1 means orders failed before "
        "doing their work.",
        f"Each scenario ran on its own fresh local cloud (same local cloud code, fresh tables); batches of "
        f"up to 500 orders inline, larger ones from a JSON object in S3 (the Distributed Map); "
        f"{'environments pre-warmed' if settings['warm'] else 'cold environments'}.",
        "calls/ord = Lambda invocation attempts per order (429s included); trans/ord = billed Step Functions "
        "state transitions per order (retries included; '-' for a batch from S3, whose child executions' "
        "histories the local cloud does not keep); WRU/ord = DynamoDB write request units per order.",
        "$/M = modelled dollars per million orders (Lambda + DynamoDB writes + Step Functions), "
        "std = Standard workflow, expr = Distributed Map with Express children.",
        "tasks/s = Lambda invocations / makespan; cpu ms/task = CPU of the local cloud's process + its "
        "DynamoDB data plane process + the emulators and runtimes, per Lambda invocation; peak PSS = MiB "
        "of the whole process tree (shared pages once), sampled each second during the batch.",
        f"Unit prices ({prices['as_of']}): "
        f"Standard ${prices['standard_per_transition'] * 1000:.3f}/1000 transitions; "
        f"Express ${prices['express_per_request'] * 1e6:.2f}/M requests + "
        f"${prices['express_per_gb_second']:.8f}/GB-s at {round(prices['express_memory_gb'] * 1024)} MB; "
        f"Lambda ${prices['lambda_per_request'] * 1e6:.2f}/M requests + "
        f"${prices['lambda_per_gb_second']:.10f}/GB-s; "
        f"DynamoDB ${prices['dynamodb_per_write_unit'] * 1e6:.3f}/M write units.",
    ]
    by_name = {r["name"]: r for r in document["scenarios"]}
    for figures in document["scenarios"]:
        accounting = figures["time_accounting"]
        lines.append(
            f"{figures['name']}: slot utilisation {accounting['slot_utilisation']}, a step call took "
            f"{accounting['mean_step_call_ms']} ms on average "
            f"({accounting['step_overhead_ms_beyond_work']} ms beyond d); "
            f"median order {accounting['median_order_seconds']} s"
        )
        used = figures["resources"]
        lines.append(
            f"  resources: CPU {used['cpu_seconds']['local_cloud']} s local cloud + "
            f"{used['cpu_seconds'].get('data_plane', 0.0)} s data plane + "
            f"{used['cpu_seconds']['environments']} s environments; PSS {used['tree_pss_mib_before']} MiB "
            f"before the batch, peak {used['peak_tree_pss_mib']} MiB ({used['peak_processes']} processes), "
            f"+{used['pss_growth_mib_per_1000_orders']} MiB per 1,000 orders; local cloud process peak RSS "
            f"{used['peak_process_rss_mib']} MiB"
        )
        if len(figures.get("batches", [])) > 1:
            first = figures["batches"][0]["tree_pss_mib_after"]
            lines.append(
                "  batches back to back: "
                + "; ".join(
                    f"#{b['batch']} {b['status']} {b['wall_seconds']} s, lost {b['lost']}, doubled "
                    f"{b['doubled']}, PSS after {b['tree_pss_mib_after']} MiB "
                    f"({(b['tree_pss_mib_after'] - first) / first * 100:+.0f}%)"
                    for b in figures["batches"]
                )
            )
        forecast = figures.get("simulated")
        if forecast:
            lines.append(
                f"  simulated (orderbatch plan, same parameters): makespan {forecast['makespan_seconds']} s "
                f"({_difference(figures['makespan_seconds'], forecast['makespan_seconds'])}), 429s per order "
                f"{forecast['throttles_per_order']} (measured {figures['lambda']['throttles_per_order']}), "
                f"failed orders {forecast['failed_orders']}"
            )
        if figures["orders"]["failure_codes"]:
            lines.append(
                f"  not succeeded, by code: {figures['orders']['failure_codes']}; by error recorded: "
                f"{figures['orders']['failure_errors']}; audit violations: "
                f"{figures['audit_violations_by_check'] or 0}"
            )
        for check in figures["targets"]["checks"]:
            if not check["met"]:
                lines.append(
                    f"  target missed: {check['figure']} = {check['actual']} (target {check['target']})"
                )
        other = by_name.get(figures["targets"].get("compare_with") or "")
        if other is not None:
            lines.append("  " + compare(figures, other))
    engine = document.get("engine")
    if engine:
        lines.append(
            f"engine: local cloud {engine['local_cloud']['tasks_per_second']} Lambda tasks/s, "
            f"moto's interpreter alone {engine['moto_alone']['tasks_per_second']} tasks/s, "
            f"ratio {engine['ratio']} ({engine['what']})"
        )
        app = engine.get("app_handlers")
        if app:
            lines.append(
                f"engine, the app's real handlers: {app['tasks_per_second']} Lambda tasks/s ({app['what']})"
            )
    return "\n".join(lines)


def _difference(measured: float, simulated: float) -> str:
    return f"{(simulated - measured) / measured * 100:+.0f}% against measured" if measured else "-"


def compare(figures: dict[str, Any], baseline: dict[str, Any]) -> str:
    def times(key: tuple[str, ...]) -> str:
        a: Any = figures
        b: Any = baseline
        for part in key:
            a, b = a[part], b[part]
        return f"{a / b:.2f}x" if b else f"{a} vs 0"

    return (
        f"against {baseline['name']}: makespan {times(('makespan_seconds',))}, Lambda attempts "
        f"{times(('lambda', 'attempts'))}, transitions {times(('transitions', 'total'))}, cost (Standard) "
        f"{times(('cost_per_million_orders', 'total_standard'))}, "
        f"{figures['orders']['failed']} failed orders against {baseline['orders']['failed']}"
    )


def write_json(document: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str))


# ---------------------------------------------------------------------------------------------- plots


def figure_png(fig: Any) -> bytes:
    """A finished matplotlib figure as the PNG every report embeds (laid out, 90 dpi)."""
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def render_scenario_plot(figures: dict[str, Any]) -> bytes:
    """PNG in the spirit of the Lambda console's Monitoring tab: concurrency, throttles, completions."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    series = figures["series"]
    quota = figures["quota"]
    makespan = max(figures["makespan_seconds"], 1.0)
    fig, (conc, thr, done) = pyplot.subplots(3, 1, figsize=(8, 7), sharex=True)
    try:
        points = [p for p in series["concurrency"] if p[0] <= makespan + 1]
        times = [p[0] for p in points]
        conc.step(times, [p[1] for p in points], where="post", label="account (all tenants)", color="#1f77b4")
        conc.step(times, [p[2] for p in points], where="post", label="this batch", color="#2ca02c")
        conc.axhline(quota, color="#d62728", linestyle="--", label=f"quota {quota}")
        neighbour = figures.get("neighbour")
        if neighbour:
            start = neighbour["start_seconds"]
            conc.axvspan(
                start,
                start + neighbour["duration_seconds"],
                color="#ff7f0e",
                alpha=0.12,
                label=f"neighbour holds {neighbour['slots']}",
            )
        conc.set_ylabel("concurrent executions")
        conc.set_ylim(0, quota * 1.3 + 1)
        conc.legend(loc="upper right", fontsize=8)
        conc.set_title(
            f"{figures['name']}: makespan {figures['makespan_seconds']:.1f} s, "
            f"bound {figures['lower_bound_seconds']:.1f} s, MaxConcurrency {figures['max_concurrency']}"
        )
        bins = max(1, math.ceil(makespan))
        thr.hist(series["throttle_times"], bins=bins, range=(0, bins), color="#d62728")
        thr.set_ylabel("throttles (429) / s")
        completions = series["completion_times"]
        done.step([0.0, *completions], list(range(len(completions) + 1)), where="post", color="#9467bd")
        done.axhline(figures["orders"]["total"], color="grey", linestyle=":")
        done.axvline(figures["lower_bound_seconds"], color="#d62728", linestyle="--", label="lower bound")
        done.set_ylabel("orders completed")
        done.set_xlabel("seconds since the execution started")
        done.legend(loc="lower right", fontsize=8)
        return figure_png(fig)
    finally:
        pyplot.close(fig)


def write_html(document: dict[str, Any], path: Path, plots_dir: Path | None = None) -> list[Path]:
    """One self-contained file (plots inline as base64 PNG); also writes each PNG to ``plots_dir``."""
    written: list[Path] = []
    sections = []
    for figures in document["scenarios"]:
        png = render_scenario_plot(figures)
        if plots_dir is not None:
            plots_dir.mkdir(parents=True, exist_ok=True)
            target = plots_dir / f"{figures['name']}.png"
            target.write_bytes(png)
            written.append(target)
        checks = "".join(
            f"<li>{html.escape(c['figure'])}: {c['actual']} (target {html.escape(c['target'])}) "
            f"<b>{'met' if c['met'] else 'MISSED'}</b></li>"
            for c in figures["targets"]["checks"]
        )
        sections.append(
            f"<section><h2>{html.escape(figures['name'])}</h2>"
            f"<p>{html.escape(figures['description'])}. "
            f"Changed: {html.escape(', '.join(figures['changed']))}.</p>"
            f"<ul>{checks}</ul>"
            f"{png_image(png, 'monitoring plots of ' + figures['name'])}</section>"
        )
    texts = (format_table(document["scenarios"]), format_details(document))
    write_html_page(path, "orderbatch bench", document, texts, "".join(sections))
    return written


def png_image(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def write_html_page(
    path: Path, title: str, document: dict[str, Any], texts: Sequence[str], body: str
) -> None:
    """A self-contained page: the title, when the run was, each text preformatted, then ``body``."""
    preformatted = "\n".join(f"<pre>{html.escape(text)}</pre>" for text in texts)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
pre{{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}}img{{max-width:100%}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<p>Generated {html.escape(str(document["generated_at"]))} on the local cloud.</p>
{preformatted}
{body}
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
