"""The soak run: batches back to back on one local cloud for many minutes, under faults of every kind.

One local cloud serves the whole run. Batches alternate between the inline Map and the Distributed Map
(orders in S3), ``in_flight`` at a time, until the time is up; the ones still running are then waited
for. Every Lambda function of the batch gets each fault kind its retriers are meant to absorb with the
same probability, and a noisy neighbour takes part of the quota for a window and leaves, again and again
(the fault plan is set anew every cycle, which re-arms the neighbour). Every finished batch is audited;
every ``report_every_seconds`` one line says how far it got and what the local cloud (and its process
tree) holds in memory, so growth over time shows.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import boto3

from order_processing.contract import BATCH_FUNCTIONS, COMPENSATION_FUNCTION
from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import local_cloud_config
from orderbatch.bench import resources
from orderbatch.bench.memory_trace import MemoryTracer, trace_path_from_environment
from orderbatch.bench.runner import MACHINE_SECONDS_PER_ORDER, STEP_FUNCTIONS
from orderbatch.bench.scenarios import SOAK
from orderbatch.bench.soak_audit import IncrementalAuditor
from orderbatch.faults.crash_cases import STATE_MACHINE
from sam_local_cloud import DUMMY_CREDENTIALS, FaultPlan
from sam_local_cloud.faults import (
    Crash,
    DuplicateExecution,
    ErrorAfterBody,
    ErrorBeforeBody,
    RecordCalls,
    ResponseDelay,
    Throttle,
    Timeout,
)

if TYPE_CHECKING:
    from sam_local_cloud import LocalCloud

# Crash points every task function reaches: the first AWS call of each is the idempotency record's put.
CRASH_POINTS = ("before_body", "before_call:1", "after_call:1", "before_response", "response_lost")
# Long enough to shift the timing of a whole Map, well within the Tasks' TimeoutSeconds (15 s).
RESPONSE_DELAY_SECONDS = 2.0
POLL_SECONDS = 1.0
BATCH_SOURCES = ("inline", "s3")
# The growing allocation sites the JSON report keeps when memory is traced (the trace file has more).
MEMORY_SITES_IN_REPORT = 10
LONG_RUN_MINUTES = 30.0
MIB = 1024 * 1024
RUN_WIDE_KINDS = frozenset({"duplicate_execution"})
LONG_RUN_BASELINE_MINUTE = 10.0
SHORT_RUN_BASELINE_MINUTE = 5.0


@dataclass(frozen=True)
class SoakSettings:
    template: Path
    minutes: float = 30.0
    orders: int = 200
    quota: int = 10
    work_seconds: float = 0.5
    report_every_seconds: float = 60.0
    fault_probability: float = 0.05
    in_flight: int = 2
    neighbour_on_seconds: float = 30.0
    neighbour_off_seconds: float = 60.0
    # Memory is judged against the first report at or after this many minutes (warm-up excluded); None:
    # minute 10 for runs of 30 minutes or more, minute 5 for shorter ones.
    baseline_minute: float | None = None
    max_memory_growth: float = 0.05
    seed: int = 7
    # Where the allocation sites that grew since the baseline minute are written (None: no tracing).
    trace_memory: Path | None = None

    @property
    def judged_from_minute(self) -> float:
        if self.baseline_minute is not None:
            return self.baseline_minute
        return LONG_RUN_BASELINE_MINUTE if self.minutes >= LONG_RUN_MINUTES else SHORT_RUN_BASELINE_MINUTE

    @property
    def neighbour_slots(self) -> int:
        return max(1, self.quota // 2)


class CycleInjections(TypedDict):
    """The faults injected while one cycle of the fault plan was in force, by kind."""

    cycle: int
    # Whether the cycle ran its whole length with batches being submitted.
    complete: bool
    injected: dict[str, int]


def fault_plan(settings: SoakSettings, cycle: int) -> dict[str, object]:
    """Every fault kind the local cloud has, at ``fault_probability``: each outcome kind and ``record_calls``
    on every batch function, ``latency`` (the work) on the step functions, ``duplicate_execution`` on the
    state machine's EXPRESS children, plus the neighbour's window."""
    probability = settings.fault_probability
    rules: list[dict[str, object]] = []
    machine_rules: list[dict[str, object]] = []
    if probability > 0:
        rules = [
            {"kind": ErrorBeforeBody.kind, "probability": probability},
            {"kind": ErrorAfterBody.kind, "probability": probability},
            {"kind": Timeout.kind, "phase": "before_body", "probability": probability},
            {"kind": Timeout.kind, "phase": "after_body", "probability": probability},
            {"kind": ResponseDelay.kind, "seconds": RESPONSE_DELAY_SECONDS, "probability": probability},
            {"kind": RecordCalls.kind, "probability": probability},
            # A 429 before admission, on top of the neighbour's: retried, or set aside for the second pass.
            {"kind": Throttle.kind, "probability": probability},
            # One crash kind, its probability spread over the points, so a crash lands at a random one.
            *(
                {"kind": Crash.kind, "point": point, "probability": probability / len(CRASH_POINTS)}
                for point in CRASH_POINTS
            ),
        ]
        machine_rules = [{"kind": DuplicateExecution.kind, "probability": probability}]
    functions: dict[str, list[dict[str, object]]] = {name: list(rules) for name in BATCH_FUNCTIONS}
    if machine_rules:
        functions[STATE_MACHINE] = machine_rules
    plan: dict[str, object] = {
        "seed": settings.seed + cycle,
        "functions": functions,
        "noisy_neighbour": {
            "slots": settings.neighbour_slots,
            "duration_seconds": settings.neighbour_on_seconds,
            "start_after_seconds": settings.neighbour_off_seconds,
        },
    }
    if settings.work_seconds > 0:
        plan["latency"] = {name: settings.work_seconds for name in (*STEP_FUNCTIONS, COMPENSATION_FUNCTION)}
    return plan


def planned_kinds(settings: SoakSettings) -> list[str]:
    """The fault kinds the soak's plan injects (the noisy neighbour aside, which is not a rule)."""
    plan = FaultPlan.from_dict(fault_plan(settings, 0))
    return sorted({rule.kind for rules in plan.functions.values() for rule in rules})


