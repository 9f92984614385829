"""Control runs: each defence matters.

With Powertools idempotency off, the body runs twice after a lost response (error after the body, a
direct caller's read timeout, an environment killed past its timeout after the body) and the keyed
effects still land once. With the effect keys off as well,
the audit fails and names the doubled orders, and `orderbatch audit` exits non-zero.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fault_matrix import (
    BOTH_DEFENCES_OFF,
    FEW_ORDERS,
    IDEMPOTENCY_OFF,
    ORDERS,
    FaultRun,
    Scenario,
    cloud_fixture,
    fault_plan,
    orders_for,
    run_batch,
    run_direct,
)

from orderbatch.cli import main
from sam_local_cloud import LocalCloud

pytestmark = pytest.mark.e2e

LOST_RESPONSE_KINDS = ("error_after_body", "client_timeout")


def run_scenario(cloud: LocalCloud, kind: str, configuration: str, prefix: str) -> FaultRun:
    batch_id = f"{prefix}-{kind.replace('_', '-')}"
    with Scenario(cloud, kind, configuration, fault_plan(kind)) as scenario:
        runner = run_direct if kind == "client_timeout" else run_batch
        return runner(cloud, scenario, batch_id, orders_for(batch_id))


# The steps whose body a scenario's fault makes run again once idempotency is off (the timeout
# scenario kills Reserve after its body but Charge before it).
REPEATED_STEPS = {
    "error_after_body": ("reserve_inventory", "charge_payment"),
    "client_timeout": ("reserve_inventory", "charge_payment"),
    "timeout": ("reserve_inventory",),
}


def orders_whose_steps_ran_again(run: FaultRun, kind: str) -> int:
    """Orders whose faulted steps' bodies each ran more than once (the smallest count over the steps)."""
    histogram = run.report.body_runs_by_step
    return min(
        sum(orders for runs, orders in histogram.get(step, {}).items() if int(runs) > 1)
        for step in REPEATED_STEPS[kind]
    )


class TestIdempotencyOff:
    @pytest.fixture(scope="class")
    @classmethod
    def cloud(cls) -> Iterator[LocalCloud]:
        yield from cloud_fixture(IDEMPOTENCY_OFF)

    @pytest.mark.parametrize("kind", [*LOST_RESPONSE_KINDS, "timeout"])
    def test_the_body_runs_twice_and_the_keyed_effects_land_once(self, cloud: LocalCloud, kind: str) -> None:
        run = run_scenario(cloud, kind, "idempotency off", "ctl-keys")

        if ORDERS <= FEW_ORDERS:  # the fault hit every order's first attempt
            assert orders_whose_steps_ran_again(run, kind) == ORDERS
        else:
            assert run.report.body_runs_beyond_one > 0
        assert run.report.lost == []
        assert run.report.doubled == []
        assert run.report.violations == []


class TestBothDefencesOff:
    @pytest.fixture(scope="class")
    @classmethod
    def cloud(cls) -> Iterator[LocalCloud]:
        yield from cloud_fixture(BOTH_DEFENCES_OFF)

    @pytest.mark.parametrize("kind", LOST_RESPONSE_KINDS)
    def test_the_audit_fails_and_names_the_doubled_orders(self, cloud: LocalCloud, kind: str) -> None:
        run = run_scenario(cloud, kind, "both defences off", "ctl-none")

        assert run.report.ok is False
        assert run.report.doubled, "no doubled effect although both defences are off"
        if ORDERS <= FEW_ORDERS:
            assert run.report.doubled == sorted(o["order_id"] for o in orders_for(run.report.batch_id))
        named = {v.order_id for v in run.report.violations if v.check.startswith("doubled")}
        assert named == set(run.report.doubled)
        checks = {v.check for v in run.report.violations}
        assert {"doubled charge", "doubled stock decrement"} <= checks

    def test_orderbatch_audit_exits_non_zero_and_lists_every_violation(
        self, cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        batch_id = "ctl-none-error-after-body"  # broken by the error_after_body case above
        for name, value in cloud.environment().items():
            monkeypatch.setenv(name, value)

        exit_code = main(["audit", batch_id, "--json", "--logs", str(cloud.log_dir)])
        report: dict[str, Any] = json.loads(capsys.readouterr().out)

        assert exit_code == 1
        assert report["ok"] is False
        assert report["lost"] == []
        assert report["doubled"]
        assert {v["order_id"] for v in report["violations"]} >= set(report["doubled"])
        assert report["body_runs_beyond_one"] > 0

    def test_orderbatch_audit_exits_zero_on_a_clean_batch(
        self, cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        batch_id = "ctl-none-clean"
        with Scenario(cloud, "none", "both defences off", {}) as scenario:
            run_batch(cloud, scenario, batch_id, orders_for(batch_id, 5))
        for name, value in cloud.environment().items():
            monkeypatch.setenv(name, value)

        exit_code = main(["audit", batch_id, "--logs", str(cloud.log_dir)])

        assert exit_code == 0, capsys.readouterr().out
        assert "OK: every order accounted for" in capsys.readouterr().out
