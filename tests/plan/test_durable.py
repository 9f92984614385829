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
from orderbatch.plan.durable import DurableModel, simulate_durable

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
    # One step (d = 0.5 s), quota 4, map concurrency 8, 8 orders, 429s retried after 1 s (no jitter).
    # 0.0-0.1 first replay; at 0.1 it dispatches 8 invokes: 4 run, 4 are 429s. Their failed invokes wake
    # the orchestrator at 0.1, but the 4 running invokes hold the quota: its own invocation is throttled
    # and Lambda retries it 1 s later. 1.1-1.2 replay: 4 orders done, 4 waits of 1 s. 2.2-2.3 replay:
    # the 4 invoke again; done at 2.8; 2.8-2.9 the last replay completes the execution.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=3)], max_concurrency=8))
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.makespan_seconds == pytest.approx(2.9)
    assert result.counters.task_throttles == 4
    assert result.counters.orchestrator_throttles == 1
    assert result.counters.orchestrator_invocations == 4
    assert result.counters.waits == 4
    assert result.throttles_per_order == pytest.approx(5 / 8)
    assert result.counters.operations == 2 + 8 + 12 + 4
    assert result.counters.succeeded == 8
    assert result.failed_orders == 0


def test_an_order_whose_429_retries_are_spent_is_cancelled() -> None:
    # As above but 429s are never retried: the 1.1-1.2 replay sees 4 succeeded and 4 failed orders and
    # invokes the compensation for the 4; they run 1.2-1.7; the 1.7-1.8 replay ends the execution.
    workflow = load_workflow(small_model(retry=[throttle_retrier(attempts=0)], max_concurrency=8))
    settings = idealised(orders=8, account_concurrency=4, work_seconds=0.5)

    result = simulate_durable(workflow, settings, REPLAY)

    assert result.makespan_seconds == pytest.approx(1.8)
    assert result.counters.succeeded == 4
    assert result.failed_orders == 4
    assert result.counters.compensated == 4
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
