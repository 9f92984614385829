"""What the crash-point matrix found: one result per case, per configuration and for the whole matrix
(which defence alone prevents a double effect where), and the tables it prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orderbatch.faults.crash_cases import (
    ALONE,
    AS_SHIPPED,
    BOTH_OFF,
    EFFECT_KEYS_OFF,
    STEPS_BY_NAME,
    VARIANTS,
)


@dataclass
class CaseResult:
    configuration: str
    function: str
    step: str
    point: str
    label: str
    key: str
    variant: str
    batch_id: str
    verdict: str
    ok: bool
    execution_status: str
    crashes: int
    subject_outcome: str | None
    # How many times the crashed step's body ran for the subject (None for the summary).
    body_runs: int | None
    lost: list[str]
    doubled: list[str]
    violations: list[str]
    seconds: float

    @property
    def cell(self) -> str:
        if not self.ok:
            return self.verdict
        return "ok" if not self.body_runs or self.body_runs == 1 else f"ok, body x{self.body_runs}"


@dataclass
class ConfigurationResult:
    configuration: str
    steps: list[str]
    points: dict[str, list[dict[str, str]]]
    cases: list[CaseResult]
    seconds: float
    # The local cloud's state folder (environment logs included), kept when a run was not clean.
    kept_state_dir: str | None = None
    # Which orchestrator ran the batches: "stepfunctions" or "durable".
    orchestrator: str = "stepfunctions"

    @property
    def ok(self) -> bool:
        return all(case.ok for case in self.cases)


@dataclass
class MatrixResult:
    main: ConfigurationResult
    controls: list[ConfigurationResult]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.main.ok and (not self.controls or bool(self.defences_shown()))

    def defences_shown(self) -> dict[str, list[str]]:
        """For each defence, the points where it alone prevents a double effect (empty when not shown).

        Effect keys: doubled once the keys are off, clean as shipped. Idempotency: clean with only the keys
        off, doubled once idempotency is off too.
        """
        cells = self.cells_by_key()
        keys, idempotency = [], []
        for (step, key), by_configuration in cells.items():
            shipped = by_configuration.get(AS_SHIPPED.name)
            keys_off = by_configuration.get(EFFECT_KEYS_OFF.name)
            both_off = by_configuration.get(BOTH_OFF.name)
            if shipped and shipped.ok and keys_off and keys_off.doubled:
                keys.append(f"{step}: {key}")
            if keys_off and keys_off.ok and both_off and both_off.doubled:
                idempotency.append(f"{step}: {key}")
        if not keys or not idempotency:
            return {}
        return {"effect keys": keys, "idempotency": idempotency}

    def cells_by_key(self) -> dict[tuple[str, str], dict[str, CaseResult]]:
        """(step, point key) -> {configuration: result} for the controlled steps, run alone."""
        cells: dict[tuple[str, str], dict[str, CaseResult]] = {}
        controlled = {case.step for result in self.controls for case in result.cases}
        for result in [self.main, *self.controls]:
            for case in result.cases:
                if case.variant == ALONE and case.step in controlled:
                    cells.setdefault((case.step, case.key), {})[result.configuration] = case
        return cells

    def to_dict(self) -> dict[str, Any]:
        def configuration(result: ConfigurationResult) -> dict[str, Any]:
            return {
                "configuration": result.configuration,
                "orchestrator": result.orchestrator,
                "ok": result.ok,
                "seconds": result.seconds,
                "points": result.points,
                "kept_state_dir": result.kept_state_dir,
                "cases": [vars(case) for case in result.cases],
            }

        return {
            "ok": self.ok,
            "seconds": self.seconds,
            "main": configuration(self.main),
            "controls": [configuration(result) for result in self.controls],
            "defences_shown": self.defences_shown(),
        }


def render(result: MatrixResult) -> str:
    durable = result.main.orchestrator == "durable"
    on = "the durable function" if durable else "the state machine"
    own_points = " (the durable function's own points once per batch)" if durable else ""
    lines = [
        f"Crash-point matrix, {AS_SHIPPED.name}, batches run by {on}: each point crashed once per subject "
        f"order{own_points}"
    ]
    for step_name in result.main.steps:
        cases = [case for case in result.main.cases if case.step == step_name]
        if not cases:
            continue
        lines.append("")
        lines.append(f"{STEPS_BY_NAME[step_name].function} ({step_name})")
        by_label: dict[str, dict[str, CaseResult]] = {}
        for case in cases:
            by_label.setdefault(case.label, {})[case.variant] = case
        rows = [
            [label, *(variants[v].cell if v in variants else "-" for v in VARIANTS)]
            for label, variants in by_label.items()
        ]
        lines.extend(table(["point", *VARIANTS], rows))
    passed = sum(case.ok for case in result.main.cases)
    lines.append("")
    lines.append(f"{passed} of {len(result.main.cases)} runs clean in {result.main.seconds:.0f} s")
    for kept in [result.main, *result.controls]:
        if kept.kept_state_dir:
            lines.append(f"{kept.configuration}: logs and state kept in {kept.kept_state_dir}")
    if result.controls:
        lines.extend(["", "Controls (alone): which defence prevents the double effect at each point"])
        names = [AS_SHIPPED.name, *(control.configuration for control in result.controls)]
        rows = [
            [
                f"{step}: {key}",
                *(by_configuration[name].cell if name in by_configuration else "-" for name in names),
            ]
            for (step, key), by_configuration in result.cells_by_key().items()
        ]
        lines.extend(table(["point", *names], rows))
        shown = result.defences_shown()
        lines.extend(["", "Where one defence alone prevents the double effect:"])
        for defence, how in (
            ("effect keys", "clean as shipped, doubled with the keys off"),
            ("idempotency", "clean with only the keys off, doubled with both off"),
        ):
            where = shown.get(defence)
            lines.append(f"- {defence} ({how}): " + ("; ".join(where) if where else "NOT SHOWN"))
    lines.append("")
    lines.append(f"{'OK' if result.ok else 'FAILED'}: matrix measured in {result.seconds:.0f} s")
    return "\n".join(lines)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (width + 2) for width in widths) + "|", *map(line, rows)]