def batch_deadline_seconds(settings: SoakSettings) -> float:
    """Generous: the batch's work at the quota with the neighbour always in, six times, plus the machine."""
    capacity = max(1, settings.quota - settings.neighbour_slots)
    bound = settings.orders * len(STEP_FUNCTIONS) * settings.work_seconds / capacity
    return 6 * bound + 180 + MACHINE_SECONDS_PER_ORDER * settings.orders


@dataclass
class _Batch:
    batch_id: str
    source: str
    execution_arn: str
    started: float
    # Once the execution has ended: its status, and when reconcile (for one that did not succeed) may
    # be asked again (it answers 409 while tasks the stopped execution started may still run).
    status: str | None = None
    reconcile_after: float = 0.0
    reconciled: dict[str, int] | None = None
    stop_requested: bool = False


@dataclass
class SoakTotals:
    batches_finished: int = 0
    batches_by_status: dict[str, int] = field(default_factory=dict)
    orders: int = 0
    succeeded: int = 0
    lost: int = 0
    doubled: int = 0
    violations: int = 0
    body_runs_beyond_one: int = 0
    batches_reconciled: int = 0
    # Faults the local cloud injected, by kind (from its fault injector), over the whole run.
    injected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Interval:
    minute: float
    batches_finished: int
    orders: int
    lost: int
    doubled: int
    violations: int
    tree_rss_mib: float
    tree_pss_mib: float
    process_rss_mib: float
    processes: int
    rss_change_since_baseline: float | None
    load_average: tuple[float, float, float]
    # What the stack stores, read through the APIs. Data, not leaks: what RSS growth they explain. The
    # items in its tables live in the data plane's process, whose RSS follows them; the objects in its
    # buckets and the stored bytes of its log groups live in the local cloud's own process.
    rows: int = 0
    data_plane_rss_mib: float = 0.0
    s3_mib: float = 0.0
    logs_mib: float = 0.0


Announce = Callable[[str], None]

INTERVAL_HEADER = (
    f"{'minute':>6} {'batches':>7} {'orders':>7} {'lost':>5} {'doubled':>7} {'violations':>10} "
    f"{'cloud RSS MiB':>13} {'vs baseline':>11} {'tree RSS MiB':>12} {'tree PSS MiB':>12} {'procs':>5}"
    f" {'rows':>7} {'data plane MiB':>14} {'S3 MiB':>7} {'logs MiB':>8}  load 1/5/15"
)


