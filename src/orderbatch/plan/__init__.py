"""`orderbatch plan`: the template on AWS's quotas, in virtual time, at any number of orders.

``simulate(load_workflow("template.yaml"), PlanSettings(orders=200, account_concurrency=10))`` returns a
``PlanResult``: makespan against the benchmark's bound, 429s and retries per order, failed orders,
billed transitions, Lambda GB-s, DynamoDB writes and the cost per million orders.
"""

from orderbatch.plan.durations import Duration
from orderbatch.plan.results import AttemptRecord, PlanResult, RunCounters, TimelinePoint
from orderbatch.plan.retry import RetryPolicy
from orderbatch.plan.settings import PlanSettings, parse_neighbour
from orderbatch.plan.simulator import plan_lower_bound, simulate
from orderbatch.plan.workflow import RETRIER_TRANSFORMS, TaskStep, Workflow, extract_workflows, load_workflow

__all__ = [
    "RETRIER_TRANSFORMS",
    "AttemptRecord",
    "Duration",
    "PlanResult",
    "PlanSettings",
    "RetryPolicy",
    "RunCounters",
    "TaskStep",
    "TimelinePoint",
    "Workflow",
    "extract_workflows",
    "load_workflow",
    "parse_neighbour",
    "plan_lower_bound",
    "simulate",
]
