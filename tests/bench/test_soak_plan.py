"""The soak's plan, verdict and memory tracer, without a local cloud (the soak itself is test_soak.py)."""

from __future__ import annotations

from pathlib import Path

from orderbatch.bench.memory_trace import MemoryTracer
from orderbatch.bench.soak import SoakSettings, SoakTotals, planned_kinds, verdict
from sam_local_cloud.faults import FAULT_KINDS


def settings(tmp_path: Path, **changes: object) -> SoakSettings:
    return SoakSettings(template=tmp_path / "template.yaml", **changes)  # type: ignore[arg-type]


def test_the_plan_injects_every_kind_the_local_cloud_has(tmp_path: Path) -> None:
    assert planned_kinds(settings(tmp_path)) == sorted(FAULT_KINDS)


def test_memory_is_judged_from_minute_10_in_runs_of_30_minutes_or_more_unless_told(tmp_path: Path) -> None:
    assert settings(tmp_path, minutes=120).judged_from_minute == 10
    assert settings(tmp_path, minutes=30).judged_from_minute == 10
    assert settings(tmp_path, minutes=8).judged_from_minute == 5
    assert settings(tmp_path, minutes=8, baseline_minute=2).judged_from_minute == 2


def test_a_complete_cycle_without_a_per_invocation_kind_fails_the_goal_and_names_it(tmp_path: Path) -> None:
    soak = settings(tmp_path)
    every_kind = dict.fromkeys(planned_kinds(soak), 3)
    without_timeouts = {kind: n for kind, n in every_kind.items() if kind != "timeout"}
    cycles = [
        {"cycle": 1, "complete": True, "injected": every_kind},
        {"cycle": 2, "complete": True, "injected": without_timeouts},
        # The last cycle, cut short when submitting stopped, is not judged.
        {"cycle": 3, "complete": False, "injected": {"latency": 1}},
    ]

    judged = verdict(soak, SoakTotals(), [], cycles)
    clean = verdict(soak, SoakTotals(), [], [cycles[0], cycles[2]])

    check = judged["checks"]["every_fault_kind_each_cycle"]
    assert (check["actual"], check["met"], judged["met"]) == (1, False, False)
    assert check["cycles_missing_kinds"] == [{"cycle": 2, "missing": ["timeout"]}]
    assert (clean["checks"]["every_fault_kind_each_cycle"]["met"], clean["met"]) == (True, True)
    assert (
        verdict(soak, SoakTotals(), [], [cycles[2]])["checks"]["every_fault_kind_each_cycle"]["met"] is None
    )


def test_duplicate_children_are_judged_over_the_run_not_in_each_cycle(tmp_path: Path) -> None:
    """A cycle in which no S3 batch started children cannot run one twice; the run as a whole must."""
    soak = settings(tmp_path)
    every_kind = dict.fromkeys(planned_kinds(soak), 3)
    without_duplicates = {kind: n for kind, n in every_kind.items() if kind != "duplicate_execution"}
    once_in_the_run = verdict(
        soak,
        SoakTotals(),
        [],
        [
            {"cycle": 1, "complete": True, "injected": every_kind},
            {"cycle": 2, "complete": True, "injected": without_duplicates},
        ],
    )
    never = verdict(soak, SoakTotals(), [], [{"cycle": 1, "complete": True, "injected": without_duplicates}])

    assert once_in_the_run["met"] is True
    assert once_in_the_run["checks"]["every_fault_kind_in_run"]["per_kind"]["duplicate_execution"] == 3
    assert never["met"] is False
    assert never["checks"]["every_fault_kind_each_cycle"]["met"] is True
    assert never["checks"]["every_fault_kind_in_run"]["never_injected"] == ["duplicate_execution"]


def test_the_tracer_names_the_line_whose_allocations_grew_since_the_reference(tmp_path: Path) -> None:
    tracer = MemoryTracer(tmp_path / "trace.txt", frames=4).start()
    try:
        tracer.set_reference("minute 1")
        held = [bytes(1024) + bytes([n % 256]) for n in range(2000)]  # about 2 MiB kept
        sites = tracer.dump("minute 2")
    finally:
        tracer.stop()

    assert len(held) == 2000
    top = sites[0]
    assert top.where.startswith(f"{__file__}:")
    assert top.size_change_kib > 1900
    assert top.count_change >= 2000
    text = (tmp_path / "trace.txt").read_text()
    assert text.startswith("allocation growth from minute 1 to minute 2\n")
    assert __file__ in text
