"""The benchmark's scenarios: the app's real state machine with only the named parameters changed.

Each scenario is the shipped template plus template parameters and, where no parameter exists, a
rewrite of every Task's ``Retry`` list (``orderbatch.capacity.retriers``, the local cloud's
``definition_transform``).
"""

from __future__ import annotations

from orderbatch.capacity.retriers import with_docs_retrier, without_second_pass, without_throttle_jitter
from orderbatch.capacity.scenario import Scenario, Targets

SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "tuned",
            "the app as shipped, MaxConcurrency = the quota",
            1.0,
            Targets(
                max_bound_ratio=1.10, max_lost=0, max_throttles_per_order=0.05, max_failed_by_throttling=0
            ),
            changed=("MapMaxConcurrency = C",),
        ),
        Scenario(
            "oversubscribed",
            "MaxConcurrency 3 x the quota, the app's retriers (backoff, full jitter, cap)",
            3.0,
            Targets(max_bound_ratio=1.25, max_lost=0),
            changed=("MapMaxConcurrency = 3C",),
        ),
        Scenario(
            "docs-retrier",
            "oversubscribed, every Task retried only as AWS's 'Handle Lambda service exceptions' page "
            "shows (interval 2, 6 attempts, rate 2, no jitter, TooManyRequests not listed)",
            3.0,
            Targets(compare_with="tuned"),
            definition_transform=with_docs_retrier,
            changed=("MapMaxConcurrency = 3C", "every Task's Retry = the docs retrier"),
        ),
        Scenario(
            "no-jitter",
            "oversubscribed, TooManyRequests retried with the same backoff but JitterStrategy NONE",
            3.0,
            Targets(compare_with="tuned"),
            definition_transform=without_throttle_jitter,
            changed=("MapMaxConcurrency = 3C", "TooManyRequests retrier JitterStrategy = NONE"),
        ),
        Scenario(
            "noisy-neighbour",
            "tuned, while another tenant holds half the quota for most of the run",
            1.0,
            Targets(max_bound_ratio=1.25, max_lost=0, max_failed_by_throttling=0),
            neighbour_share=0.5,
            changed=("MapMaxConcurrency = C", "a neighbour holds C/2 for most of the run"),
        ),
        Scenario(
            "noisy-neighbour-no-second-pass",
            "noisy-neighbour with the design before the second pass: an order whose throttle retrier runs "
            "out is compensated at once (the old policy, for comparison)",
            1.0,
            Targets(compare_with="noisy-neighbour"),
            neighbour_share=0.5,
            definition_transform=without_second_pass,
            changed=(
                "MapMaxConcurrency = C",
                "a neighbour holds C/2 for most of the run",
                "no Catch for TooManyRequests alone (no second pass)",
            ),
        ),
    )
}

SCALE = Scenario(
    "scale",
    "a large batch from S3 through the Distributed Map with no added work: the local cloud's own cost "
    "per order (run with --orders 10000)",
    1.0,
    Targets(max_lost=0),
    changed=("orders in S3 (Distributed Map)", "MapMaxConcurrency = C", "d = 0"),
    source="s3",
    work_seconds=0.0,
    keep_every_environment=False,
)
SCENARIOS[SCALE.name] = SCALE

SOAK = Scenario(
    "soak",
    "batches back to back on one local cloud for --minutes, inline and S3 alternating, every fault kind "
    "at 5% on every function and a neighbour that comes and goes (run by orderbatch.bench.soak)",
    1.0,
    Targets(max_lost=0),
    changed=("MapMaxConcurrency = C", "faults at 5% of invocations", "neighbour C/2, 30 s on, 60 s off"),
    keep_every_environment=False,
)
SCENARIOS[SOAK.name] = SOAK

# What `orderbatch bench` runs when no scenario is named: the policy comparison at N = 200, not the
# scale run, which is meant for thousands of orders, nor the soak, which runs for half an hour.
DEFAULT_SCENARIOS = tuple(name for name in SCENARIOS if name not in {SCALE.name, SOAK.name})


def select(names: list[str] | None) -> list[Scenario]:
    if not names:
        return [SCENARIOS[name] for name in DEFAULT_SCENARIOS]
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; choose from {sorted(SCENARIOS)}")
    return [SCENARIOS[name] for name in names]
