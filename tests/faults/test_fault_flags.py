"""`orderbatch local up` fault flags and state folder, and the example fault file (no cloud needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from orderbatch.commands.local import STATE_DIR_MARKER, prepare_state_dir
from orderbatch.faults.flags import fault_plan_from_args, parse_fault_flag
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import FaultPlan

EXAMPLE = PROJECT_ROOT / "examples" / "faults.yaml"


def flags(
    faults: Path | None = None, fault: list[str] | None = None, neighbour: str | None = None
) -> argparse.Namespace:
    return argparse.Namespace(faults=faults, fault=fault or [], noisy_neighbour=neighbour)


def test_a_fault_flag_becomes_a_rule_as_in_a_plan_file() -> None:
    assert parse_fault_flag("ChargePaymentFunction:error_after_body:attempts=1+3") == (
        "ChargePaymentFunction",
        {"kind": "error_after_body", "attempts": [1, 3]},
    )
    assert parse_fault_flag("ReserveInventoryFunction:timeout:phase=before_body,probability=0.05") == (
        "ReserveInventoryFunction",
        {"kind": "timeout", "phase": "before_body", "probability": "0.05"},
    )


def test_flags_add_to_the_plan_file_and_a_bad_rule_is_refused_by_name() -> None:
    plan = fault_plan_from_args(
        flags(EXAMPLE, ["ConfirmOrderFunction:latency:seconds=0.5"], neighbour="3:10")
    )

    assert isinstance(plan, FaultPlan)
    assert [rule.kind for rule in plan.functions["ChargePaymentFunction"]] == [
        "error_after_body",
        "response_delay",
    ]
    assert plan.functions["ConfirmOrderFunction"][0].seconds == 0.5
    assert plan.functions["ReserveInventoryFunction"][-1].kind == "latency"
    assert (plan.noisy_neighbour.slots, plan.noisy_neighbour.duration_seconds) == (3, 10.0)  # type: ignore[union-attr]
    assert fault_plan_from_args(flags()) is None
    with pytest.raises(SystemExit, match="unknown fault kind 'explode'"):
        fault_plan_from_args(flags(fault=["ChargePaymentFunction:explode"]))
    with pytest.raises(SystemExit, match="FUNCTION:KIND"):
        fault_plan_from_args(flags(fault=["ChargePaymentFunction"]))


def test_the_state_folder_is_cleared_only_when_local_up_made_it(tmp_path: Path) -> None:
    state = prepare_state_dir(tmp_path / "state")
    (state / "logs").mkdir()
    (state / "logs" / "old.log").write_text("previous run")

    again = prepare_state_dir(tmp_path / "state")

    assert again == state
    assert sorted(p.name for p in state.iterdir()) == [STATE_DIR_MARKER]
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("not ours")
    with pytest.raises(SystemExit, match="not empty"):
        prepare_state_dir(foreign)
    assert (foreign / "keep.txt").exists()
