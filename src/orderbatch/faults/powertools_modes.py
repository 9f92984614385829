"""Powertools idempotency's documented failure modes as crash points, each with the control that shows
which defence keeps the effect single.

- **No time left** (powertools-lambda-python #4759): Lambda kills a timed-out runtime a little after its
  deadline, and in between the context reports 0 ms remaining. The invocation writes its INPROGRESS
  record then and dies. Powertools (since the fix) still writes an in-progress expiry, of "now", so the
  retry takes the record over and runs. Control: the record without that expiry, as Powertools wrote it
  before the fix; every retry is refused as in progress until the Task's retries run out (the loop).
- **In progress, expired, still running** (#8049): the same invocation with no time left keeps going
  after its INPROGRESS write (``overrun_seconds``), its record already expired, and dies after its body,
  before the save. A racing invocation (the duplicate in the same batch, which validate lets race) or
  the retry takes the expired record over and runs the body again while or after the first ran it: the
  effect keys (the domain's conditional writes keyed by order ID) keep the effect single. Control: the
  same point with the keys off, which doubles the effect.

Each mode crashes every step that has an idempotency record, as shipped (alone and with a duplicate)
and with its defence off (alone), and is judged as the crash matrix judges (``crash_matrix.judge``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orderbatch.faults.crash_cases import (
    ALONE,
    AS_SHIPPED,
    EFFECT_KEYS_OFF,
    VARIANTS,
    WITH_DUPLICATE,
    Configuration,
    CrashCase,
    Step,
)
from orderbatch.faults.crash_matrix import (
    DEFAULT_PARALLEL_BATCHES,
    TEMPLATE,
    ConfigurationRun,
    start_cloud,
)
from orderbatch.faults.crash_results import CaseResult, table
from sam_local_cloud.faults import (
    AFTER_CALL,
    BEFORE_CALL,
    RECORD_IN_PROGRESS,
    CrashPoint,
    RecordedCall,
    idempotency_save,
)

# How long the invocation with no time left keeps going after its INPROGRESS write: longer than a
# racing duplicate takes to reach the record, shorter than the function's timeout (8 s in the matrix).
OVERRUN_SECONDS = 3.0
# The control of #4759 runs on the as-shipped app: only Powertools' write differs (the rule strips it).
IN_PROGRESS_EXPIRY_DROPPED = Configuration("in-progress expiry dropped", "noexpiry")
AFTER_IN_PROGRESS_WRITE = "after the INPROGRESS write"
BEFORE_SAVE = "after the body, before the save"
IN_PROGRESS_ERROR = "IdempotencyAlreadyInProgressError"


@dataclass(frozen=True)
class FailureMode:
    slug: str
    title: str
    # Where the runtime dies: AFTER_IN_PROGRESS_WRITE or BEFORE_SAVE.
    where: str
    rule_fields: Mapping[str, Any]
    variants: tuple[str, ...]
    defence: str
    # The same point with the defence off: the configuration and any more rule fields.
    control: Configuration
    control_rule_fields: Mapping[str, Any] = field(default_factory=dict)


NO_TIME_LEFT = FailureMode(
    slug="nt",
    title="no time left, killed after the INPROGRESS write (#4759)",
    where=AFTER_IN_PROGRESS_WRITE,
    rule_fields={"no_time_left": True},
    # With a duplicate, the racing item may take the record and the crash first: alone pins the point.
    variants=(ALONE,),
    defence="Powertools' in-progress expiry at 0 ms left",
    control=IN_PROGRESS_EXPIRY_DROPPED,
    control_rule_fields={"drop_in_progress_expiry": True},
)
EXPIRED_WHILE_RUNNING = FailureMode(
    slug="ex",
    title="in progress expired while the first run goes on, killed before the save (#8049)",
    where=BEFORE_SAVE,
    rule_fields={"no_time_left": True, "overrun_seconds": OVERRUN_SECONDS},
    variants=VARIANTS,
    defence="effect keys",
    control=EFFECT_KEYS_OFF,
)
FAILURE_MODES = (NO_TIME_LEFT, EXPIRED_WHILE_RUNNING)


@dataclass(frozen=True)
class ModeResult:
    mode: FailureMode
    shipped: list[CaseResult]
    control: list[CaseResult]

    @property
    def shipped_clean(self) -> bool:
        return all(case.ok for case in self.shipped)

    def defence_shown(self, step: str) -> bool:
        """Clean as shipped in every variant, and not clean (doubled, looping) with the defence off in one.

        A step whose effect a second run cannot double (a status set again, a report written again) has
        nothing to show: its control is clean too.
        """
        shipped = [case for case in self.shipped if case.step == step]
        control = [case for case in self.control if case.step == step]
        return bool(shipped) and all(case.ok for case in shipped) and any(not case.ok for case in control)

    def steps_shown(self) -> list[str]:
        return list(dict.fromkeys(case.step for case in self.shipped if self.defence_shown(case.step)))


@dataclass(frozen=True)
class FailureModesResult:
    modes: list[ModeResult]
    steps: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        """Every run as shipped is clean, and each mode's control shows its defence at one step at least."""
        return all(mode.shipped_clean and mode.steps_shown() for mode in self.modes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seconds": self.seconds,
            "modes": [
                {
                    "mode": result.mode.title,
                    "defence": result.mode.defence,
                    "control": result.mode.control.name,
                    "defence_shown_at": result.steps_shown(),
                    "shipped": [vars(case) for case in result.shipped],
                    "defence_off": [vars(case) for case in result.control],
                }
                for result in self.modes
            ],
        }


