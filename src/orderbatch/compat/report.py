"""The compatibility report: deploy and pass rates, and each failure's cause grouped by kind."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from orderbatch.compat.runner import AppResult

_VARIABLE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{27}|\b\d+(\.\d+)?\b|'[^']*'|\"[^\"]*\"")


def cause_kind(result: AppResult) -> str:
    """A failure's cause with its IDs, numbers and quoted names taken out, so alike failures group."""
    return f"{result.stage}: {_VARIABLE.sub('…', result.cause)[:160]}"


def summary(results: Sequence[AppResult]) -> dict[str, Any]:
    ran = [r for r in results if r.stage != "source"]
    failures = [r for r in ran if not r.ended_as_readme]
    return {
        "apps": len(results),
        "unavailable": len(results) - len(ran),
        "deployed": sum(r.deployed for r in ran),
        "ended_as_readme": sum(r.ended_as_readme for r in ran),
        "ran": len(ran),
        "causes": dict(Counter(cause_kind(r) for r in failures).most_common()),
    }


def render(results: Sequence[AppResult]) -> str:
    figures = summary(results)
    ran = figures["ran"] or 1
    lines = [f"{'app':58} {'deployed':>8} {'as README':>9} {'seconds':>8}  cause"]
    for result in results:
        lines.append(
            f"{result.id[:58]:58} {'yes' if result.deployed else 'no':>8} "
            f"{'yes' if result.ended_as_readme else 'no':>9} {result.seconds:8.1f}  {result.cause[:200]}"
        )
    lines += [
        "",
        f"deployed:           {figures['deployed']} of {figures['ran']} "
        f"({100 * figures['deployed'] / ran:.0f}%)",
        f"ended as README:    {figures['ended_as_readme']} of {figures['ran']} "
        f"({100 * figures['ended_as_readme'] / ran:.0f}%)",
    ]
    if figures["unavailable"]:
        lines.append(f"not run (source not available): {figures['unavailable']}")
    if figures["causes"]:
        lines += ["", "failures by cause:"]
        lines += [f"  {count:3d}  {cause}" for cause, count in figures["causes"].items()]
    return "\n".join(lines)
