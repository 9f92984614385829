"""The crash-point matrix: every point where a task function's runtime can die, each crashed once.

For one configuration of the app (as shipped, or a control with a defence switched off) on one local cloud:

1. **Record.** A batch runs with a ``record_calls`` rule on every task function: the runtime logs every AWS
   call each invocation makes, and ``crash_points`` turns each function's sequence into its crash points
   (before the body, after each call, after the body before Powertools' save, after the save before the
   response, the response lost).
2. **Crash.** For every (function, point) a small batch runs through the app's real state machine: a
   subject order and two bystanders, and, in the "with duplicate" variant, the subject a second time in
   the same batch (its two Map iterations race from the first step). A ``crash`` rule with ``once``
   kills the runtime at that point exactly once for the subject (for the batch, at the summary): in the
   first invocation that reaches it, the first attempt unless a racing duplicate took another path (the
   rule names the call, so a duplicate whose N-th call is another does not crash there). The state
   machine's retriers carry on. Cancel's subject is an order whose confirmation keeps
   failing, so it is compensated with stock to release and a charge to refund. All batches of a
   configuration run under one fault plan, several at a time: rules name their order or batch, so they
   cannot interfere.
3. **Judge.** The execution succeeded; the crash fired exactly once, at the call the recording had there;
   the exactly-once audit passes (no order lost, no effect doubled, nothing left reserved or charged for
   a failed order); every order ID has exactly one outcome that is not a duplicate's; the subject ends
   as it would without the crash. A durable batch still running after ``BATCH_TIMEOUT_SECONDS`` is judged
   with what the executor held of it then (the Lambda service's ``durable_stall_view``): what it waits
   on, and since when.

What is crashed (steps, configurations, each case's batch and rule) is ``crash_cases``; what was found,
and the tables printed, ``crash_results``. This module runs and judges.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from order_processing.contract import Outcome
from orderbatch.app_batches import local_cloud_config
from orderbatch.audit import BatchLocations, audit_batch
from orderbatch.audit_logs import body_runs_from_logs
from orderbatch.durable_batches import (
    DurableBatchStillRunningError,
    start_durable_batch,
    wait_for_durable_batch,
)
from orderbatch.faults.crash_cases import (
    ALONE,
    AS_SHIPPED,
    CHILDREN,
    CONFIRM,
    CONTROL_STEPS,
    CONTROLS,
    DURABLE,
    DURABLE_STEPS,
    ORCHESTRATOR,
    STEPFUNCTIONS,
    STEPS,
    VARIANTS,
    WITH_DUPLICATE,
    Configuration,
    CrashCase,
    Step,
    confirmation_failure,
    subject_order,
)
from orderbatch.faults.crash_results import CaseResult, ConfigurationResult, MatrixResult
from orderbatch.faults.duplicate_children import run_duplicate_children_row
from sam_local_cloud import ExecutionStillRunningError, LocalCloud, wait_for_execution
from sam_local_cloud.faults import (
    AFTER_CALL,
    AFTER_CHECKPOINT,
    BEFORE_BODY,
    BEFORE_CALL,
    BEFORE_CHECKPOINT,
    BEFORE_RESPONSE,
    RESPONSE_LOST,
    CheckpointOperation,
    CrashPoint,
    CrashRecord,
    RecordCalls,
    RecordedCall,
    ResourceNames,
    crash_records,
    enumerate_crash_points,
    parse_crash_point,
    recorded_calls,
    recorded_invocations,
)
from sam_local_cloud.json_types import JsonObject

# The app in the current directory, as the other commands find it.
TEMPLATE = Path("template.yaml")
PARAMETERS = {
    "MapMaxConcurrency": "8",
    # Short enough that an abandoned INPROGRESS record (it expires with the invocation's time) frees
    # its order soon; long enough for a cold start on a loaded 2-core machine.
    "FunctionTimeoutSeconds": "8",
    "TaskTimeoutSeconds": "16",
    "InProgressRetryIntervalSeconds": "2",
    # Inline batches do not use it; the duplicate_execution row's S3 batch runs EXPRESS children.
    "ChildExecutionType": "EXPRESS",
}
BATCH_TIMEOUT_SECONDS = 300.0
STILL_RUNNING = "STILL RUNNING"
# A case waits far more than it computes (a crashed run's record is freed only when its function's
# timeout has passed), so many batches run at once. The account's quota grows with them: 10 slots for
# 8 batches of 4 orders is the 429 pressure the matrix was built and judged with, and it stays the same.
DEFAULT_PARALLEL_BATCHES = 16
QUOTA_SLOTS_PER_BATCH = 10 / 8
DUPLICATE = Outcome.DUPLICATE.value


def account_quota(parallel: int) -> int:
    """The account's Lambda concurrency for ``parallel`` batches at once: the same pressure at any count."""
    return max(1, round(parallel * QUOTA_SLOTS_PER_BATCH))