def format_interval(interval: Interval) -> str:
    change = interval.rss_change_since_baseline
    load = " ".join(f"{value:.2f}" for value in interval.load_average)
    return (
        f"{interval.minute:6.1f} {interval.batches_finished:7d} {interval.orders:7d} {interval.lost:5d} "
        f"{interval.doubled:7d} {interval.violations:10d} {interval.process_rss_mib:13.1f} "
        f"{'-' if change is None else f'{change:+.1%}':>11} {interval.tree_rss_mib:12.1f} "
        f"{interval.tree_pss_mib:12.1f} {interval.processes:5d} {interval.rows:7d} "
        f"{interval.data_plane_rss_mib:14.1f} {interval.s3_mib:7.2f} {interval.logs_mib:8.2f}  {load}"
    )


class SoakRun:
    def __init__(
        self,
        cloud: LocalCloud,
        settings: SoakSettings,
        announce: Announce,
        tracer: MemoryTracer | None = None,
    ) -> None:
        from orderbatch.app_batches import fixture_skus
        from orderbatch.audit import BatchLocations

        self.cloud = cloud
        self.settings = settings
        self.announce = announce
        self.sfn = cloud.client("stepfunctions")
        self.s3 = cloud.client("s3")
        self.logs = cloud.client("logs")
        self.dynamodb = cloud.client("dynamodb")
        self.locations = BatchLocations.from_outputs(cloud.stack.outputs)
        self.bucket = cloud.stack.outputs["BatchBucketName"]
        self.skus = fixture_skus(settings.template)
        self.auditor = IncrementalAuditor(self.locations, cloud.client, cloud.log_dir)
        self.api = BatchesApiClient(
            cloud.api_url, session=boto3.Session(**DUMMY_CREDENTIALS, region_name=cloud.stack.region)
        )
        # Per fault plan cycle: the faults injected while it was in force, by kind.
        self.cycle_injections: list[CycleInjections] = []
        self._injected_at_cycle_start: dict[str, int] = {}
        self.totals = SoakTotals()
        self.batches: list[dict[str, object]] = []
        self.intervals: list[Interval] = []
        self.baseline_rss_mib: float | None = None
        self.submitted = 0
        self.cycles = 0
        self.tracer = tracer
        self.memory_growth_sites: list[dict[str, object]] = []

    def run(self) -> None:
        settings = self.settings
        service = self.cloud.lambda_service
        assert service is not None, "the local cloud has started"
        started = time.monotonic()
        stop_submitting = started + settings.minutes * 60
        cycle_seconds = settings.neighbour_on_seconds + settings.neighbour_off_seconds
        next_cycle = started
        next_report = started + settings.report_every_seconds
        running: list[_Batch] = []
        self.announce(INTERVAL_HEADER)
        while True:
            now = time.monotonic()
            if now >= next_cycle:
                self._close_cycle(complete=now < stop_submitting)
                service.set_fault_plan(fault_plan(settings, self.cycles))
                self.cycles += 1
                # A loop held up past a cycle's end (a long audit) makes that cycle longer: closing the
                # cycles it overran one after the other would judge cycles in which nothing ran.
                while next_cycle <= now:
                    next_cycle += cycle_seconds
            if now < stop_submitting:
                while len(running) < settings.in_flight:
                    running.append(self._submit())
            running = [batch for batch in running if not self._finished(batch)]
            if now >= stop_submitting and not running:
                break
            if time.monotonic() >= next_report:
                self._report(started)
                # An audit longer than the interval skips the reports it overran: one line per interval.
                while next_report <= time.monotonic():
                    next_report += settings.report_every_seconds
            elif self.tracer is not None and self.tracer.dump_requested:
                self._trace(started)
            time.sleep(POLL_SECONDS)
        self._close_cycle(complete=False)
        service.set_fault_plan(None)
        self._report(started)

    def _close_cycle(self, *, complete: bool) -> None:
        """The faults injected under the plan in force since the last cycle began. ``complete``: the
        cycle ran its whole length with batches being submitted (the last one may not have)."""
        service = self.cloud.lambda_service
        assert service is not None, "the local cloud has started"
        injected = service.faults.injected()
        self.totals.injected = dict(sorted(injected.items()))
        if self.cycles == 0:
            self._injected_at_cycle_start = injected
            return
        earlier = self._injected_at_cycle_start
        delta = {kind: count - earlier.get(kind, 0) for kind, count in injected.items()}
        self.cycle_injections.append(
            {
                "cycle": self.cycles,
                "complete": complete,
                "injected": {kind: count for kind, count in sorted(delta.items()) if count},
            }
        )
        self._injected_at_cycle_start = injected

    def _submit(self) -> _Batch:
        from orderbatch.app_batches import generate_orders

        self.submitted += 1
        source = BATCH_SOURCES[(self.submitted - 1) % len(BATCH_SOURCES)]
        batch_id = f"soak-{self.submitted:04d}-{source}"
        orders = generate_orders(
            self.settings.orders, self.skus, prefix=batch_id, seed=self.settings.seed + self.submitted
        )
        batch_input: dict[str, object] = {"batch_id": batch_id}
        if source == "inline":
            batch_input["orders"] = orders
        else:
            key = f"incoming/{batch_id}.json"
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=json.dumps(orders).encode())
            batch_input["source"] = {"bucket": self.bucket, "key": key}
        execution_arn = self.sfn.start_execution(
            stateMachineArn=self.locations.state_machine_arn, name=batch_id, input=json.dumps(batch_input)
        )["executionArn"]
        return _Batch(batch_id, source, execution_arn, time.monotonic())

    def _finished(self, batch: _Batch) -> bool:
        """Audits the batch once it has ended (stopping it past its deadline) and, if it did not succeed,
        once reconcile has finished its orders; False while it runs or waits for reconcile."""
        now = time.monotonic()
        seconds = now - batch.started
        if batch.status is None:
            status = self.sfn.describe_execution(executionArn=batch.execution_arn)["status"]
            if status == "RUNNING":
                if seconds > batch_deadline_seconds(self.settings) and not batch.stop_requested:
                    self.sfn.stop_execution(executionArn=batch.execution_arn, cause="soak batch deadline")
                    batch.stop_requested = True
                return False  # a stopped execution is ABORTED at a later poll
            batch.status = status
        needs_reconcile = batch.status != "SUCCEEDED" and batch.reconciled is None
        if needs_reconcile and (now < batch.reconcile_after or not self._reconcile(batch)):
            return False
        self._audit(batch, seconds)
        return True

    def _reconcile(self, batch: _Batch) -> bool:
        """Asks the app's API to reconcile the batch, page after page; False when it must wait first."""
        counts: dict[str, int] = {}
        start_index = 0
        while True:
            response = self.api.request(
                "POST",
                f"/batches/{batch.batch_id}/reconcile",
                json.dumps({"start_index": start_index}).encode(),
            )
            wait = response.body.get("retry_after_seconds")
            if response.status == HTTPStatus.CONFLICT and isinstance(wait, int | float):
                batch.reconcile_after = time.monotonic() + float(wait)
                return False
            if response.status >= HTTPStatus.BAD_REQUEST:
                # The audit then names the orders left open as lost: the soak reports, it does not hide.
                self.announce(f"reconcile of {batch.batch_id} refused: {response.status} {response.body}")
                break
            for action, count in (response.body.get("counts") or {}).items():
                counts[action] = counts.get(action, 0) + int(count)
            if response.body.get("next_index") is None:
                break
            start_index = int(response.body["next_index"])
        batch.reconciled = counts
        self.totals.batches_reconciled += 1
        return True

    def _audit(self, batch: _Batch, seconds: float) -> None:
        status = batch.status or "UNKNOWN"
        audit = self.auditor.audit(batch.batch_id)
        totals = self.totals
        totals.batches_finished += 1
        totals.batches_by_status[status] = totals.batches_by_status.get(status, 0) + 1
        totals.orders += audit.orders_in_input
        totals.succeeded += audit.outcomes.get("SUCCEEDED", 0)
        totals.lost += len(audit.lost)
        totals.doubled += len(audit.doubled)
        totals.violations += len(audit.violations)
        totals.body_runs_beyond_one += audit.body_runs_beyond_one
        work = self.auditor.last_step
        # Only counts are kept: the harness shares the local cloud's process, whose memory is measured.
        self.batches.append(
            {
                "batch_id": batch.batch_id,
                "source": batch.source,
                "status": status,
                "seconds": round(seconds, 1),
                "orders": audit.orders_in_input,
                "outcomes": audit.outcomes,
                "outcome_sources": audit.outcome_sources,
                "reconciled": batch.reconciled,
                "lost": len(audit.lost),
                "doubled": len(audit.doubled),
                "violations": len(audit.violations),
                "body_runs_beyond_one": audit.body_runs_beyond_one,
                "audit_work": asdict(work),
            }
        )

    def _report(self, started: float) -> None:
        sample = resources.memory()
        minute = (time.monotonic() - started) / 60
        if self.baseline_rss_mib is None and minute >= self.settings.judged_from_minute:
            self.baseline_rss_mib = sample.process_rss_mib
        baseline = self.baseline_rss_mib
        totals = self.totals
        interval = Interval(
            minute=round(minute, 2),
            batches_finished=totals.batches_finished,
            orders=totals.orders,
            lost=totals.lost,
            doubled=totals.doubled,
            violations=totals.violations,
            tree_rss_mib=round(sample.tree_rss_mib, 1),
            tree_pss_mib=round(sample.tree_pss_mib, 1),
            process_rss_mib=round(sample.process_rss_mib, 1),
            processes=sample.processes,
            rss_change_since_baseline=None if baseline is None else sample.process_rss_mib / baseline - 1,
            load_average=os.getloadavg(),
            rows=self._stored_rows(),
            data_plane_rss_mib=round(self._data_plane_rss_kib() / 1024, 1),
            s3_mib=round(self._stored_objects_bytes() / MIB, 2),
            logs_mib=round(self._stored_log_bytes() / MIB, 2),
        )
        self.intervals.append(interval)
        self.announce(format_interval(interval))
        if self.tracer is not None and baseline is not None:
            self._trace(started)

    def _data_plane_rss_kib(self) -> int:
        data_plane = self.cloud.data_plane
        return resources.rss_kib(data_plane.pid) if data_plane is not None else 0

    def _stored_rows(self) -> int:
        return sum(
            int(self.dynamodb.describe_table(TableName=table.name)["Table"].get("ItemCount", 0))
            for table in self.cloud.stack.tables
        )

    def _stored_objects_bytes(self) -> int:
        stored = 0
        for bucket in self.s3.list_buckets().get("Buckets", []):
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"]):
                stored += sum(int(item.get("Size", 0)) for item in page.get("Contents", []))
        return stored

    def _stored_log_bytes(self) -> int:
        stored = 0
        for page in self.logs.get_paginator("describe_log_groups").paginate():
            stored += sum(int(group.get("storedBytes", 0)) for group in page.get("logGroups", []))
        return stored

    def _trace(self, started: float) -> None:
        """The reference snapshot at the baseline minute; the growth since it at every later report."""
        assert self.tracer is not None
        label = f"minute {(time.monotonic() - started) / 60:.1f}"
        if not self.tracer.has_reference:
            self.tracer.set_reference(label)
            return
        sites = self.tracer.dump(label)
        self.memory_growth_sites = [asdict(site) for site in sites[:MEMORY_SITES_IN_REPORT]]


