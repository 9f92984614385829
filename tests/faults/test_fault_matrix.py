"""Every fault kind of GitHub issue 4 against the app as shipped: 0 orders lost, 0 effects doubled.

One local cloud serves the module (quota 10, MapMaxConcurrency 8, function timeout 8 s). Each scenario
sets its fault plan, runs a batch (or, for the client timeout, direct calls) and audits it. The batch
scenarios run twice: on the state machine, and on the durable function, whose chained invokes of the
same task functions take the same faults and go through its own retriers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fault_matrix import ORDERS, Scenario, cloud_fixture, fault_plan, orders_for, run_batch, run_direct

from sam_local_cloud import LocalCloud

pytestmark = pytest.mark.e2e

CONFIGURATION = "as shipped"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    yield from cloud_fixture()


def assert_clean(run_report: object) -> None:
    from orderbatch.audit import AuditReport

    assert isinstance(run_report, AuditReport)
    assert run_report.lost == []
    assert run_report.doubled == []
    assert run_report.violations == []
    assert run_report.outcomes == {"SUCCEEDED": ORDERS}


# The default suite runs the state machine's scenarios and the durable function's under timeouts (the
# fault that kills runtimes mid-body); the durable function's others are slow, with the whole matrix.
ORCHESTRATORS = ("stepfunctions", pytest.param("durable", marks=pytest.mark.slow))
KINDS = ["latency", "error_before_body", "error_after_body", "timeout"]
BATCH_SCENARIOS = [
    *((kind, "stepfunctions") for kind in KINDS),
    *(pytest.param(kind, "durable", marks=() if kind == "timeout" else pytest.mark.slow) for kind in KINDS),
]


@pytest.mark.parametrize(("kind", "orchestrator"), BATCH_SCENARIOS)
def test_a_batch_under_the_fault_loses_nothing_and_doubles_nothing(
    cloud: LocalCloud, kind: str, orchestrator: str
) -> None:
    batch_id = f"fm-{kind.replace('_', '-')}" + ("-durable" if orchestrator == "durable" else "")
    with Scenario(cloud, kind, CONFIGURATION, fault_plan(kind)) as scenario:
        run = run_batch(cloud, scenario, batch_id, orders_for(batch_id), orchestrator=orchestrator)

    assert run.report.orchestrator == orchestrator
    assert_clean(run.report)
    if kind == "error_after_body":
        # Powertools replays the stored result: the body ran once, only the response was lost, where
        # with idempotency off every order's bodies run twice (test_defence_controls). A few may still
        # run twice on a loaded machine, when an invocation is killed mid-body past its timeout.
        assert run.figures.orders_run_more_than_once < max(2, ORDERS // 10)
    if kind != "latency":
        assert run.figures.retries > 0, "the fault never fired"


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_a_noisy_neighbour_throttles_a_map_that_fits_the_quota_and_nothing_is_lost(
    cloud: LocalCloud, orchestrator: str
) -> None:
    batch_id = "fm-noisy-neighbour" + ("-durable" if orchestrator == "durable" else "")
    with Scenario(cloud, "noisy_neighbour", CONFIGURATION, fault_plan("noisy_neighbour")) as scenario:
        run = run_batch(cloud, scenario, batch_id, orders_for(batch_id), orchestrator=orchestrator)

    assert_clean(run.report)
    assert run.figures.throttles > 0


def test_direct_callers_whose_read_times_out_retry_into_one_effect(cloud: LocalCloud) -> None:
    batch_id = "fm-client-timeout"
    with Scenario(cloud, "client_timeout", CONFIGURATION, fault_plan("client_timeout")) as scenario:
        run = run_direct(cloud, scenario, batch_id, orders_for(batch_id))

    assert_clean(run.report)
    assert run.read_timeouts > 0, "no SDK retry after a read timeout"
    assert run.figures.orders_run_more_than_once < max(2, ORDERS // 10)
