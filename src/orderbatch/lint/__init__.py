"""Throttle-safety linter for SAM/CloudFormation templates with Step Functions and Lambda.

The rules run under cfn-lint (``cfn-lint -a src/orderbatch/lint/rules template.yaml``) or through
``orderbatch lint``; the template reading is shared with ``orderbatch doctor``.
"""

from orderbatch.lint.checks import RULES, Finding, RuleSpec, Settings, find_problems
from orderbatch.lint.runner import RULES_DIRECTORY, LintProblem, exit_code, lint_templates
from orderbatch.lint.template_model import TemplateModel, build_model, read_template_file

__all__ = [
    "RULES",
    "RULES_DIRECTORY",
    "Finding",
    "LintProblem",
    "RuleSpec",
    "Settings",
    "TemplateModel",
    "build_model",
    "exit_code",
    "find_problems",
    "lint_templates",
    "read_template_file",
]
