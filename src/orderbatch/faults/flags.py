"""The fault flags of `orderbatch local up` (and `local docker`): a fault plan file, single rules and a
noisy neighbour, merged into one ``FaultPlan`` (docs/faults.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sam_local_cloud.faults import FAULT_KINDS

FAULT_FLAG_FORMAT = "FUNCTION:KIND[:key=value,...]"


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--faults", type=Path, default=None, help="fault plan file, YAML or JSON (see docs/faults.md)"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar=FAULT_FLAG_FORMAT,
        help=f"one fault rule, added to --faults; KIND is one of {', '.join(FAULT_KINDS)}; e.g. "
        "ChargePaymentFunction:error_after_body:attempts=1 or "
        "ReserveInventoryFunction:timeout:phase=before_body,probability=0.05 (attempts: 1+3 for 1 and 3); "
        "a state machine's: OrderBatchStateMachine:duplicate_execution:probability=0.1",
    )
    parser.add_argument(
        "--noisy-neighbour",
        default=None,
        metavar="SLOTS:SECONDS[:START_AFTER]",
        help="another workload holding SLOTS of the account's concurrency for SECONDS",
    )


def parse_fault_flag(flag: str) -> tuple[str, dict[str, Any]]:
    """`FUNCTION:KIND[:key=value,...]` -> (function, rule document as in a fault plan file)."""
    function, _, rest = flag.partition(":")
    kind, _, options = rest.partition(":")
    if not function or not kind:
        raise SystemExit(f"orderbatch: --fault must look like {FAULT_FLAG_FORMAT}, got {flag!r}")
    if kind not in FAULT_KINDS:
        raise SystemExit(
            f"orderbatch: unknown fault kind {kind!r} in {flag!r}; expected one of {', '.join(FAULT_KINDS)}"
        )
    rule: dict[str, Any] = {"kind": kind}
    for option in filter(None, options.split(",")):
        key, separator, value = option.partition("=")
        if not separator or not key:
            raise SystemExit(
                f"orderbatch: --fault option must look like key=value, got {option!r} in {flag!r}"
            )
        rule[key] = [int(a) for a in value.split("+")] if key == "attempts" else value
    return function, rule


def parse_noisy_neighbour(value: str) -> dict[str, float]:
    parts = value.split(":")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (2, 3):
        raise SystemExit(
            f"orderbatch: --noisy-neighbour must look like SLOTS:SECONDS[:START_AFTER], got {value!r}"
        )
    neighbour = {"slots": int(numbers[0]), "duration_seconds": numbers[1]}
    if len(numbers) == 3:
        neighbour["start_after_seconds"] = numbers[2]
    return neighbour


def fault_plan_from_args(args: argparse.Namespace) -> Any:
    """The --faults file plus every --fault and --noisy-neighbour flag, or None when there are none."""
    import yaml

    from sam_local_cloud import FaultPlan

    flags = getattr(args, "fault", []) or []
    neighbour = getattr(args, "noisy_neighbour", None)
    if not args.faults and not flags and not neighbour:
        return None
    document: dict[str, Any] = dict(yaml.safe_load(args.faults.read_text()) or {}) if args.faults else {}
    functions = {name: list(rules) for name, rules in (document.get("functions") or {}).items()}
    for flag in flags:
        function, rule = parse_fault_flag(flag)
        functions.setdefault(function, []).append(rule)
    document["functions"] = functions
    if neighbour:
        document["noisy_neighbour"] = parse_noisy_neighbour(neighbour)
    try:
        return FaultPlan.from_dict(document)
    except (TypeError, ValueError) as error:
        raise SystemExit(f"orderbatch: invalid fault plan: {error}") from None