def verdict(
    settings: SoakSettings,
    totals: SoakTotals,
    intervals: list[Interval],
    cycle_injections: list[CycleInjections] | None = None,
) -> dict[str, object]:
    """The goal: 0 lost, 0 doubled, the local cloud's RSS within ``max_memory_growth`` of the baseline from
    then on, and every planned fault kind injected in every complete cycle of the fault plan. The local
    cloud's own process is judged, not its tree: the tree's summed RSS counts the pages runtimes share
    with their fork server once per process and moves with the number of warm environments (bounded by
    --environments-per-slot), not with what finished executions leave behind."""
    judged = [i.rss_change_since_baseline for i in intervals if i.rss_change_since_baseline is not None]
    worst = max(judged, key=abs) if judged else None
    memory_met = None if worst is None else abs(worst) <= settings.max_memory_growth
    kinds = planned_kinds(settings)
    # A child workflow runs twice only while an S3 batch's Distributed Map starts children, which a cycle
    # may not see: that kind is judged over the run, the per-invocation kinds in every complete cycle.
    per_cycle_kinds = [kind for kind in kinds if kind not in RUN_WIDE_KINDS]
    complete = [cycle for cycle in cycle_injections or [] if cycle["complete"]]
    short_cycles = [
        {
            "cycle": cycle["cycle"],
            "missing": [kind for kind in per_cycle_kinds if not cycle["injected"].get(kind)],
        }
        for cycle in complete
        if any(not cycle["injected"].get(kind) for kind in per_cycle_kinds)
    ]
    in_run = {kind: sum(cycle["injected"].get(kind, 0) for cycle in cycle_injections or []) for kind in kinds}
    never = [kind for kind, count in in_run.items() if not count]
    checks: dict[str, dict[str, object]] = {
        "lost": {"actual": totals.lost, "target": 0, "met": totals.lost == 0},
        "doubled": {"actual": totals.doubled, "target": 0, "met": totals.doubled == 0},
        "local_cloud_rss_flat": {
            "actual": None if worst is None else round(worst, 4),
            "target": f"within {settings.max_memory_growth:.0%} of minute {settings.judged_from_minute:g}",
            # None: the run ended before the baseline minute, so flatness was not judged.
            "met": memory_met,
        },
        "every_fault_kind_each_cycle": {
            "actual": len(short_cycles),
            "target": f"0 of {len(complete)} complete cycles missing one of {len(kinds)} kinds",
            # None: no cycle ran its whole length while batches were submitted.
            "met": (not short_cycles) if complete else None,
            "cycles_missing_kinds": short_cycles,
        },
        "every_fault_kind_in_run": {
            "actual": len(kinds) - len(never),
            "target": f"all {len(kinds)} kinds injected at least once",
            "per_kind": in_run,
            # None, as for the cycles: a run shorter than one whole cycle of the plan is not judged.
            "met": (not never) if complete else None,
            "never_injected": never,
        },
    }
    return {"checks": checks, "met": all(check["met"] is not False for check in checks.values())}


