"""Run the throttle-safety rules (and optionally cfn-lint's own) through cfn-lint's API."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RULES_MODULE = "orderbatch.lint.rules.throttle_safety"
RULES_DIRECTORY = Path(__file__).parent / "rules"


@dataclass(frozen=True)
class LintProblem:
    rule_id: str
    severity: str
    filename: str
    line: int
    column: int
    message: str
    path: tuple[str | int, ...]

    def to_json(self) -> dict[str, Any]:
        as_dict = asdict(self)
        as_dict["path"] = list(self.path)
        return as_dict


def lint_templates(
    templates: Iterable[str | Path],
    *,
    account_concurrency: int | None = None,
    min_retry_budget_seconds: int | None = None,
    standard_rules: bool = False,
) -> list[LintProblem]:
    """Lint each template with the 95xx rules (plus cfn-lint's standard rules when asked)."""
    from cfnlint.config import _DEFAULT_RULESDIR, ConfigMixIn
    from cfnlint.rules import Rules
    from cfnlint.runner.template.runner import run_template_by_file_path

    rules = Rules.create_from_module(RULES_MODULE)
    if standard_rules:
        rules.update(Rules.create_from_directory(_DEFAULT_RULESDIR))
    configure_rules: dict[str, dict[str, Any]] = {}
    if account_concurrency is not None:
        configure_rules["W9523"] = {"account_concurrency": account_concurrency}
    if min_retry_budget_seconds is not None:
        configure_rules["W9507"] = {"min_retry_budget_seconds": min_retry_budget_seconds}
    problems: list[LintProblem] = []
    for template in templates:
        config = ConfigMixIn([], configure_rules=configure_rules)
        matches = run_template_by_file_path(str(template), config, rules, ignore_bad_template=False)
        problems.extend(_problem(match) for match in matches)
    problems.sort(key=lambda problem: (problem.filename, problem.line, problem.rule_id))
    return problems


def _problem(match: Any) -> LintProblem:
    return LintProblem(
        rule_id=match.rule.id,
        severity=match.rule.severity,
        filename=match.filename or "",
        line=match.linenumber,
        column=match.columnnumber,
        message=match.message,
        path=tuple(getattr(match, "path", ()) or ()),
    )


def exit_code(problems: Sequence[LintProblem], fail_on: str = "error") -> int:
    """2 when an error was found, 4 when only warnings were and ``fail_on`` is "warning", else 0."""
    severities = {problem.severity for problem in problems}
    if "error" in severities:
        return 2
    if fail_on == "warning" and "warning" in severities:
        return 4
    return 0
