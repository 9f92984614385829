"""The durable orchestrator's model in virtual time: makespans, replays and 429s derived by hand.

Every case uses fixed durations d, a replay time r and no cold start, so each figure follows from the
sequence of waves the module doc of orderbatch.plan.durable describes; the derivation is in each test.
"""

from __future__ import annotations

import json

import pytest
from plan_helpers import idealised, small_model, throttle_retrier

from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import load_workflow
from orderbatch.plan.durable import DurableModel, OperationsLimitError, simulate_durable

REPLAY = DurableModel(replay_base_seconds=0.1, replay_per_operation_seconds=0.0)


def test_without_429s_each_step_is_a_wave_of_work_then_one_replay(app_model: TemplateModel) -> None:
    # Quota 10, map concurrency 8, 16 orders of the app's k = 4 steps of d = 1 s, replays of r = 0.1 s.
    # The first replay starts 8 orders; each wave of 8 invokes ends together and one replay dispatches
    # the next step (the orchestrator's slot is free again before it dispatches, so 8 + 1 <= 10: no 429).
    # Makespan r + ceil(N/M).k.(d + r) = 0.1 + 2 x 4 x 1.1 = 8.9 s; replays 1 + k.ceil(N/M) = 9;
    # operations: execution + map, a context per order, an invoke per step: 2 + 16 + 64 = 82.
    workflow = load_workflow(app_model)
    settings = idealised(orders=16, account_concurrency=10, work_seconds=1.0, max_concurrency=8)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.makespan_seconds == pytest.approx(8.9)
    assert result.counters.orchestrator_invocations == 9
    assert result.throttles == 0
    assert result.counters.operations == 82
    assert result.counters.succeeded == 16
    assert result.counters.task_calls == 64
    # Lambda: 64 task calls + 9 replays; 64 s at 256 MB + 0.9 s at 256 MB.
    assert result.lambda_gb_seconds == pytest.approx(64 * 0.25 + 0.9 * 0.25)
    # Durable functions: 82 operations at $8/M, 82 KB written at $0.25/GB, retained 7 days at
    # $0.15/GB-month; per million orders (x 1e6 / 16).
    gigabytes = 82 / 1024**2
    expected = (82 * 8e-6 + gigabytes * 0.25 + gigabytes * 7 / 30 * 0.15) * 1e6 / 16
    assert result.cost_per_million_orders["durable_functions"] == pytest.approx(expected, abs=0.01)


def test_429s_cost_a_replay_to_see_them_and_another_after_the_wait() -> None:
    # One step (d = 0.5 s), quota 4, map concurrency 8, 8 orders, 429s retried after 1 s, then 2 s (no
    # jitter). 0.0-0.1 the first replay dispatches 8 invokes while it holds a slot: 3 run, 5 are 429s.
    # 0.1-0.2 a replay sees them and waits 1 s. 0.6-0.7 a replay sees 3 orders done. 1.2-1.3 the waits'
    # end: 5 invokes, 3 run, 2 are 429s again; 1.3-1.4 a replay waits 2 s for them. 1.8-1.9 three more
    # done. 3.4-3.5 the last 2 run, done at 4.0; 4.0-4.1 the last replay ends the execution.
    # Replays: 0, 0.1, 0.6, 1.2, 1.3, 1.8, 3.4, 4.0 = 8; 429s 5 + 2 = 7, each a wait;
    # operations 2 + 8 contexts + 15 invokes + 7 waits = 32.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=3)], max_concurrency=8))
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.makespan_seconds == pytest.approx(4.1)
    assert result.counters.orchestrator_invocations == 8
    assert result.counters.task_throttles == 7
    assert result.counters.orchestrator_throttles == 0
    assert result.counters.waits == 7
    assert result.throttles_per_order == pytest.approx(7 / 8)
    assert result.counters.operations == 32
    assert result.counters.succeeded == 8
    assert result.failed_orders == 0


def test_a_map_as_wide_as_the_quota_throttles_because_the_orchestrator_holds_a_slot(
    app_model: TemplateModel,
) -> None:
    # Quota 4 and max_concurrency 4: the replay that dispatches 4 invokes holds the fifth slot.
    workflow = load_workflow(app_model)
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5, max_concurrency=4)

    assert simulate_durable(workflow, settings, REPLAY).counters.task_throttles > 0
    narrower = idealised(orders=8, account_concurrency=4, work_seconds=0.5, max_concurrency=3)
    assert simulate_durable(workflow, narrower, REPLAY).counters.task_throttles == 0