def run_soak(settings: SoakSettings, announce: Announce = lambda _text: None) -> dict[str, Any]:
    from sam_local_cloud import LocalCloud

    state_dir = Path(tempfile.mkdtemp(prefix="orderbatch-bench-soak-"))
    config = local_cloud_config(
        settings.template,
        account_concurrency=settings.quota,
        map_max_concurrency=SOAK.max_concurrency(settings.quota),
        state_dir=state_dir,
        # S3 batches run EXPRESS children, the only ones duplicate_execution can run twice.
        parameter_overrides={"ChildExecutionType": "EXPRESS"},
    )
    trace_path = settings.trace_memory or trace_path_from_environment()
    tracer = MemoryTracer(trace_path).start() if trace_path is not None else None
    started = time.monotonic()
    try:
        with LocalCloud(config) as cloud:
            announce(
                f"local cloud up in {time.monotonic() - started:.0f} s; soaking for {settings.minutes:g} min"
            )
            if tracer is not None:
                announce(f"tracing allocations to {tracer.path} (kill -USR2 {os.getpid()} dumps now)")
            run = SoakRun(cloud, settings, announce, tracer)
            run.run()
    finally:
        if tracer is not None:
            tracer.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    document_settings = {
        key: str(value) if isinstance(value, Path) else value for key, value in asdict(settings).items()
    }
    document_settings["baseline_minute"] = settings.judged_from_minute
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {**document_settings, "max_concurrency": SOAK.max_concurrency(settings.quota)},
        "soak": {
            "name": SOAK.name,
            "description": SOAK.description,
            "fault_plan": fault_plan(settings, 0),
            "fault_plan_cycles": run.cycles,
            "totals": asdict(run.totals),
            "intervals": [asdict(interval) for interval in run.intervals],
            "batches": run.batches,
            "verdict": verdict(settings, run.totals, run.intervals, run.cycle_injections),
            "planned_fault_kinds": planned_kinds(settings),
            "cycle_injections": run.cycle_injections,
            # The table printed minute by minute, line for line, for a closing note to quote.
            "minute_table": [INTERVAL_HEADER, *(format_interval(interval) for interval in run.intervals)],
            "audit_work": asdict(run.auditor.work),
            "memory_growth_sites": run.memory_growth_sites,
        },
        "seconds": round(time.monotonic() - started, 1),
    }
