"""The issue's scale: a million orders of four tasks on the default quota, in under a minute on one core."""

from __future__ import annotations

import resource
import time

import pytest

from orderbatch.lint.template_model import TemplateModel
from orderbatch.plan import PlanSettings, load_workflow, simulate

pytestmark = pytest.mark.slow


@pytest.mark.timeout(120)
def test_a_million_orders_plan_in_under_a_minute(app_model: TemplateModel) -> None:
    # Given the app's default Map (the Distributed one) at 1,000 children, the account quota of 1,000
    workflow = load_workflow(app_model, parameter_overrides={"MapMaxConcurrency": 1000})

    # When a million orders are planned
    started = time.perf_counter()
    result = simulate(workflow, PlanSettings(orders=1_000_000, account_concurrency=1000))
    elapsed = time.perf_counter() - started

    # Then it took under a minute and stayed well under 1 GB, and every order was accounted for
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert elapsed < 60, f"{elapsed:.1f} s"
    assert peak_rss_mb < 1024, f"{peak_rss_mb:.0f} MB"
    counters = result.counters
    assert counters.succeeded + counters.failed == 1_000_000
    assert counters.peak_account <= 1000
    assert result.makespan_seconds >= result.bound_seconds * 0.99
    assert len(result.timeline) <= 2 * result.settings.timeline_points + 1