def test_two_executions_throttle_each_others_replays() -> None:
    # Two batches on quota 4: one execution's invokes can take the slot the other's replay needs, and a
    # throttled replay is retried by Lambda (1 s, doubling); every order still succeeds.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=3)], max_concurrency=8))
    settings = idealised(orders=8, batches=2, account_concurrency=4, work_seconds=0.5)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.counters.orchestrator_throttles > 0
    assert result.counters.succeeded == 16


def test_an_order_whose_429_retries_are_spent_is_cancelled() -> None:
    # As above but 429s are never retried. 0.1: 3 run, 5 are 429s. 0.1-0.2 a replay fails the 5 and
    # invokes their compensation while 3 tasks and itself hold the quota: 5 more 429s, not retried either,
    # so 5 compensations fail; 0.2-0.3 a replay records that; 0.6-0.7 a replay sees the 3 done, the last.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=0)], max_concurrency=8))
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.makespan_seconds == pytest.approx(0.7)
    assert result.counters.orchestrator_invocations == 4
    assert result.counters.task_throttles == 10
    assert result.counters.succeeded == 3
    assert result.failed_orders == 5
    assert result.counters.compensation_failed == 5
    assert result.counters.waits == 0


def test_replay_time_grows_with_the_history() -> None:
    # One order, one step, one replay per wave: replays start with 2 + 0 operations (the first) and then
    # 2 + 1 + 1 = 4 (context and invoke checkpointed); at 0.01 s per operation they take 0.02 + 0.04 s.
    workflow = load_workflow(small_model(max_concurrency=1))
    model = DurableModel(replay_base_seconds=0.0, replay_per_operation_seconds=0.01)

    result = simulate_durable(workflow, idealised(orders=1, account_concurrency=2, work_seconds=1.0), model)

    assert result.counters.orchestrator_invocations == 2
    assert result.counters.orchestrator_seconds == pytest.approx(0.06)
    assert result.makespan_seconds == pytest.approx(1.06)


def test_the_same_seed_gives_the_same_plan_with_full_jitter(app_model: TemplateModel) -> None:
    workflow = load_workflow(app_model)
    settings = idealised(orders=60, account_concurrency=5, work_seconds=0.5, max_concurrency=8, seed=3)

    first, second = (simulate_durable(workflow, settings) for _ in range(2))

    assert first.counters.task_throttles > 0
    assert first.counters == second.counters
    assert first.counters.succeeded == 60


def test_plan_prints_both_orchestrators_and_the_json_carries_the_durable_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from orderbatch.cli import main

    arguments = [
        "plan",
        "--orders", "16",
        "--account-concurrency", "10",
        "--parameter-overrides", "MapMaxConcurrency=8",
        "--fixed-durations",
        "--cold-start", "0",
        "--work", "1",
        "--replay", "0.1,0",
    ]  # fmt: skip

    assert main(arguments) == 0
    text = capsys.readouterr().out
    assert main([*arguments, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)

    assert "Step Functions Standard" in text
    assert "durable function" in text
    (durable,) = document["durable_runs"]
    assert durable["makespan_seconds"] == pytest.approx(8.9)
    assert durable["lambda"]["orchestrator_invocations"] == 9
    assert durable["durable"]["operations"] == 82
    assert document["runs"][0]["orders"]["succeeded"] == 16


def test_a_batch_over_the_operations_limit_is_refused_with_the_largest_that_fits(
    app_model: TemplateModel,
) -> None:
    # 2 + N.(1 + 4) operations at the least: 4,999 orders fit in 25,000 (24,997), 5,000 do not (25,002).
    workflow = load_workflow(app_model)

    with pytest.raises(OperationsLimitError, match=r"25,002 operations.*at most 4,999 orders"):
        simulate_durable(workflow, idealised(orders=5_000, account_concurrency=10))


def test_when_the_service_retries_chained_429s_the_orchestrator_never_sees_them() -> None:
    # The 429 case above with the service retrying throttled invokes itself: no waits, no extra
    # operations (2 + 8 contexts + 8 invokes), and no replay woken by a 429.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=3)], max_concurrency=8))
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5)
    model = DurableModel(
        replay_base_seconds=0.1, replay_per_operation_seconds=0.0, service_retries_chained_throttles=True
    )

    result = simulate_durable(workflow, settings, model)

    assert result.counters.task_throttles >= 5
    assert result.counters.waits == 0
    assert result.counters.operations == 2 + 8 + 8
    assert result.counters.succeeded == 8
