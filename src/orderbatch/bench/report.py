"""The benchmark's outputs: the printed table, the JSON document and the self-contained HTML report.

The page is built from ``orderbatch.reports``: the summary as a table first, then every scenario
compared in one chart, then each scenario with its targets and its monitoring timeline.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from orderbatch import reports

COLUMNS = (
    ("scenario", 24),
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
    ("$/M dur", 8),
    ("tasks/s", 7),
    ("cpu ms/task", 14),
    ("peak PSS", 8),
    ("target", 9),
)


# The local cloud's goal for its own cost per Lambda task, as a multiple of the handler's own CPU.
OVERHEAD_GOAL = 2


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
        "-",
        f"{figures['lambda']['invocations'] / figures['makespan_seconds']:.0f}"
        if figures["makespan_seconds"]
        else "-",
        "{local_cloud:.1f}+{data_plane:.1f}+{environments:.1f}".format(
            **{"data_plane": 0.0, **figures["resources"]["cpu_ms_per_task"]}
        ),
        f"{figures['resources']['peak_tree_pss_mib']:.0f}",
        verdict,
    ]


def ran_on_step_functions(figures: dict[str, Any]) -> bool:
    return "makespan_seconds" in figures


def _durable_row(figures: dict[str, Any]) -> list[str]:
    """The same scenario's batch through the durable function: the columns it has a figure for."""
    durable = figures["durable"]
    orders = durable["orders"]
    ratio = durable["bound_ratio"]
    makespan = durable["makespan_seconds"]
    return [
        f"{figures['name']} (durable)",
        f"{makespan:.1f}",
        f"{durable['lower_bound_seconds']:.1f}",
        "-" if ratio is None else f"{ratio:.2f}",
        f"{orders['succeeded']}/{orders['failed']}/{orders['lost']}",
        "-",
        f"{durable['lambda']['attempts_per_order']:.2f}",
        f"{durable['lambda']['throttles_per_order']:.2f}",
        "-",
        f"{durable['dynamodb']['write_units_per_order']:.1f}",
        "-",
        "-",
        f"{durable['cost_per_million_orders']['total_durable']:.0f}",
        f"{durable['lambda']['invocations'] / makespan:.0f}" if makespan else "-",
        "-",
        "-",
        "-",
    ]


def table_rows(results: list[dict[str, Any]]) -> list[tuple[list[str], dict[str, Any] | None]]:
    """Each scenario's rows: the state machine's (with its figures, for the target) and the durable
    function's (no targets: they are the state machine's)."""
    rows: list[tuple[list[str], dict[str, Any] | None]] = []
    for figures in results:
        if ran_on_step_functions(figures):
            rows.append((_row(figures), figures))
        if figures.get("durable"):
            rows.append((_durable_row(figures), None))
    return rows


def format_table(results: list[dict[str, Any]]) -> str:
    header = "  ".join(
        name.rjust(width) if i else name.ljust(width) for i, (name, width) in enumerate(COLUMNS)
    )
    lines = [header, "-" * len(header)]
    for cells, _ in table_rows(results):
        lines.append(
            "  ".join(
                cell.rjust(width) if i else cell.ljust(width)
                for i, (cell, (_, width)) in enumerate(zip(cells, COLUMNS, strict=True))
            )
        )
    return "\n".join(lines)


def format_details(document: dict[str, Any]) -> str:
    """What the table abbreviates: units, prices, targets missed, comparisons and the engine figure."""
    by_name = {r["name"]: r for r in document["scenarios"] if ran_on_step_functions(r)}
    lines = reading_notes(document)
    for figures in document["scenarios"]:
        if not ran_on_step_functions(figures):
            lines.append(f"{figures['name']}: {figures['description']}")
            lines.extend(f"  {line}" for line in durable_notes(figures))
            continue
        scenario_lines = scenario_notes(figures, by_name)
        missed = [
            f"target missed: {check['figure']} = {check['actual']} (target {check['target']})"
            for check in figures["targets"]["checks"]
            if not check["met"]
        ]
        comparison = scenario_lines[-1:] if _compared_with(figures, by_name) else []
        body = scenario_lines[: len(scenario_lines) - len(comparison)]
        lines.append(f"{figures['name']}: {body[0]}")
        lines.extend(f"  {line}" for line in [*body[1:], *missed, *comparison, *durable_notes(figures)])
    lines.extend(engine_notes(document))
    return "\n".join(lines)