def start_cloud(
    configuration: Configuration, template: Path = TEMPLATE, *, parallel: int = DEFAULT_PARALLEL_BATCHES
) -> LocalCloud:
    config = local_cloud_config(
        template,
        account_concurrency=account_quota(parallel),
        parameter_overrides=PARAMETERS,
        function_environment=dict(configuration.function_environment),
        state_dir=Path(tempfile.mkdtemp(prefix=f"orderbatch-crash-{configuration.slug}-")),
    )
    return LocalCloud(config).start()


class ConfigurationRun:
    """Records, crashes and judges every point of some steps in one configuration on one local cloud."""

    def __init__(
        self,
        cloud: LocalCloud,
        configuration: Configuration,
        *,
        parallel: int = DEFAULT_PARALLEL_BATCHES,
        progress: Callable[[str], None] | None = None,
        orchestrator: str = STEPFUNCTIONS,
    ) -> None:
        self.cloud = cloud
        self.configuration = configuration
        self.orchestrator = orchestrator
        self.parallel = parallel
        self.progress = progress or (lambda _message: None)
        self.locations = BatchLocations.from_outputs(cloud.stack.outputs)
        self.names = ResourceNames.from_outputs(cloud.stack.outputs)
        self.log_dir = cloud.log_dir
        assert cloud.lambda_service is not None, "the crash matrix needs the local Lambda service"
        self.lambda_service = cloud.lambda_service
        # Batch ID -> what the executor held of its durable execution when the wait for it ran out.
        self.still_running: dict[str, str] = {}

    # ---------------------------------------------------------------------------- recording
    def record(self, steps: Sequence[Step]) -> dict[str, list[RecordedCall]]:
        """Each step's AWS calls in one run without faults: a normal order, and one that is cancelled."""
        batch_id = f"cm-{self.configuration.slug}-{self.orchestrator}-record"
        normal, cancelled = f"{batch_id}-s", f"{batch_id}-c"
        record: JsonObject = {"kind": RecordCalls.kind, "batch_ids": [batch_id]}
        rules: dict[str, list[JsonObject]] = {step.function: [record] for step in self._steps()}
        rules[CONFIRM.function].insert(0, confirmation_failure([cancelled]))
        self.lambda_service.set_fault_plan({"functions": rules})
        try:
            status = self._run_batch(batch_id, [subject_order(normal), subject_order(cancelled)])
        finally:
            self.lambda_service.set_fault_plan(None)
        if status != "SUCCEEDED":
            raise RuntimeError(f"the recording batch {batch_id} ended {status}")
        recorded: dict[str, list[RecordedCall]] = {}
        for step in steps:
            tag = None if not step.per_order else cancelled if step.name == "cancel" else normal
            try:
                recorded[step.name] = recorded_calls(self.log_dir, step.function, tag=tag, batch_id=batch_id)
            except LookupError:
                # An invocation without AWS calls logs none: the summary with idempotency off.
                recorded[step.name] = []
        return recorded

    def cases(
        self,
        recorded: Mapping[str, Sequence[RecordedCall]],
        steps: Sequence[Step],
        variants: Sequence[str],
        *,
        keep: Callable[[Step, CrashPoint], bool] | None = None,
    ) -> list[CrashCase]:
        cases = []
        for step in steps:
            calls = {call.number: call for call in recorded[step.name]}
            for index, point in enumerate(enumerate_crash_points(recorded[step.name], self.names), start=1):
                if keep is not None and not keep(step, point):
                    continue
                where, number = parse_crash_point(point.point)
                call = calls.get(number) if where in (AFTER_CALL, BEFORE_CALL) else None
                for variant in variants:
                    suffix = "d" if variant == WITH_DUPLICATE else "a"
                    batch_id = f"cm-{self.configuration.slug}-{step.name}-{index:02d}{suffix}"
                    cases.append(CrashCase(self.configuration, step, point, variant, batch_id, call))
        return cases

    def _steps(self) -> Sequence[Step]:
        return DURABLE_STEPS if self.orchestrator == DURABLE else STEPS

    # ------------------------------------------------------------ the durable orchestrator's points
    def record_checkpoints(self) -> list[CheckpointOperation]:
        """Every operation update the durable orchestrator checkpoints for a batch shaped as its crash
        cases are (a subject, two bystanders, an order that is compensated), in the order first sent."""
        shape = CrashCase(
            self.configuration, ORCHESTRATOR, _PLAIN[0], ALONE, f"cm-{self.configuration.slug}-orch"
        )
        record = {"kind": RecordCalls.kind, "batch_ids": [shape.batch_id]}
        rules = {
            ORCHESTRATOR.function: [record],
            CONFIRM.function: [confirmation_failure([str(shape.compensated_order)])],
        }
        self.lambda_service.set_fault_plan({"functions": rules})
        try:
            status = self._run_batch(shape.batch_id, shape.orders())
        finally:
            self.lambda_service.set_fault_plan(None)
        if status != "SUCCEEDED":
            raise RuntimeError(f"the recording batch {shape.batch_id} ended {status}")
        updates: dict[str, CheckpointOperation] = {}
        for invocation in recorded_invocations(self.log_dir):
            if not invocation.labels.matches(ORCHESTRATOR.function, batch_id=shape.batch_id):
                continue
            for call in invocation.calls:
                if call.error is None:
                    for operation in call.operations:
                        updates.setdefault(operation.key, operation)
        if not updates:
            raise RuntimeError(f"the recording batch {shape.batch_id} logged no checkpoint")
        return list(updates.values())

    def orchestrator_cases(
        self, updates: Sequence[CheckpointOperation], variants: Sequence[str]
    ) -> list[CrashCase]:
        """Before and after every checkpoint boundary, and the invocation's own points, in each variant."""
        names = {update.id: update.name for update in updates if update.name}
        points = [_PLAIN[0]]
        for update in updates:
            label = _operation_label(update, names)
            points.append(
                CrashPoint(BEFORE_CHECKPOINT, f"before the checkpoint of {label}", f"before {label}")
            )
            points.append(CrashPoint(AFTER_CHECKPOINT, f"after the checkpoint of {label}", f"after {label}"))
        points.extend(_PLAIN[1:])
        boundaries = [
            None,
            *(update.key for update in updates for _ in (BEFORE_CHECKPOINT, AFTER_CHECKPOINT)),
        ]
        boundaries.extend(None for _ in _PLAIN[1:])
        cases = []
        for index, (point, update_key) in enumerate(zip(points, boundaries, strict=True), start=1):
            for variant in variants:
                suffix = "d" if variant == WITH_DUPLICATE else "a"
                batch_id = f"cm-{self.configuration.slug}-orch-{index:02d}{suffix}"
                cases.append(
                    CrashCase(self.configuration, ORCHESTRATOR, point, variant, batch_id, update=update_key)
                )
        return cases

    # ------------------------------------------------------------------------------ crashing
    def run(self, cases: Sequence[CrashCase]) -> list[CaseResult]:
        rules: dict[str, list[JsonObject]] = {}
        compensated = [case.subject for case in cases if case.compensated]
        compensated += [case.compensated_order for case in cases if case.compensated_order is not None]
        if compensated:
            rules[CONFIRM.function] = [confirmation_failure(compensated)]
        for case in cases:
            rules.setdefault(case.step.function, []).append(case.crash_rule())
        self.lambda_service.set_fault_plan({"functions": rules})
        try:
            with ThreadPoolExecutor(max_workers=max(1, self.parallel)) as pool:
                timed = list(pool.map(self._run_case, cases))
        finally:
            self.lambda_service.set_fault_plan(None)
        body_runs = body_runs_from_logs(self.log_dir)
        crashes = crash_records(self.log_dir)
        return [
            self.judge(case, status, seconds, body_runs, crashes)
            for case, (status, seconds) in zip(cases, timed, strict=True)
        ]

    def _run_case(self, case: CrashCase) -> tuple[str, float]:
        started = time.monotonic()
        status = self._run_batch(case.batch_id, case.orders(), starts=2 if case.duplicate_start else 1)
        seconds = time.monotonic() - started
        self.progress(
            f"{self.configuration.name}: {case.step.name} {case.point.label} {case.variant}: {status}"
        )
        return status, seconds

    def _run_batch(self, batch_id: str, orders: list[JsonObject], *, starts: int = 1) -> str:
        if self.orchestrator == DURABLE:
            return self._run_durable_batch(batch_id, orders, starts)
        stepfunctions = self.cloud.client("stepfunctions")
        stepfunctions.start_execution(
            stateMachineArn=self.locations.state_machine_arn,
            name=batch_id,
            input=json.dumps({"batch_id": batch_id, "orders": orders}),
        )
        try:
            return wait_for_execution(
                stepfunctions,
                self.locations.execution_arn(batch_id),
                timeout=BATCH_TIMEOUT_SECONDS,
                poll_seconds=0.5,
            )
        except ExecutionStillRunningError:
            return STILL_RUNNING

    def _run_durable_batch(self, batch_id: str, orders: list[JsonObject], starts: int) -> str:
        """Start the batch ``starts`` times at once under its durable execution name; wait for it."""
        function_arn = self.locations.durable_function_arn
        if function_arn is None:
            raise RuntimeError("the template has no durable variant of the workflow")
        lambda_client = self.cloud.client("lambda")
        batch = {"batch_id": batch_id, "orders": orders}
        with ThreadPoolExecutor(max_workers=starts) as pool:
            arns = {
                start.execution_arn
                for start in pool.map(
                    lambda _: start_durable_batch(lambda_client, function_arn, batch), range(starts)
                )
            }
        if len(arns) != 1:
            return f"{len(arns)} EXECUTIONS"
        arn = arns.pop()
        try:
            execution = wait_for_durable_batch(
                lambda_client, arn, timeout=BATCH_TIMEOUT_SECONDS, poll_seconds=0.5
            )
        except DurableBatchStillRunningError:
            self.still_running[batch_id] = self.lambda_service.durable_stall_view(arn)
            return STILL_RUNNING
        return str(execution["Status"])

    # ------------------------------------------------------------------------------- judging
    def judge(
        self,
        case: CrashCase,
        status: str,
        seconds: float,
        body_runs: Mapping[tuple[str, str], int],
        crashes: Sequence[CrashRecord],
    ) -> CaseResult:
        report = audit_batch(
            case.batch_id,
            self.locations,
            stepfunctions=self.cloud.client("stepfunctions"),
            dynamodb=self.cloud.client("dynamodb"),
            s3=self.cloud.client("s3"),
            body_runs=body_runs,
            lambda_client=self.cloud.client("lambda") if self.orchestrator == DURABLE else None,
            # Keyed reads of the batch's own orders: a scan per case would grow with every case run before.
            by_order=True,
        )
        subject_tag = case.subject if case.step.per_order else None
        fired = [
            crash
            for crash in crashes
            if crash.labels.matches(case.step.function, tag=subject_tag, batch_id=case.batch_id)
        ]
        outcomes = self.outcomes(case.batch_id)
        unprocessed, problems = _one_outcome_per_order(case.orders(), outcomes)
        problems += self._orchestrator_problems(case, outcomes)
        lost = sorted({*report.lost, *unprocessed})
        problems = [violation.detail for violation in report.violations] + problems
        subject_outcomes = [
            o.get("outcome")
            for o in outcomes
            if o.get("order_id") == case.subject and o.get("outcome") != DUPLICATE
        ]
        subject_outcome = str(subject_outcomes[0]) if subject_outcomes else None
        verdict = _verdict(case, status, fired, lost, report.doubled, problems, subject_outcome)
        stalled = self.still_running.get(case.batch_id)
        if status == STILL_RUNNING and stalled is not None:
            verdict += f" after {BATCH_TIMEOUT_SECONDS:.0f} s; the executor's view: {stalled}"
        runs = body_runs.get((case.step.body_log_name, case.subject)) if case.step.body_log_name else None
        return CaseResult(
            configuration=case.configuration.name,
            function=case.step.function,
            step=case.step.name,
            point=case.point.point,
            label=case.point.label,
            key=case.point.key,
            variant=case.variant,
            batch_id=case.batch_id,
            verdict=verdict,
            ok=verdict == "ok",
            execution_status=status,
            crashes=len(fired),
            subject_outcome=subject_outcome,
            body_runs=runs,
            lost=lost,
            doubled=report.doubled,
            violations=problems,
            seconds=round(seconds, 1),
        )

    def outcomes(self, batch_id: str) -> list[dict[str, Any]]:
        if self.orchestrator == DURABLE:
            output = self._durable_execution(batch_id).get("Result")
        else:
            output = (
                self.cloud.client("stepfunctions")
                .describe_execution(executionArn=self.locations.execution_arn(batch_id))
                .get("output")
            )
        if not output:
            return []
        orders: list[dict[str, Any]] = json.loads(output).get("orders") or []
        return orders

    def _durable_executions(self, batch_id: str) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.cloud.client("lambda").list_durable_executions_by_function(
            FunctionName=str(self.locations.durable_function_arn), DurableExecutionName=batch_id
        )["DurableExecutions"]
        return [execution for execution in listed if execution.get("DurableExecutionName") == batch_id]

    def _durable_execution(self, batch_id: str) -> dict[str, Any]:
        named = self._durable_executions(batch_id)
        if not named:
            return {}
        answer: dict[str, Any] = self.cloud.client("lambda").get_durable_execution(
            DurableExecutionArn=named[0]["DurableExecutionArn"]
        )
        return answer

    def _orchestrator_problems(self, case: CrashCase, outcomes: Sequence[Mapping[str, Any]]) -> list[str]:
        """The orchestrator's own cases: one execution under the batch's name, however many starts; the
        compensated order compensated."""
        if not case.orchestrator_crashed:
            return []
        problems = []
        executions = len(self._durable_executions(case.batch_id))
        if executions != 1:
            problems.append(f"{executions} durable executions named {case.batch_id}")
        compensated = [o.get("outcome") for o in outcomes if o.get("order_id") == case.compensated_order]
        if compensated != [Outcome.FAILED.value]:
            problems.append(f"order {case.compensated_order} ended {compensated}, expected its compensation")
        return problems