def mode_point(mode: FailureMode, calls: Sequence[RecordedCall]) -> tuple[CrashPoint, RecordedCall] | None:
    """The mode's crash point in one recorded invocation, None when the step has no idempotency record."""
    save = idempotency_save(calls)
    if save is None:
        return None
    if mode.where == BEFORE_SAVE:
        return CrashPoint(f"{BEFORE_CALL}:{save.number}", f"{mode.title}", BEFORE_SAVE), save
    claim = next(c for c in calls if c.operation == "PutItem" and c.status == RECORD_IN_PROGRESS)
    return CrashPoint(f"{AFTER_CALL}:{claim.number}", mode.title, AFTER_IN_PROGRESS_WRITE), claim


def mode_cases(
    run: ConfigurationRun,
    recorded: Mapping[str, Sequence[RecordedCall]],
    steps: Sequence[Step],
    modes: Sequence[FailureMode],
    *,
    control: bool,
) -> list[CrashCase]:
    cases = []
    for mode in modes:
        configuration = mode.control if control else AS_SHIPPED
        fields = {**mode.rule_fields, **(mode.control_rule_fields if control else {})}
        for step in steps:
            found = mode_point(mode, recorded[step.name])
            if found is None:
                continue
            point, call = found
            for variant in mode.variants:
                suffix = "d" if variant == WITH_DUPLICATE else "a"
                batch_id = f"pt-{configuration.slug}-{mode.slug}-{step.name}-{suffix}"
                cases.append(CrashCase(configuration, step, point, variant, batch_id, call, fields))
    return cases


def _run_on_cloud(
    configuration: Configuration,
    steps: Sequence[Step],
    plan: Callable[[ConfigurationRun, Mapping[str, Sequence[RecordedCall]]], list[CrashCase]],
    *,
    parallel: int,
    template: Any,
    progress: Callable[[str], None] | None,
) -> list[CaseResult]:
    cloud = start_cloud(configuration, template, parallel=parallel)
    try:
        run = ConfigurationRun(cloud, configuration, parallel=parallel, progress=progress)
        cases = plan(run, run.record(steps))
        results = run.run(cases)
        for case, result in zip(cases, results, strict=True):
            if not result.ok and _refused_as_in_progress(run, case):
                result.verdict = f"LOOP: {IN_PROGRESS_ERROR} until the retries ran out"
        return results
    finally:
        cloud.stop()


def _refused_as_in_progress(run: ConfigurationRun, case: CrashCase) -> bool:
    """Whether the subject was cancelled because every retry of its step was refused as in progress."""
    return any(
        outcome.get("order_id") == case.subject and IN_PROGRESS_ERROR in str(outcome.get("reason") or "")
        for outcome in run.outcomes(case.batch_id)
    )


def run_failure_modes(
    steps: Sequence[Step],
    modes: Sequence[FailureMode] = FAILURE_MODES,
    *,
    parallel: int = DEFAULT_PARALLEL_BATCHES,
    template: Any = TEMPLATE,
    progress: Callable[[str], None] | None = None,
) -> FailureModesResult:
    """Every mode at every step with an idempotency record, as shipped and with its defence off.

    Runs sharing a cloud configuration share a local cloud: the as-shipped runs and the controls whose
    defence is switched off in the crash rule, then one cloud per other control configuration.
    """
    started = time.monotonic()
    by_environment: dict[tuple[tuple[str, str], ...], list[tuple[FailureMode, bool]]] = {}
    for mode in modes:
        for control in (False, True):
            configuration = mode.control if control else AS_SHIPPED
            environment = tuple(sorted(configuration.function_environment.items()))
            by_environment.setdefault(environment, []).append((mode, control))
    results: dict[tuple[str, bool], list[CaseResult]] = {}
    for planned in by_environment.values():
        first_mode, first_control = planned[0]
        configuration = first_mode.control if first_control else AS_SHIPPED

        def plan(
            run: ConfigurationRun,
            recorded: Mapping[str, Sequence[RecordedCall]],
            planned: list[tuple[FailureMode, bool]] = planned,
        ) -> list[CrashCase]:
            return [
                case
                for mode, control in planned
                for case in mode_cases(run, recorded, steps, [mode], control=control)
            ]

        cases = _run_on_cloud(
            configuration, steps, plan, parallel=parallel, template=template, progress=progress
        )
        for mode, control in planned:
            wanted = (mode.control if control else AS_SHIPPED).name
            results[(mode.slug, control)] = [
                case for case in cases if case.configuration == wanted and mode.title in case.label
            ]
    return FailureModesResult(
        [ModeResult(mode, results[(mode.slug, False)], results[(mode.slug, True)]) for mode in modes],
        [step.name for step in steps],
        round(time.monotonic() - started, 1),
    )


def render_failure_modes(result: FailureModesResult) -> str:
    lines = ["Powertools idempotency's failure modes: each crashed once per subject order"]
    for mode_result in result.modes:
        mode = mode_result.mode
        lines.extend(["", f"{mode.title}; defence: {mode.defence}; control: {mode.control.name}"])
        columns = [
            f"{name}, {variant}" for name in (AS_SHIPPED.name, mode.control.name) for variant in mode.variants
        ]
        header = ["step", *columns, "defence shown"]
        rows = []
        for step in result.steps:
            shipped = {case.variant: case for case in mode_result.shipped if case.step == step}
            control = {case.variant: case for case in mode_result.control if case.step == step}
            if not shipped and not control:
                continue
            cells = [
                runs[variant].cell if variant in runs else "-"
                for runs in (shipped, control)
                for variant in mode.variants
            ]
            shown = "yes" if mode_result.defence_shown(step) else "no (nothing doubled with it off)"
            rows.append([step, *cells, shown])
        lines.extend(table(header, rows))
    lines.append("")
    lines.append(f"{'OK' if result.ok else 'FAILED'}: failure modes measured in {result.seconds:.0f} s")
    return "\n".join(lines)
