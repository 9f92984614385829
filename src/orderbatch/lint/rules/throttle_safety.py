"""Throttle-safety rules for Step Functions state machines that invoke Lambda.

cfn-lint loads this file on its own (``-a DIR`` imports every rule file by path), so it defines every
rule class here and takes the checks from the installed ``orderbatch`` package.
Rule configuration: ``-x W9507:min_retry_budget_seconds=20``, ``-x W9523:account_concurrency=10``
(and ``-x W9561:account_concurrency=10`` for durable functions).
"""

from __future__ import annotations

from orderbatch.lint.cfn_rule import AccountQuotaRule, ThrottleSafetyRule
from orderbatch.lint.checks import DEFAULT_MIN_RETRY_BUDGET_SECONDS, Settings


class LambdaThrottleNotRetried(ThrottleSafetyRule):
    id = "E9501"


class LambdaThrottleRetriedByCatchAll(ThrottleSafetyRule):
    id = "W9502"


class ThrottleRetrierNeverRetries(ThrottleSafetyRule):
    id = "E9503"


class ThrottleRetrierNoBackoff(ThrottleSafetyRule):
    id = "W9504"


class ThrottleRetrierNoJitter(ThrottleSafetyRule):
    id = "W9505"


class ThrottleRetrierNoCap(ThrottleSafetyRule):
    id = "W9506"


class ThrottleRetryBudgetTooShort(ThrottleSafetyRule):
    id = "W9507"

    def __init__(self) -> None:
        super().__init__()
        self.config_definition = {
            "min_retry_budget_seconds": {"default": DEFAULT_MIN_RETRY_BUDGET_SECONDS, "type": "integer"},
        }
        self.configure()

    def settings(self) -> Settings:
        return Settings(min_retry_budget_seconds=self.config["min_retry_budget_seconds"])


class TaskTimeoutMissing(ThrottleSafetyRule):
    id = "W9510"


class TaskTimeoutNotLongerThanFunction(ThrottleSafetyRule):
    id = "E9511"


class TaskTimeoutUncheckable(ThrottleSafetyRule):
    id = "W9512"


class DistributedMapUnbounded(ThrottleSafetyRule):
    id = "E9520"


class InlineMapUnbounded(ThrottleSafetyRule):
    id = "W9521"


class MapConcurrencyOverReserved(ThrottleSafetyRule):
    id = "W9522"


class MapDemandOverAccountQuota(AccountQuotaRule):
    id = "W9523"


class InProgressRetryTooShort(ThrottleSafetyRule):
    id = "W9530"


class FunctionNotIdempotent(ThrottleSafetyRule):
    id = "W9540"


class IdempotencyLayerPerInvocation(ThrottleSafetyRule):
    id = "W9541"


class DurableMapUnbounded(ThrottleSafetyRule):
    id = "W9560"


class DurableDemandOverAccountQuota(AccountQuotaRule):
    id = "W9561"


class DurableConcurrencyUnresolved(ThrottleSafetyRule):
    id = "I9562"


class DurableInvokeThrottleNotRetried(ThrottleSafetyRule):
    id = "E9563"


class DurableInvokeRetryUncertain(ThrottleSafetyRule):
    id = "I9564"


class DurableExecutionTimeoutNotLongerThanFunction(ThrottleSafetyRule):
    id = "E9565"


class DurableSourceUnreadable(ThrottleSafetyRule):
    id = "W9569"


class DefinitionUnreadable(ThrottleSafetyRule):
    id = "W9550"
