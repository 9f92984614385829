"""The soak run's summary line, tables, timeline and HTML page, from the document ``run_soak`` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orderbatch import reports


def format_summary(document: dict[str, Any]) -> str:
    soak, settings = document["soak"], document["settings"]
    totals, checks = soak["totals"], soak["verdict"]["checks"]
    statuses = ", ".join(f"{count} {status}" for status, count in sorted(totals["batches_by_status"].items()))
    intervals = soak["intervals"]
    memory = checks["local_cloud_rss_flat"]
    if memory["met"] is None:
        memory_line = f"not judged: the run ended before minute {settings['baseline_minute']:g}"
    else:
        memory_line = f"largest change since minute {settings['baseline_minute']:g}: {memory['actual']:+.1%}"
    lines = [
        f"soak: {settings['minutes']:g} min, {totals['batches_finished']} batches ({statuses}) of "
        f"{settings['orders']} orders, inline and S3 alternating, {settings['in_flight']} at a time",
        f"orders {totals['orders']}: {totals['succeeded']} succeeded, lost {totals['lost']}, doubled "
        f"{totals['doubled']}, audit violations {totals['violations']}, bodies run again "
        f"{totals['body_runs_beyond_one']}",
        f"local cloud's RSS: {intervals[0]['process_rss_mib'] if intervals else '-'} MiB first, "
        f"{intervals[-1]['process_rss_mib'] if intervals else '-'} MiB last; {memory_line}; its process tree "
        f"(runtimes included): {intervals[-1]['tree_rss_mib'] if intervals else '-'} MiB RSS, "
        f"{intervals[-1]['tree_pss_mib'] if intervals else '-'} MiB PSS last",
        "faults injected: "
        + (", ".join(f"{kind} {count}" for kind, count in totals.get("injected", {}).items()) or "none")
        + f" over {soak['fault_plan_cycles']} cycles of the plan; "
        + _cycles_line(checks.get("every_fault_kind_each_cycle"), soak.get("cycle_injections", [])),
        "goal (0 lost, 0 doubled, RSS flat within "
        f"{settings['max_memory_growth']:.0%}): "
        + ("met" if soak["verdict"]["met"] else "NOT met")
        + ("" if memory["met"] is not None else " (memory not judged)"),
    ]
    return "\n".join(lines)


def _cycles_line(check: dict[str, Any] | None, cycles: list[dict[str, Any]]) -> str:
    complete = sum(1 for cycle in cycles if cycle["complete"])
    if check is None:
        return "not counted (a document of an earlier soak)"
    if check["met"] is None:
        return "no complete cycle to judge"
    if check["met"]:
        return f"every kind in each of the {complete} complete cycles"
    missing = "; ".join(
        f"cycle {cycle['cycle']} lacks {', '.join(cycle['missing'])}"
        for cycle in check["cycles_missing_kinds"]
    )
    return f"kinds missing: {missing}"


GOAL_COLUMNS = (
    reports.Column("figure", numeric=False),
    reports.Column("measured"),
    reports.Column("target", numeric=False),
    reports.Column("verdict", numeric=False),
)
INTERVAL_COLUMNS = (
    reports.Column("minute"),
    reports.Column("batches", explanation="batches finished and audited so far"),
    reports.Column("orders", explanation="orders audited so far"),
    reports.Column("lost"),
    reports.Column("doubled"),
    reports.Column("violations", explanation="exactly-once audit violations"),
    reports.Column("cloud RSS MiB", explanation="the local cloud's own process"),
    reports.Column("vs baseline", explanation="the local cloud's RSS against the baseline minute's"),
    reports.Column("tree RSS MiB", explanation="summed over the process tree, runtimes included"),
    reports.Column("tree PSS MiB", explanation="the process tree, shared pages counted once"),
    reports.Column("procs"),
    reports.Column("rows", explanation="items in the stack's tables, held in the data plane's process"),
    reports.Column(
        "data plane MiB", explanation="RSS of the data plane's process, which holds the tables' items"
    ),
    reports.Column("S3 MiB", explanation="objects in the stack's buckets, held in the local cloud's process"),
    reports.Column(
        "logs MiB", explanation="stored bytes of the stack's log groups, held in the local cloud's process"
    ),
    reports.Column("load 1/5/15", numeric=False),
)
BATCH_COLUMNS = (
    reports.Column("batch", numeric=False, long_text=True),
    reports.Column("source", numeric=False),
    reports.Column("status", numeric=False),
    reports.Column("seconds"),
    reports.Column("orders"),
    reports.Column("succeeded"),
    reports.Column("lost"),
    reports.Column("doubled"),
    reports.Column("violations", explanation="exactly-once audit violations"),
    reports.Column(
        "bodies run again", explanation="task bodies that ran more than once (absorbed by idempotency)"
    ),
)
GOAL_FIGURES = {
    "lost": "lost orders",
    "doubled": "doubled orders",
    "local_cloud_rss_flat": "local cloud RSS change",
    "every_fault_kind_each_cycle": "cycles missing a per-invocation fault kind",
    "every_fault_kind_in_run": "fault kinds injected in the run",
}


def goal_table(document: dict[str, Any]) -> reports.Table:
    checks = document["soak"]["verdict"]["checks"]
    rows: list[list[reports.Cell]] = []
    for key, check in checks.items():
        actual = check["actual"]
        if key == "local_cloud_rss_flat" and actual is not None:
            actual = f"{actual:+.1%}"
        target = check["target"] if isinstance(check["target"], str) else f"= {check['target']}"
        rows.append([GOAL_FIGURES.get(key, key), actual, target, reports.Mark(check["met"])])
    met = document["soak"]["verdict"]["met"]
    return reports.Table(
        GOAL_COLUMNS,
        rows,
        caption=f"Goal: {'met' if met else 'NOT met'} (0 lost, 0 doubled, the local cloud's RSS flat)",
        element_id="summary",
    )


def soak_timeline(document: dict[str, Any]) -> reports.Chart:
    """Memory of the process tree and orders audited, minute by minute."""
    intervals = document["soak"]["intervals"]
    minutes = [i["minute"] for i in intervals]
    baseline_minute = document["settings"]["baseline_minute"]
    # Marked only once the run got there: a shorter run's axis stays its own length.
    reached = bool(minutes) and minutes[-1] >= baseline_minute
    baseline = [reports.Reference(baseline_minute, "baseline minute", vertical=True)] if reached else []
    return reports.timeline_chart(
        [
            reports.TimePanel(
                "MiB",
                [
                    reports.Line(
                        "tree RSS", minutes, [i["tree_rss_mib"] for i in intervals], number_format=",.1f"
                    ),
                    reports.Line(
                        "tree PSS", minutes, [i["tree_pss_mib"] for i in intervals], number_format=",.1f"
                    ),
                    reports.Line(
                        "local cloud RSS",
                        minutes,
                        [i["process_rss_mib"] for i in intervals],
                        number_format=",.1f",
                    ),
                ],
                references=baseline,
            ),
            reports.TimePanel(
                "orders",
                [
                    reports.Line("orders audited", minutes, [i["orders"] for i in intervals], step=True),
                    reports.Line(
                        "lost + doubled", minutes, [i["lost"] + i["doubled"] for i in intervals], step=True
                    ),
                ],
            ),
        ],
        title="Memory and orders audited, minute by minute",
        x_title="minutes",
        element_id="soak-timeline",
        panel_height_px=240,
    )


def _interval_row(interval: dict[str, Any]) -> list[reports.Cell]:
    change = interval["rss_change_since_baseline"]
    return [
        f"{interval['minute']:.1f}",
        interval["batches_finished"],
        interval["orders"],
        interval["lost"],
        interval["doubled"],
        interval["violations"],
        f"{interval['process_rss_mib']:.1f}",
        None if change is None else f"{change:+.1%}",
        f"{interval['tree_rss_mib']:.1f}",
        f"{interval['tree_pss_mib']:.1f}",
        interval["processes"],
        # Reports of earlier soaks did not measure what the stack stores.
        interval.get("rows", 0),
        f"{interval.get('data_plane_rss_mib', 0):.1f}",
        f"{interval.get('s3_mib', 0):.2f}",
        f"{interval.get('logs_mib', 0):.2f}",
        " ".join(f"{value:.2f}" for value in interval["load_average"]),
    ]


def _batch_row(batch: dict[str, Any]) -> list[reports.Cell]:
    return [
        batch["batch_id"],
        batch["source"],
        batch["status"],
        f"{batch['seconds']:.1f}",
        batch["orders"],
        batch["outcomes"].get("SUCCEEDED", 0),
        batch["lost"],
        batch["doubled"],
        batch["violations"],
        batch["body_runs_beyond_one"],
    ]


FAULT_COLUMNS = (
    reports.Column("fault kind", numeric=False),
    reports.Column(
        "injected", explanation="invocations (children, for duplicate_execution) it was decided for"
    ),
    reports.Column(
        "complete cycles with it", explanation="cycles of the plan run whole while batches were submitted"
    ),
)


def fault_table(document: dict[str, Any]) -> reports.Table:
    soak = document["soak"]
    complete = [cycle for cycle in soak.get("cycle_injections", []) if cycle["complete"]]
    injected = soak["totals"].get("injected", {})
    rows: list[list[reports.Cell]] = [
        [
            kind,
            injected.get(kind, 0),
            f"{sum(1 for c in complete if c['injected'].get(kind))} of {len(complete)}",
        ]
        for kind in soak["planned_fault_kinds"]
    ]
    return reports.Table(FAULT_COLUMNS, rows)


def soak_page(document: dict[str, Any]) -> reports.Page:
    soak = document["soak"]
    page = reports.Page(
        "orderbatch soak", subtitle=f"Generated {document['generated_at']} on the local cloud."
    )
    page.add(goal_table(document))
    page.add(reports.Notes(format_summary(document).splitlines(), bullets=False))
    page.add(reports.Notes([f"{soak['description']}."], bullets=False))
    page.add(soak_timeline(document))
    intervals = [_interval_row(interval) for interval in soak["intervals"]]
    page.add(reports.Section("Minute by minute").add(reports.Table(INTERVAL_COLUMNS, intervals)))
    if soak.get("planned_fault_kinds"):  # documents of earlier soaks did not count them
        page.add(reports.Section("Faults injected").add(fault_table(document)))
    page.add(
        reports.Section("Batches").add(
            reports.Table(BATCH_COLUMNS, [_batch_row(batch) for batch in soak["batches"]])
        )
    )
    return page


def write_soak_html(document: dict[str, Any], path: Path) -> Path:
    return soak_page(document).write(path)
