"""W9524 for ``orderbatch lint --contention``: a Map whose throttle retrier the planner can see spent.

The rule needs the planner's simulator, and the planner reads templates through the linter's model, so
the rule lives here and the lint command hands it to ``lint_templates`` (``extra_rules``); cfn-lint run
on its own with ``-a src/orderbatch/lint/rules`` does not have it.
"""

from __future__ import annotations

from typing import Any

from cfnlint.rules import RuleMatch

from orderbatch.capacity.model import Neighbour
from orderbatch.lint.asl import walk_states
from orderbatch.lint.cfn_rule import ThrottleSafetyRule
from orderbatch.lint.template_model import build_model
from orderbatch.plan.exhaustion import distinct_maps, forecast_state_machine
from orderbatch.plan.settings import PlanSettings
from orderbatch.plan.workflow import extract_workflows

# Orders per simulated batch when the caller gives none: the benchmark's default batch.
DEFAULT_CONTENTION_ORDERS = 200


class ThrottleRetrierCanBeSpent(ThrottleSafetyRule):
    id = "W9524"

    def __init__(
        self, contention: Neighbour, account_concurrency: int, orders: int = DEFAULT_CONTENTION_ORDERS
    ) -> None:
        super().__init__()
        if account_concurrency < 1:
            raise ValueError("W9524 needs the account concurrency (--account-concurrency)")
        self.contention = contention
        self.account_concurrency = account_concurrency
        self.orders = orders

    def match(self, cfn: Any) -> list[RuleMatch]:
        model = build_model(cfn.template, cfn.filename)
        matches = []
        for workflow in distinct_maps(extract_workflows(model, skipped=[])):
            settings = PlanSettings(
                orders=self.orders, account_concurrency=self.account_concurrency, neighbour=self.contention
            )
            forecast = forecast_state_machine(workflow, settings)
            if not forecast.failed_orders:
                continue
            machine = next(m for m in model.state_machines if m.logical_id == workflow.state_machine)
            map_path = next(v.path for v in walk_states(machine) if v.name == workflow.map_state)
            batch = forecast.batch_failure
            contention = self.contention
            held = (
                f"for {contention.duration_seconds:g} s"
                if contention.duration_seconds != float("inf")
                else "throughout"
            )
            matches.append(
                RuleMatch(
                    [*machine.cfn_path, *map_path, "MaxConcurrency"],
                    f"{workflow.state_machine} '{workflow.map_state}': with another tenant holding "
                    f"{contention.slots} of {self.account_concurrency} slots {held}, batches of "
                    f"{self.orders} orders at MaxConcurrency {workflow.effective_concurrency()} fail orders "
                    f"from 429s alone: {forecast.failed_orders} in {forecast.runs} simulated batches, "
                    f"P(a batch fails one or more) {batch.estimate:.3f} (95% CI {batch.low:.3f}-"
                    f"{batch.high:.3f}). Backed-off retries lose the freed slots to fresh Map items. Set "
                    "an order whose throttle retrier runs out aside (a Catch on "
                    "Lambda.TooManyRequestsException alone) and run it again in a second pass after the "
                    "batch, or lower MaxConcurrency to the capacity left to you (docs/throttling.md; "
                    "orderbatch plan --neighbour ...).",
                )
            )
        return matches
