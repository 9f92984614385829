"""What the planner reads from the app's template.yaml."""

from __future__ import annotations

import pytest

from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import extract_workflows, load_workflow
from orderbatch.plan.workflow import FUNCTION_TIMEOUT_ERROR, parse_parameter_overrides

FORWARD = ["Validate order", "Reserve inventory", "Charge payment", "Confirm order"]
FUNCTIONS = [
    "ValidateOrderFunction",
    "ReserveInventoryFunction",
    "ChargePaymentFunction",
    "ConfirmOrderFunction",
]


def test_every_order_passes_four_lambda_tasks_then_compensation_on_failure(app_model: TemplateModel) -> None:
    # When the planner reads the app's template
    workflows = extract_workflows(app_model)

    # Then it finds the three Maps (inline, JSON and CSV from S3), each with the same four tasks in order,
    # the S3 copies named with a suffix because state names are unique in the whole state machine, and
    # the two second passes after them
    assert [item.map_state for item in workflows] == [
        "Process inline orders",
        "Run deferred orders again",
        "Process JSON orders from S3",
        "Process CSV orders from S3",
        "Run deferred S3 orders again",
    ]
    first_passes = [workflows[0], workflows[2], workflows[3]]
    for workflow, suffix in zip(first_passes, ["", " (S3 JSON)", " (S3 CSV)"], strict=True):
        assert [step.state_name for step in workflow.forward] == [f"{name}{suffix}" for name in FORWARD]
        assert [step.function for step in workflow.forward] == FUNCTIONS
        assert [step.state_name for step in workflow.compensation] == [f"Cancel order{suffix}"]
        assert (workflow.second_pass_map, workflow.second_pass_concurrency) == (
            "Run deferred S3 orders again" if suffix else "Run deferred orders again",
            2,
        )
        cancel_index = workflow.forward_tasks
        for step in workflow.steps:
            # A throttle retrier spent in the batch sets the order aside: one Pass state, then the end
            assert step.defers
            assert (step.on_throttle_failure.next_step, step.on_throttle_failure.transitions) == (None, 1)
        for step in workflow.forward:
            # and in the second pass a forward task still throttled is caught into Cancel order
            last = step.on_throttle_failure_last_pass
            assert last is not None
            assert (last.next_step, last.transitions) == (cancel_index, 1)
        # Cancel's own failure goes to "Report failed compensation" then "Order finished": no Lambda task
        cancel = workflow.compensation[0].on_throttle_failure_last_pass
        assert cancel is not None
        assert (cancel.next_step, cancel.transitions) == (None, 2)


def test_the_design_without_the_second_pass_compensates_an_order_whose_retrier_ran_out(
    app_model: TemplateModel,
) -> None:
    workflow = load_workflow(app_model, map_state="Process inline orders", retrier="no-second-pass")

    cancel_index = workflow.forward_tasks
    assert not any(step.defers for step in workflow.steps)
    for step in workflow.forward:
        assert (step.on_throttle_failure.next_step, step.on_throttle_failure.transitions) == (cancel_index, 1)


def test_the_retriers_and_timeouts_are_those_the_template_says(app_model: TemplateModel) -> None:
    # When the planner reads the inline Map
    workflow = load_workflow(app_model, map_state="Process inline orders")

    # Then every task retries 429s after 1 s, rate 2, capped at 8 s, 20 times, with full jitter
    for step in workflow.steps:
        retry = step.throttle_retry
        assert retry is not None
        assert (retry.interval_seconds, retry.backoff_rate, retry.max_delay_seconds) == (1.0, 2.0, 8.0)
        assert (retry.max_attempts, retry.full_jitter) == (20, True)
        # the function's 10 s timeout comes before the Task's 15 s: a task failure, retried 3 times from 2 s
        assert (step.call_timeout_seconds, step.timeout_error) == (10.0, FUNCTION_TIMEOUT_ERROR)
        assert step.timeout_retry is not None
        assert (step.timeout_retry.interval_seconds, step.timeout_retry.max_attempts) == (2.0, 3)
        assert step.memory_mb == 256
        assert step.reserved_concurrency is None
    # and MaxConcurrency 8 comes from the template parameter MapMaxConcurrency
    assert (workflow.max_concurrency, workflow.max_concurrency_parameter) == (8, "MapMaxConcurrency")
    assert not workflow.distributed
    # 8 states per order that succeeds: 4 Tasks, 3 Choices and "Order finished"
    transitions = workflow.entry_transitions + sum(step.on_success.transitions for step in workflow.forward)
    assert transitions == 8
    # and 5 per batch: "Where are the orders?", the Map, the second pass's Pass and Map, the summary
    assert workflow.top_level_transitions == 5


def test_parameter_overrides_flow_through_the_definition_substitutions(app_model: TemplateModel) -> None:
    # Given overrides as sam deploy takes them
    overrides = parse_parameter_overrides(
        [
            "MapMaxConcurrency=16 ThrottleRetryMaxAttempts=5",
            "ChildExecutionType=EXPRESS FunctionTimeoutSeconds=4",
        ]
    )

    # When the planner reads the default Map with them
    workflow = load_workflow(app_model, parameter_overrides=overrides)

    # Then the first Distributed Map is chosen, with the new values
    assert workflow.map_state == "Process JSON orders from S3"
    assert (workflow.distributed, workflow.child_execution_type) == (True, "EXPRESS")
    assert workflow.max_concurrency == 16
    assert workflow.steps[0].throttle_retry is not None
    assert workflow.steps[0].throttle_retry.max_attempts == 5
    assert workflow.steps[0].call_timeout_seconds == 4.0


def test_an_unknown_parameter_is_refused(app_model: TemplateModel) -> None:
    with pytest.raises(ValueError, match="not a parameter of the template"):
        load_workflow(app_model, parameter_overrides={"MapMaxConcurency": "4"})


def test_the_benchmarks_retrier_rewrites_apply(app_model: TemplateModel) -> None:
    # When the planner reads the template with AWS's docs retrier, and without jitter
    docs = load_workflow(app_model, retrier="docs")
    no_jitter = load_workflow(app_model, retrier="no-jitter")

    # Then the docs retrier does not retry 429s at all; no-jitter keeps the backoff without jitter
    assert all(step.throttle_retry is None for step in docs.steps)
    for step in no_jitter.steps:
        assert step.throttle_retry is not None
        assert (step.throttle_retry.max_attempts, step.throttle_retry.full_jitter) == (20, False)


@pytest.mark.parametrize(
    ("orders", "map_state"), [(500, "Process inline orders"), (501, "Process JSON orders from S3")]
)
def test_the_benchmarks_batches_past_the_inline_limit_go_through_the_distributed_map(
    orders: int, map_state: str
) -> None:
    from orderbatch.bench.scenarios import SCENARIOS
    from orderbatch.capacity.scenario import BenchSettings
    from orderbatch.plan.scenarios import BENCH_MAP_STATES, plan_scenario
    from orderbatch.project import default_template

    # Given a policy scenario, whose batch is inline as long as the API would take it inline
    scenario = SCENARIOS["tuned"]

    # Then above 500 orders the benchmark puts it in S3, and its forecast simulates the same Map
    assert BENCH_MAP_STATES[scenario.source_for(orders)] == map_state
    assert scenario.source_for(orders) == ("inline" if orders <= 500 else "s3")
    forecast = plan_scenario(
        scenario, BenchSettings(template=default_template(), orders=orders, work_seconds=0.1)
    )
    assert forecast.workflow.map_state == map_state
    assert (forecast.counters.orders, forecast.failed_orders) == (orders, 0)