# The orchestrator's points that are not checkpoint boundaries; each fires in the first replay.
_PLAIN = (
    CrashPoint(BEFORE_BODY, "a replay killed before the handler ran", "before the body"),
    CrashPoint(
        BEFORE_RESPONSE,
        "a replay killed after the handler returned, before its answer",
        "before the response",
    ),
    CrashPoint(RESPONSE_LOST, "a replay's answer lost on its way", "the response lost"),
)


# What a durable operation is called in a label: by its type, a context by its SDK sub-type.
_OPERATION_KINDS = {"CHAINED_INVOKE": "invoke", "WAIT": "wait", "STEP": "step", "CALLBACK": "callback"}
_CONTEXT_KINDS = {
    "Map": "map",
    "MapIteration": "map branch",
    "Parallel": "parallel",
    "ParallelBranch": "branch",
}


def _operation_label(update: CheckpointOperation, names: Mapping[str, str]) -> str:
    """``START invoke 'charge_payment' in 'order 3'``: an operation update as a reader knows it."""
    if update.type == "CONTEXT":
        kind = _CONTEXT_KINDS.get(update.sub_type or "", "context")
    else:
        kind = _OPERATION_KINDS.get(update.type, update.type.lower())
    label = f"{update.action} {kind}"
    if update.name:
        label += f" '{update.name}'"
    parent = names.get(update.parent_id or "")
    return f"{label} in '{parent}'" if parent else label


