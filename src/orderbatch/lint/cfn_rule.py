"""The bridge between the throttle-safety checks and cfn-lint's rule interface."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cfnlint.rules import CloudFormationLintRule, RuleMatch

from orderbatch.lint.checks import DOCS_PATH, RULES, Settings, find_problems
from orderbatch.lint.template_model import build_model

if TYPE_CHECKING:
    from cfnlint.template import Template


class ThrottleSafetyRule(CloudFormationLintRule):
    """Base for the 95xx rules: runs every check and keeps the findings with this rule's ID.

    The checks are cheap (a few state machines per template), so sharing one pass between rules is
    not worth the coupling to cfn-lint's rule order.
    """

    tags = ["stepfunctions", "lambda", "throttling", "orderbatch"]

    def __init__(self) -> None:
        super().__init__()
        if self.id:
            spec = RULES[self.id]
            self.shortdesc = spec.shortdesc
            self.description = spec.description
            self.source_url = f"{DOCS_PATH}#{self.id.lower()}"

    def settings(self) -> Settings:
        return Settings()

    def match(self, cfn: Template) -> list[RuleMatch]:
        model = build_model(cfn.template, cfn.filename)
        return [
            RuleMatch(list(finding.path), finding.message)
            for finding in find_problems(model, self.settings())
            if finding.rule_id == self.id
        ]


class AccountQuotaRule(ThrottleSafetyRule):
    """Base for a rule that is off unless the account concurrency is given: ``-x <id>:account_concurrency=10``
    (0, the default, is unknown)."""

    def __init__(self) -> None:
        super().__init__()
        self.config_definition = {"account_concurrency": {"default": 0, "type": "integer"}}
        self.configure()

    def settings(self) -> Settings:
        return Settings(account_concurrency=self.config["account_concurrency"] or None)
