"""The fault kinds registry: every kind documented, reachable from `--fault`, known to the runtime shim."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orderbatch.app_batches import order_event_keys
from orderbatch.cli import build_parser
from orderbatch.faults.flags import fault_plan_from_args
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import FaultPlan, runtime_shim
from sam_local_cloud.faults import FAULT_KINDS, Crash, FaultInjector, FaultRule, Timeout

FAULTS_DOC = PROJECT_ROOT / "docs" / "faults.md"
# The options a kind cannot do without; a new kind with required fields adds its own here.
REQUIRED_OPTIONS = {"latency": "seconds=0.5", "response_delay": "seconds=2", "crash": "point=before_body"}


def documented_kinds() -> list[str]:
    """The first column of the kinds table in docs/faults.md."""
    lines = FAULTS_DOC.read_text().splitlines()
    header = lines.index("| kind | what happens | where it runs | what the caller sees |")
    kinds = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cell = re.fullmatch(r"\| `(\w+)` \|.*", line)
        assert cell is not None, f"a kinds table row without a kind name: {line}"
        kinds.append(cell.group(1))
    return kinds


def rule_from_flag(kind: str) -> FaultRule:
    """The rule `orderbatch local up --fault Function:KIND[:options]` puts in the plan."""
    flag = f"Function:{kind}:{REQUIRED_OPTIONS[kind]}" if kind in REQUIRED_OPTIONS else f"Function:{kind}"
    args = build_parser().parse_args(["local", "up", "--fault", flag])
    plan = fault_plan_from_args(args)
    assert isinstance(plan, FaultPlan)
    (rule,) = plan.functions["Function"]
    return rule


def test_every_kind_in_the_registry_is_documented_once_and_nothing_else_is() -> None:
    documented = documented_kinds()

    assert sorted(documented) == sorted(FAULT_KINDS)


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_every_kind_is_reachable_from_the_fault_flag(kind: str) -> None:
    rule = rule_from_flag(kind)

    assert type(rule) is FAULT_KINDS[kind]
    assert rule.kind == kind
    assert FaultRule.from_dict(rule.to_dict()) == rule, "the plan document round-trips"


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_the_runtime_shim_acts_on_exactly_the_kinds_with_a_runtime_part(kind: str) -> None:
    directive = rule_from_flag(kind).directive()

    if directive is None:
        assert kind not in runtime_shim.DIRECTIVES
    else:
        assert directive["kind"] == kind
        assert kind in runtime_shim.DIRECTIVES
    assert set(runtime_shim.DIRECTIVES) <= set(FAULT_KINDS)


def test_an_unknown_kind_on_the_flag_names_the_registry_s_kinds() -> None:
    args = build_parser().parse_args(["local", "up", "--fault", "Function:explode"])

    with pytest.raises(SystemExit, match=r"unknown fault kind 'explode'.*latency, error_before_body"):
        fault_plan_from_args(args)


def test_a_field_of_another_kind_is_refused_and_a_timeout_keeps_its_phase() -> None:
    with pytest.raises(ValueError, match="fault latency: only a error_before_body or error_after_body"):
        FaultRule.from_dict({"kind": "latency", "seconds": 1, "error_type": "E"})
    with pytest.raises(ValueError, match=r"unknown fault rule fields \[.colour.\]"):
        FaultRule.from_dict({"kind": "timeout", "colour": "red"})

    assert FaultRule.from_dict({"kind": "timeout"}) == Timeout(phase="after_body")
    assert FaultRule.from_dict({"kind": "timeout", "phase": "before_body"}).directive() == {
        "kind": "timeout",
        "phase": "before_body",
    }


def directive_for(rules: list[dict[str, object]], tmp_path: Path) -> dict[str, object] | None:
    plan = FaultPlan.from_dict({"functions": {"F": rules}})
    injector = FaultInjector(plan, marker_dir=tmp_path, event_keys=order_event_keys())
    decision = injector.decide("F", json.dumps({"order_id": "o-1"}).encode())
    assert decision is not None
    return decision.directive()


def test_the_directive_carries_the_outcome_kind_the_recording_and_the_order_key(tmp_path: Path) -> None:
    record = {"kind": "record_calls"}

    assert directive_for([record], tmp_path) == {"kind": "record_calls", "record_calls": True, "tag": "o-1"}
    assert directive_for([{"kind": "error_after_body", "error_type": "Lost"}, record], tmp_path) == {
        "kind": "error_after_body",
        "error_type": "Lost",
        "error_message": "fault injected by the local Lambda service",
        "record_calls": True,
        "tag": "o-1",
    }
    # The service settles an error before the body: the runtime is not reached, so it gets nothing.
    assert directive_for([{"kind": "error_before_body"}, record], tmp_path) is None
    assert directive_for([{"kind": "latency", "seconds": 0.1}], tmp_path) is None
    crash = directive_for([{"kind": "crash", "point": "before_response", "once": True}], tmp_path)
    assert crash is not None
    assert (crash["kind"], crash["point"]) == (Crash.kind, "before_response")
    assert Path(str(crash["once_marker"])).parent == tmp_path


def test_the_injector_counts_each_kind_it_injected_and_not_an_outcome_an_earlier_rule_took(
    tmp_path: Path,
) -> None:
    plan = FaultPlan.from_dict(
        {
            "functions": {
                "ChargePaymentFunction": [
                    {"kind": "error_before_body", "attempts": [1]},
                    # Fires on attempt 1 too, but the first outcome rule took that attempt's outcome.
                    {"kind": "error_after_body", "attempts": [1, 3]},
                    {"kind": "response_delay", "seconds": 1, "attempts": [2]},
                    {"kind": "record_calls", "attempts": [2, 3]},
                ],
                "OrderBatchStateMachine": [{"kind": "duplicate_execution", "attempts": [1]}],
            },
            "latency": {"ChargePaymentFunction": 0.1},
        }
    )
    injector = FaultInjector(plan, marker_dir=tmp_path, event_keys=order_event_keys())
    event = json.dumps({"order": {"order_id": "o-1"}, "batch_id": "b-1"}).encode()

    for _ in range(3):
        injector.decide("ChargePaymentFunction", event)
    injector.decide("OrderBatchStateMachine", event)
    injector.decide("ValidateOrderFunction", event)  # no rules: nothing decided, nothing counted

    assert injector.injected() == {
        "error_before_body": 1,
        "error_after_body": 1,
        "response_delay": 1,
        "record_calls": 2,
        "latency": 3,
        "duplicate_execution": 1,
    }
    # The counts outlive a new plan: a soak sets one every cycle and diffs the totals.
    injector.set_plan(FaultPlan())
    assert injector.injected()["latency"] == 3