def _one_outcome_per_order(
    orders: Sequence[Mapping[str, Any]], outcomes: Sequence[Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """Each order ID of the batch must end with exactly one item that is not reported as a duplicate.

    Returns the order IDs without one (lost: nobody processed them, though the audit, seeing only
    duplicates, takes them for orders held elsewhere) and the problems found, one sentence each.
    """
    lost, problems = [], []
    for order_id in dict.fromkeys(str(order["order_id"]) for order in orders):
        own = [o for o in outcomes if o.get("order_id") == order_id and o.get("outcome") != DUPLICATE]
        if len(own) == 1:
            continue
        reported = sorted(str(o.get("outcome")) for o in outcomes if o.get("order_id") == order_id)
        problems.append(f"order {order_id}: {len(own)} outcomes of its own (its items report {reported})")
        if not own:
            lost.append(order_id)
    return lost, problems


def _verdict(
    case: CrashCase,
    status: str,
    fired: Sequence[CrashRecord],
    lost: Sequence[str],
    doubled: Sequence[str],
    problems: Sequence[str],
    subject_outcome: str | None,
) -> str:
    if status != "SUCCEEDED":
        return f"execution {status}"
    if not fired:
        return "crash not reached"
    if len(fired) > 1:
        return f"crashed {len(fired)} times"
    if case.call is not None and (fired[0].call is None or not fired[0].call.same_call(case.call)):
        return "crashed at another call"
    if case.update is not None and (fired[0].call is None or case.update not in fired[0].call.checkpoint):
        return "crashed at another checkpoint"
    if lost:
        return "LOST " + ", ".join(lost)
    if doubled:
        return "DOUBLED " + ", ".join(doubled)
    if problems:
        return "VIOLATION " + problems[0]
    if subject_outcome != case.expected_outcome:
        return f"ended {subject_outcome}, expected {case.expected_outcome}"
    return "ok"


def run_configuration(
    configuration: Configuration,
    steps: Sequence[Step],
    variants: Sequence[str] = VARIANTS,
    *,
    parallel: int = DEFAULT_PARALLEL_BATCHES,
    template: Path = TEMPLATE,
    progress: Callable[[str], None] | None = None,
    keep: Callable[[Step, CrashPoint], bool] | None = None,
    expect_clean: bool = True,
    orchestrator: str = STEPFUNCTIONS,
) -> ConfigurationResult:
    """Start a local cloud for the configuration, record, crash every point, judge; stop the cloud.

    On the durable orchestrator the task steps are invoked by the durable function instead of the state
    machine (there is no summary function), and ``ORCHESTRATOR`` among ``steps`` adds the durable
    function's own points: before and after each checkpoint boundary it records. Its state folder is
    removed, unless a run ``expect_clean`` was not: then its logs are kept to read.
    """
    started = time.monotonic()
    task_steps = [step for step in steps if step != ORCHESTRATOR]
    if orchestrator == DURABLE:
        task_steps = [step for step in task_steps if step in DURABLE_STEPS]
    cloud = start_cloud(configuration, template, parallel=parallel)
    try:
        run = ConfigurationRun(
            cloud, configuration, parallel=parallel, progress=progress, orchestrator=orchestrator
        )
        recorded = run.record(task_steps) if task_steps else {}
        cases = run.cases(recorded, task_steps, variants, keep=keep)
        points = {
            step.name: [
                {"point": point.point, "label": point.label, "key": point.key}
                for point in enumerate_crash_points(recorded[step.name], run.names)
            ]
            for step in task_steps
        }
        if orchestrator == DURABLE and ORCHESTRATOR in steps:
            orchestrator_cases = run.orchestrator_cases(run.record_checkpoints(), variants)
            cases += orchestrator_cases
            points[ORCHESTRATOR.name] = [
                {
                    "point": case.point.point,
                    "label": case.point.label,
                    "key": case.point.key,
                    "update": case.update or "",
                }
                for case in orchestrator_cases
                if case.variant == variants[0]
            ]
            task_steps.append(ORCHESTRATOR)
        results = run.run(cases)
        if orchestrator == STEPFUNCTIONS and configuration == AS_SHIPPED and ALONE in variants:
            row = run_duplicate_children_row(run)
            results.append(row)
            task_steps.append(CHILDREN)
            points[CHILDREN.name] = [{"point": row.point, "label": row.label, "key": row.key}]
    finally:
        cloud.stop()
    result = ConfigurationResult(
        configuration.name,
        [step.name for step in task_steps],
        points,
        results,
        round(time.monotonic() - started, 1),
        orchestrator=orchestrator,
    )
    if expect_clean and not result.ok:
        result.kept_state_dir = str(cloud.state_dir)
    else:
        shutil.rmtree(cloud.state_dir, ignore_errors=True)
    return result


def run_matrix(
    steps: Sequence[Step] = STEPS,
    *,
    controls: bool = True,
    parallel: int = DEFAULT_PARALLEL_BATCHES,
    template: Path = TEMPLATE,
    progress: Callable[[str], None] | None = None,
    orchestrator: str = STEPFUNCTIONS,
) -> MatrixResult:
    """Every point of ``steps`` alone and with a duplicate as shipped; then the controls, on the
    controlled steps among ``steps``, alone. The controls show what each defence of the task functions
    prevents; they run on the state machine only, since those functions are the same under both."""
    started = time.monotonic()
    main = run_configuration(
        AS_SHIPPED, steps, parallel=parallel, template=template, progress=progress, orchestrator=orchestrator
    )
    controlled = controls and orchestrator == STEPFUNCTIONS
    control_steps = [step for step in steps if step.name in CONTROL_STEPS] if controlled else []
    results = [
        run_configuration(
            configuration,
            control_steps,
            (ALONE,),
            parallel=parallel,
            template=template,
            progress=progress,
            expect_clean=False,
        )
        for configuration in (CONTROLS if control_steps else ())
    ]
    return MatrixResult(main, results, round(time.monotonic() - started, 1))
