"""Run the throttle-safety rules (and optionally cfn-lint's own) through cfn-lint's API."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from cfnlint.match import Match
    from cfnlint.rules import CloudFormationLintRule

RULES_MODULE = "orderbatch.lint.rules.throttle_safety"
RULES_DIRECTORY = Path(__file__).parent / "rules"


class LintProblemJson(TypedDict):
    """A finding as ``orderbatch lint --format json`` prints it."""

    rule_id: str
    severity: str
    filename: str
    line: int
    column: int
    message: str
    path: list[str | int]


@dataclass(frozen=True)
class LintProblem:
    rule_id: str
    severity: str
    filename: str
    line: int
    column: int
    message: str
    path: tuple[str | int, ...]

    def to_json(self) -> LintProblemJson:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "filename": self.filename,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "path": list(self.path),
        }


def lint_templates(
    templates: Iterable[str | Path],
    *,
    account_concurrency: int | None = None,
    min_retry_budget_seconds: int | None = None,
    standard_rules: bool = False,
    extra_rules: Iterable[CloudFormationLintRule] = (),
) -> list[LintProblem]:
    """Lint each template with the 95xx rules (plus cfn-lint's standard rules when asked, and
    ``extra_rules``: cfn-lint rule instances the caller builds, such as the planner's W9524)."""
    from cfnlint.config import _DEFAULT_RULESDIR, ConfigMixIn
    from cfnlint.rules import Rules
    from cfnlint.runner.template.runner import run_template_by_file_path

    rules = Rules.create_from_module(RULES_MODULE)
    if standard_rules:
        rules.update(Rules.create_from_directory(_DEFAULT_RULESDIR))
    for rule in extra_rules:
        rules.register(rule)
    configure_rules: dict[str, dict[str, int]] = {}
    if account_concurrency is not None:
        configure_rules["W9523"] = {"account_concurrency": account_concurrency}
        configure_rules["W9561"] = {"account_concurrency": account_concurrency}
    if min_retry_budget_seconds is not None:
        configure_rules["W9507"] = {"min_retry_budget_seconds": min_retry_budget_seconds}
    problems: list[LintProblem] = []
    for template in templates:
        # cfn-lint drops informational findings unless included: ours (I95xx) are; `--fail-on` decides
        # whether they count. cfn-lint's own stay as its defaults have them.
        config = ConfigMixIn([], configure_rules=configure_rules, include_checks=["I95"])
        matches = run_template_by_file_path(str(template), config, rules, ignore_bad_template=False)
        problems.extend(_problem(match) for match in matches)
    problems.sort(key=lambda problem: (problem.filename, problem.line, problem.rule_id))
    return problems


def _problem(match: Match) -> LintProblem:
    return LintProblem(
        rule_id=match.rule.id,
        severity=match.rule.severity,
        filename=match.filename or "",
        line=match.linenumber,
        column=match.columnnumber,
        message=match.message,
        path=tuple(getattr(match, "path", ()) or ()),
    )


# cfn-lint's exit code: one bit per severity found at or above the threshold, so 6 = errors and warnings.
SEVERITY_EXIT_BITS = {"error": 2, "warning": 4, "informational": 8}
FAIL_ON_LEVELS = ("error", "warning", "informational", "none")


def exit_code(problems: Sequence[LintProblem], fail_on: str = "error") -> int:
    """cfn-lint's exit code: 2 (errors), 4 (warnings) and 8 (informational) OR-ed together, for every
    severity at or above ``fail_on`` that was found; 0 when none was, or when ``fail_on`` is "none"."""
    if fail_on not in FAIL_ON_LEVELS:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON_LEVELS)}, not {fail_on!r}")
    counted = FAIL_ON_LEVELS[: FAIL_ON_LEVELS.index(fail_on) + 1] if fail_on != "none" else ()
    code = 0
    for problem in problems:
        if problem.severity in counted:
            code |= SEVERITY_EXIT_BITS[problem.severity]
    return code