def reading_notes(document: dict[str, Any]) -> list[str]:
    """The run's settings, what each abbreviation means and the unit prices the costs use."""
    settings = document["settings"]
    prices = document["unit_prices"]
    return [
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
        "DynamoDB data plane process + the runtimes and their stubs, per Lambda invocation; peak PSS = MiB "
        "of the whole process tree (shared pages once), sampled each second during the batch.",
        f"Unit prices ({prices['as_of']}): "
        f"Standard ${prices['standard_per_transition'] * 1000:.3f}/1000 transitions; "
        f"Express ${prices['express_per_request'] * 1e6:.2f}/M requests + "
        f"${prices['express_per_gb_second']:.8f}/GB-s at {round(prices['express_memory_gb'] * 1024)} MB; "
        f"Lambda ${prices['lambda_per_request'] * 1e6:.2f}/M requests + "
        f"${prices['lambda_per_gb_second']:.10f}/GB-s; "
        f"DynamoDB ${prices['dynamodb_per_write_unit'] * 1e6:.3f}/M write units.",
        *durable_reading_notes(document),
    ]


def durable_reading_notes(document: dict[str, Any]) -> list[str]:
    if "durable" not in document["settings"].get("orchestrators", []):
        return []
    durable = document["unit_prices"]["durable"]
    return [
        "(durable) rows: the same batch through DurableOrderBatchFunction on its own fresh local cloud "
        "(Invoke with DurableExecutionName, polled with GetDurableExecution): makespan = the execution's "
        "start to end; calls/ord and 429/ord count the task functions' and the orchestrator's own "
        "invocations (its replays); lost = orders with no final record in the orders table; the targets "
        "and the exactly-once audit are the state machine's.",
        f"$/M dur = Lambda (tasks and replays) + DynamoDB + durable functions' own charges "
        f"(${durable['per_operation'] * 1e6:.2f}/M durable operations, ${durable['per_gb_written']:.2f}/GB "
        f"written, ${durable['per_gb_month_retained']:.2f}/GB-month retained; {durable['as_of']}).",
    ]


def exhaustion_notes(exhaustion: dict[str, Any] | None, prefix: str = "") -> list[str]:
    """Orders failed by throttling alone over a repeated scenario's batches."""
    rerun = exhaustion.get("second_pass") if exhaustion else None
    if not exhaustion or (exhaustion["batches"] < 2 and not exhaustion["failed_by_throttling"] and not rerun):
        return []
    streak = exhaustion["longest_throttle_streak"]
    return [
        f"{prefix}throttling alone failed {exhaustion['failed_by_throttling']} of {exhaustion['orders']} "
        f"orders over {exhaustion['batches']} batch(es) (rate {exhaustion['rate']})"
        + ("" if streak is None else f"; longest run of 429s one order met: {streak}")
        + (f"; the second pass ran {rerun} order(s) again" if rerun else "")
    ]


def durable_notes(figures: dict[str, Any]) -> list[str]:
    """The durable run of one scenario: replays, operations, 429s by kind, and its forecast."""
    durable = figures.get("durable")
    if not durable:
        return []
    calls = durable["lambda"]
    lines = [
        f"durable: {durable['status']}{' (stopped at the deadline)' if durable['timed_out'] else ''}, "
        f"retrier {durable['retrier']}; {calls['orchestrator_invocations']} orchestrator invocations "
        f"({calls['replays_per_order']} per order, {calls['mean_replay_ms']} ms each on average), "
        f"429s {calls['task_throttles']} on chained invokes + {calls['orchestrator_throttles']} on the "
        f"orchestrator; {durable['durable']['operations']} durable operations "
        f"({durable['durable']['operations_per_order']} per order)",
    ]
    lines.extend(exhaustion_notes(durable.get("throttle_exhaustion"), prefix="durable: "))
    forecast = durable.get("simulated")
    if forecast:
        difference = _difference(durable["makespan_seconds"], forecast["makespan_seconds"])
        lines.append(
            f"durable, simulated (orderbatch plan's durable model, same parameters): makespan "
            f"{forecast['makespan_seconds']} s ({difference}), "
            f"429s per order {forecast['throttles_per_order']} (measured {calls['throttles_per_order']}), "
            f"replays per order {forecast['replays_per_order']} (measured {calls['replays_per_order']}), "
            f"operations per order {forecast['operations_per_order']}"
        )
    return lines


