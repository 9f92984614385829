"""The compatibility report: deploy and pass rates, each failure's cause grouped by kind; text or HTML."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orderbatch.compat.runner import NOT_JUDGED, AppResult
from orderbatch.reports import (
    Bars,
    BarsPanel,
    Cell,
    Chart,
    Column,
    Mark,
    Notes,
    Page,
    Section,
    Table,
    comparison_chart,
)

_VARIABLE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{27}|\b\d+(\.\d+)?\b|'[^']*'|\"[^\"]*\"")


def cause_kind(result: AppResult) -> str:
    """A failure's cause with its IDs, numbers and quoted names taken out, so alike failures group."""
    return f"{result.stage}: {_VARIABLE.sub('…', result.cause)[:160]}"


def summary(results: Sequence[AppResult]) -> dict[str, Any]:
    """Rates over the apps that ran; ``runnable_on_aws`` leaves out those whose README outcome AWS itself
    cannot reach (and which the local cloud refused as AWS does)."""
    ran = [r for r in results if r.stage not in NOT_JUDGED]
    failures = [r for r in ran if not r.ended_as_readme and r.stage != "aws-refused"]
    return {
        "apps": len(results),
        "unavailable": sum(r.stage == "source" for r in results),
        "no_interpreter": sum(r.stage == "interpreter" for r in results),
        "deployed": sum(r.deployed for r in ran),
        "ended_as_readme": sum(r.ended_as_readme for r in ran),
        "ran": len(ran),
        "refused_as_aws": sum(r.stage == "aws-refused" for r in ran),
        "runnable_on_aws": sum(r.stage != "aws-refused" for r in ran),
        "causes": dict(Counter(cause_kind(r) for r in failures).most_common()),
    }


def _rate_lines(figures: dict[str, Any]) -> list[str]:
    ran, runnable = figures["ran"] or 1, figures["runnable_on_aws"] or 1
    lines = [
        f"deployed:           {figures['deployed']} of {figures['ran']} "
        f"({100 * figures['deployed'] / ran:.0f}%)",
        f"ended as README:    {figures['ended_as_readme']} of {figures['ran']} "
        f"({100 * figures['ended_as_readme'] / ran:.0f}%)",
    ]
    if figures["refused_as_aws"]:
        lines += [
            f"refused as AWS refuses them: {figures['refused_as_aws']} "
            "(their README's outcome cannot happen on AWS)",
            f"ended as README, of the runs AWS can run: {figures['ended_as_readme']} of "
            f"{figures['runnable_on_aws']} ({100 * figures['ended_as_readme'] / runnable:.0f}%)",
        ]
    if figures["unavailable"]:
        lines.append(f"not run (source not available): {figures['unavailable']}")
    if figures["no_interpreter"]:
        lines.append(f"not run (this machine lacks the runtime's Python): {figures['no_interpreter']}")
    return lines


def render(results: Sequence[AppResult]) -> str:
    figures = summary(results)
    lines = [f"{'app':58} {'deployed':>8} {'as README':>9} {'seconds':>8}  cause"]
    for result in results:
        lines.append(
            f"{result.id[:58]:58} {'yes' if result.deployed else 'no':>8} "
            f"{'yes' if result.ended_as_readme else 'no':>9} {result.seconds:8.1f}  {result.cause[:200]}"
        )
    lines += ["", *_rate_lines(figures)]
    if figures["causes"]:
        lines += ["", "failures by cause:"]
        lines += [f"  {count:3d}  {cause}" for cause, count in figures["causes"].items()]
    return "\n".join(lines)


APP_COLUMNS = (
    Column("app", numeric=False),
    Column("deployed", numeric=False),
    Column("ended as README", numeric=False, explanation="the app's run ended as its README says"),
    Column("stage", numeric=False, explanation="where the app stopped: source, deploy, setup, run, compare"),
    Column("seconds"),
    Column("cause", numeric=False, long_text=True),
)
CAUSE_COLUMNS = (
    Column("apps"),
    Column("cause, with IDs, numbers and quoted names taken out", numeric=False, long_text=True),
)
YES_NO = ("yes", "no")
STAGES = ("passed", "aws-refused", "deploy", "setup", "run", "compare", "interpreter", "source")


def _app_row(result: AppResult) -> list[Cell]:
    if result.stage in NOT_JUDGED:
        return [result.id, Mark(None), Mark(None, "not run"), result.stage, None, result.cause]
    return [
        result.id,
        Mark(result.deployed, words=YES_NO),
        Mark(result.ended_as_readme, words=YES_NO),
        result.stage,
        f"{result.seconds:.1f}",
        result.cause or None,
    ]


def stage_chart(results: Sequence[AppResult]) -> Chart:
    """How many apps ended at each stage, each bar naming its apps on hover."""
    by_stage = {stage: [r.id for r in results if r.stage == stage] for stage in STAGES}
    stages = [stage for stage in STAGES if by_stage[stage]] or ["passed"]
    labels = {
        "passed": "ended as README",
        "aws-refused": "refused as AWS refuses it",
        "interpreter": "runtime's Python not here",
        "source": "source not available",
    }
    return comparison_chart(
        [labels.get(stage, f"stopped at {stage}") for stage in stages],
        [
            BarsPanel(
                "Apps by where they ended",
                [
                    Bars(
                        "apps",
                        [len(by_stage.get(stage, [])) for stage in stages],
                        "{:,.0f}",
                        [", ".join(by_stage.get(stage, [])[:12]) for stage in stages],
                    )
                ],
                axis_title="apps",
                whole_numbers=True,
            )
        ],
        title="Apps by where they ended",
        element_id="stage-chart",
    )


def report_page(results: Sequence[AppResult], generated_at: str) -> Page:
    """The apps table first (deployed and ended-as-README marked), then the rates, stages and causes."""
    figures = summary(results)
    page = Page("orderbatch compat", subtitle=f"Generated {generated_at}: public SAM apps run with local up.")
    page.add(
        Table(
            APP_COLUMNS,
            [_app_row(result) for result in results],
            caption="Apps",
            element_id="summary",
            wide=True,
        )
    )
    rates = [" ".join(line.split()) + "." for line in _rate_lines(figures)]
    rates = [rate[:1].upper() + rate[1:] for rate in rates]
    page.add(Notes(rates, bullets=False))
    page.add(stage_chart(results))
    if figures["causes"]:
        causes: list[list[Cell]] = [[count, cause] for cause, count in figures["causes"].items()]
        page.add(Section("Failures by cause").add(Table(CAUSE_COLUMNS, causes)))
    return page


def write_html(results: Sequence[AppResult], path: Path, generated_at: str) -> Path:
    return report_page(results, generated_at).write(path)