def scenario_notes(figures: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> list[str]:
    """Where one scenario's time went, what it used, its batches, its forecast and its comparison."""
    accounting = figures["time_accounting"]
    used = figures["resources"]
    lines = [
        f"slot utilisation {accounting['slot_utilisation']}, a step call took "
        f"{accounting['mean_step_call_ms']} ms on average "
        f"({accounting['step_overhead_ms_beyond_work']} ms beyond d); "
        f"median order {accounting['median_order_seconds']} s"
        # Reports of runs before the audit was timed have no such figure.
        + (f"; the audit took {accounting['audit_seconds']} s" if "audit_seconds" in accounting else ""),
        f"resources: CPU {used['cpu_seconds']['local_cloud']} s local cloud + "
        f"{used['cpu_seconds'].get('data_plane', 0.0)} s data plane + "
        f"{used['cpu_seconds']['environments']} s environments; PSS {used['tree_pss_mib_before']} MiB "
        f"before the batch, peak {used['peak_tree_pss_mib']} MiB ({used['peak_processes']} processes), "
        f"+{used['pss_growth_mib_per_1000_orders']} MiB per 1,000 orders; local cloud process peak RSS "
        f"{used['peak_process_rss_mib']} MiB",
    ]
    if used.get("overhead_factor") is not None:
        per_request = ", ".join(f"{kind} {ms}" for kind, ms in used["data_plane_cpu_ms"].items())
        lines.append(
            f"overhead factor O = {used['overhead_factor']} (goal <= {OVERHEAD_GOAL}): "
            f"{used['total_cpu_ms']} ms CPU per task in all, {used['handler_cpu_ms']} ms of it the "
            f"handler's own; data plane CPU ms per request: {per_request or 'none'}"
        )
    if len(figures.get("batches", [])) > 1:
        first = figures["batches"][0]["tree_pss_mib_after"]
        lines.append(
            "batches back to back: "
            + "; ".join(
                f"#{b['batch']} {b['status']} {b['wall_seconds']} s, failed by 429s "
                f"{b.get('failed_by_throttling', 0)}, lost {b['lost']}, doubled "
                f"{b['doubled']}, PSS after {b['tree_pss_mib_after']} MiB "
                f"({(b['tree_pss_mib_after'] - first) / first * 100:+.0f}%)"
                for b in figures["batches"]
            )
        )
    lines.extend(exhaustion_notes(figures.get("throttle_exhaustion")))
    forecast = figures.get("simulated")
    if forecast:
        lines.append(
            f"simulated (orderbatch plan, same parameters): makespan {forecast['makespan_seconds']} s "
            f"({_difference(figures['makespan_seconds'], forecast['makespan_seconds'])}), 429s per order "
            f"{forecast['throttles_per_order']} (measured {figures['lambda']['throttles_per_order']}), "
            f"failed orders {forecast['failed_orders']}"
        )
    if figures["orders"]["failure_codes"]:
        lines.append(
            f"not succeeded, by code: {figures['orders']['failure_codes']}; by error recorded: "
            f"{figures['orders']['failure_errors']}; audit violations: "
            f"{figures['audit_violations_by_check'] or 0}"
        )
    other = _compared_with(figures, by_name)
    if other is not None:
        lines.append(compare(figures, other))
    return lines


def engine_notes(document: dict[str, Any]) -> list[str]:
    engine = document.get("engine")
    if not engine:
        return []
    lines = [
        f"engine: local cloud {engine['local_cloud']['tasks_per_second']} Lambda tasks/s, "
        f"moto's interpreter alone {engine['moto_alone']['tasks_per_second']} tasks/s, "
        f"ratio {engine['ratio']} ({engine['what']})"
    ]
    app = engine.get("app_handlers")
    if app:
        lines.append(
            f"engine, the app's real handlers: {app['tasks_per_second']} Lambda tasks/s ({app['what']})"
        )
    return lines


def _compared_with(figures: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    return by_name.get(figures["targets"].get("compare_with") or "")


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


# ------------------------------------------------------------------------------------------- the page

SUMMARY_COLUMNS = (
    reports.Column("scenario", numeric=False),
    reports.Column("makespan s", explanation="ExecutionStarted to the execution's end, from its history"),
    reports.Column("bound s", explanation="max(N.k.d / capacity available, k.d): no policy finishes sooner"),
    reports.Column("ratio", explanation="makespan / bound; below 1: orders failed before doing their work"),
    reports.Column("ok / fail / lost", explanation="orders succeeded / failed / with no outcome at all"),
    reports.Column("doubled", explanation="orders charged or decremented more than once"),
    reports.Column("calls / ord", explanation="Lambda invocation attempts per order, 429s included"),
    reports.Column("429 / ord", explanation="throttled invocations (HTTP 429) per order"),
    reports.Column("trans / ord", explanation="billed state transitions per order, retries included"),
    reports.Column("WRU / ord", explanation="DynamoDB write request units per order"),
    reports.Column("$/M std", explanation="modelled dollars per million orders, Standard workflow"),
    reports.Column("$/M expr", explanation="modelled dollars per million orders, Express children"),
    reports.Column("$/M durable", explanation="modelled dollars per million orders, durable function"),
    reports.Column("tasks / s", explanation="Lambda invocations / makespan"),
    reports.Column(
        "CPU ms / task",
        explanation="CPU per Lambda invocation: local cloud + DynamoDB data plane + runtimes and their stubs",
    ),
    reports.Column("peak PSS MiB", explanation="the whole process tree, shared pages counted once"),
    reports.Column("target", numeric=False, explanation="the scenario's targets (reported, never asserted)"),
)


def target_mark(figures: dict[str, Any]) -> reports.Mark:
    targets = figures["targets"]
    compared = f"compared with {targets['compare_with']}" if targets["compare_with"] else ""
    if not targets["checks"]:
        return reports.Mark(None, compared)
    return reports.Mark(bool(targets["met"]), compared)


def summary_table(document: dict[str, Any]) -> reports.Table:
    settings = document["settings"]
    rows = []
    for texts, figures in table_rows(document["scenarios"]):
        cells: list[reports.Cell] = [None if cell == "-" else cell for cell in texts]
        cells[-1] = target_mark(figures) if figures is not None else reports.Mark(None)
        rows.append(cells)
    return reports.Table(
        SUMMARY_COLUMNS,
        rows,
        caption=f"Summary: {settings['orders']} orders per batch, quota {settings['quota']}, "
        f"d = {settings['work_seconds']} s per step, {settings['steps']} steps",
        element_id="summary",
        wide=True,
    )


def scenario_comparison_chart(document: dict[str, Any]) -> reports.Chart:
    """Every scenario side by side, on each orchestrator run: makespan against its bound, 429s per order,
    cost per million orders."""
    scenarios = document["scenarios"]
    names = [figures["name"] for figures in scenarios]
    sfn = [figures if ran_on_step_functions(figures) else None for figures in scenarios]
    durable = [figures.get("durable") for figures in scenarios]

    def ratio_text(figures: dict[str, Any] | None) -> str:
        if figures is None or figures["bound_ratio"] is None:
            return ""
        return f"{figures['bound_ratio']:.2f} x the bound"

    def figure(runs: list[dict[str, Any] | None], *path: str) -> list[float | None]:
        values: list[float | None] = []
        for run in runs:
            value: Any = run
            for part in path:
                value = None if value is None else value[part]
            values.append(value)
        return values

    # A batch from S3 has no child histories here, so its cost is not measured (see reading_notes).
    def sfn_cost(kind: str) -> list[float | None]:
        return [
            f["cost_per_million_orders"][kind]
            if f is not None and f.get("source", "inline") == "inline"
            else None
            for f in sfn
        ]

    makespans: list[reports.Bars] = []
    throttles: list[reports.Bars] = []
    costs: list[reports.Bars] = []
    if any(f is not None for f in sfn):
        makespans.append(
            reports.Bars(
                "makespan, Step Functions",
                figure(sfn, "makespan_seconds"),
                "{:,.1f} s",
                [ratio_text(f) for f in sfn],
            )
        )
        throttles.append(
            reports.Bars(
                "429s per order, Step Functions", figure(sfn, "lambda", "throttles_per_order"), "{:,.3f}"
            )
        )
        costs.append(reports.Bars("cost, Standard", sfn_cost("total_standard"), "${:,.0f}"))
        costs.append(reports.Bars("cost, Express children", sfn_cost("total_express_children"), "${:,.0f}"))
    if any(d is not None for d in durable):
        makespans.append(
            reports.Bars(
                "makespan, durable",
                figure(durable, "makespan_seconds"),
                "{:,.1f} s",
                [ratio_text(d) for d in durable],
            )
        )
        throttles.append(
            reports.Bars(
                "429s per order, durable", figure(durable, "lambda", "throttles_per_order"), "{:,.3f}"
            )
        )
        costs.append(
            reports.Bars(
                "cost, durable", figure(durable, "cost_per_million_orders", "total_durable"), "${:,.0f}"
            )
        )
    bounds = [(f or d or {}).get("lower_bound_seconds") for f, d in zip(sfn, durable, strict=True)]
    makespans.append(reports.Bars("bound", bounds, "{:,.1f} s"))
    return reports.comparison_chart(
        names,
        [
            reports.BarsPanel("Makespan against the bound", makespans, axis_title="seconds"),
            reports.BarsPanel("429s per order", throttles, axis_title="throttled calls per order"),
            reports.BarsPanel("Cost per million orders", costs, axis_title="dollars (modelled)"),
        ],
        title="Every scenario on each orchestrator: makespan against the bound, 429s per order, "
        "cost per million orders",
        element_id="scenario-comparison",
    )


def scenario_timeline(figures: dict[str, Any], element_id: str) -> reports.Chart:
    """In the spirit of the Lambda console's Monitoring tab: concurrency, throttles, completions."""
    series = figures["series"]
    makespan = max(figures["makespan_seconds"], 1.0)
    points = [p for p in series["concurrency"] if p[0] <= makespan + 1]
    times = [p[0] for p in points]
    neighbour = figures.get("neighbour")
    spans = (
        [
            reports.Span(
                neighbour["start_seconds"],
                neighbour["start_seconds"] + neighbour["duration_seconds"],
                f"neighbour holds {neighbour['slots']}",
            )
        ]
        if neighbour
        else []
    )
    seconds = max(1, math.ceil(makespan))
    per_second = [0] * seconds
    for moment in series["throttle_times"]:
        per_second[min(seconds - 1, max(0, int(moment)))] += 1
    completions = series["completion_times"]
    return reports.timeline_chart(
        [
            reports.TimePanel(
                "concurrent executions",
                [
                    reports.Line("account (all tenants)", times, [p[1] for p in points], step=True),
                    reports.Line("this batch", times, [p[2] for p in points], step=True),
                ],
                references=[reports.Reference(figures["quota"], f"quota {figures['quota']}")],
                spans=spans,
            ),
            reports.TimePanel(
                "429s per second",
                [
                    reports.Line(
                        "429s in that second",
                        [i + 0.5 for i in range(seconds)],
                        per_second,
                        bars=True,
                        bar_width=1.0,
                    )
                ],
            ),
            reports.TimePanel(
                "orders completed",
                [
                    reports.Line(
                        "orders completed", [0.0, *completions], list(range(len(completions) + 1)), step=True
                    )
                ],
                references=[
                    reports.Reference(figures["orders"]["total"], "orders in the batch"),
                    reports.Reference(figures["lower_bound_seconds"], "lower bound", vertical=True),
                ],
            ),
        ],
        title=f"{figures['name']}: makespan {figures['makespan_seconds']:.1f} s, "
        f"bound {figures['lower_bound_seconds']:.1f} s, MaxConcurrency {figures['max_concurrency']}",
        x_title="seconds since the execution started",
        element_id=element_id,
    )


CHECK_COLUMNS = (
    reports.Column("figure", numeric=False),
    reports.Column("measured"),
    reports.Column("target", numeric=False),
    reports.Column("verdict", numeric=False),
)


def scenario_section(
    figures: dict[str, Any], by_name: dict[str, dict[str, Any]], index: int
) -> reports.Section:
    section = reports.Section(figures["name"], element_id=f"scenario-{index}")
    changed = ", ".join(figures["changed"])
    section.add(reports.Notes([f"{figures['description']}. Changed: {changed}."], bullets=False))
    if not ran_on_step_functions(figures):
        section.add(reports.Notes(durable_notes(figures)))
        return section
    checks = figures["targets"]["checks"]
    if checks:
        rows: list[list[reports.Cell]] = [
            [check["figure"], check["actual"], check["target"], reports.Mark(bool(check["met"]))]
            for check in checks
        ]
        section.add(reports.Table(CHECK_COLUMNS, rows, caption="Targets"))
    section.add(reports.Notes([*scenario_notes(figures, by_name), *durable_notes(figures)]))
    section.add(scenario_timeline(figures, f"timeline-{index}"))
    return section


def report_page(document: dict[str, Any]) -> reports.Page:
    """The benchmark's page: the summary table first, then every scenario compared, then each one."""
    page = reports.Page(
        "orderbatch bench", subtitle=f"Generated {document['generated_at']} on the local cloud."
    )
    page.add(summary_table(document))
    page.add(scenario_comparison_chart(document))
    page.add(reports.Section("How to read it").add(reports.Notes(reading_notes(document))))
    by_name = {
        figures["name"]: figures for figures in document["scenarios"] if ran_on_step_functions(figures)
    }
    for index, figures in enumerate(document["scenarios"]):
        page.add(scenario_section(figures, by_name, index))
    engine = engine_notes(document)
    if engine:
        page.add(reports.Section("Engine").add(reports.Notes(engine)))
    return page


def write_html(document: dict[str, Any], path: Path) -> Path:
    """One self-contained file: tables, notes and interactive charts (plotly.js inline, once)."""
    return report_page(document).write(path)
