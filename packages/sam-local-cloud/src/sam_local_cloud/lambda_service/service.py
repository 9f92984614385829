"""The local Lambda service: admission under the concurrency quota, faults, execution and counters."""

from __future__ import annotations

import base64
import itertools
import json
import logging
import random
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from sam_local_cloud import runtime_shim
from sam_local_cloud.lambda_service.accounting import Accounting, MetricsWindow, Slot
from sam_local_cloud.lambda_service.api import LambdaApi
from sam_local_cloud.lambda_service.backends import Backend, BackendResult, ProcessBackend, RemoteBackend
from sam_local_cloud.lambda_service.environments import LaunchSettings
from sam_local_cloud.lambda_service.errors import (
    InvalidParameterValueError,
    InvalidRequestContentError,
    RequestTooLargeError,
    ResourceNotFoundError,
    ServiceError,
    TooManyRequestsError,
)
from sam_local_cloud.lambda_service.event_keys import EventKeys
from sam_local_cloud.lambda_service.fault_injector import FaultInjector
from sam_local_cloud.lambda_service.faults import (
    Emulation,
    FaultDecision,
    FaultPlan,
    FaultRule,
)
from sam_local_cloud.lambda_service.functions import LATEST, FunctionRegistry, FunctionSpec
from sam_local_cloud.lambda_service.in_process import InProcessLambdaClient
from sam_local_cloud.lambda_service.noisy_neighbour import NoisyNeighbourRunner

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse

    from sam_local_cloud.json_types import JsonObject, JsonValue
    from sam_local_cloud.lambda_service.accounting import LambdaStats
    from sam_local_cloud.lambda_service.durable import ChainedInvokeAuthorizer, DurableExecutions

logger = logging.getLogger(__name__)

REQUEST_RESPONSE = "RequestResponse"
EVENT = "Event"
DRY_RUN = "DryRun"
INVOCATION_TYPES = frozenset({REQUEST_RESPONSE, EVENT, DRY_RUN})
SYNC_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024
ASYNC_PAYLOAD_LIMIT_BYTES = 1024 * 1024
_ASYNC_BACKOFF_BASE_SECONDS = 0.1
_ASYNC_BACKOFF_CAP_SECONDS = 2.0


@dataclass(frozen=True)
class InvokeResult:
    """The answer of Invoke, as the HTTP API returns it (status 200, 202 or 204)."""

    status_code: int
    request_id: str
    payload: bytes = b""
    function_error: str | None = None
    executed_version: str | None = None
    log_result: str | None = None
    durable_execution_arn: str | None = None


def _runtime_exited(payload: bytes) -> bool:
    try:
        document = json.loads(payload)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("errorType") == "Runtime.ExitError"


def _timeout_document(spec: FunctionSpec, request_id: str) -> bytes:
    message = f"RequestId: {request_id} Error: Task timed out after {spec.timeout_seconds:.2f} seconds"
    return json.dumps({"errorType": "Sandbox.Timedout", "errorMessage": message}).encode()


class LambdaService:
    """Lambda for the local cloud: real runtime processes, AWS's concurrency quota, injectable faults.

    ``endpoint_url`` is what functions get as ``AWS_ENDPOINT_URL`` (the local cloud). With
    ``lambda_endpoint`` set, admitted invocations are forwarded there (e.g. ``sam local start-lambda``)
    instead of running in local emulator processes; the quota still applies. ``invoke`` raises
    ``LambdaApiError`` subclasses (``TooManyRequestsError``, ``ResourceNotFoundError`` ...) for API errors
    and returns function errors in the result, as the Lambda API does.
    """

    def __init__(
        self,
        functions: Iterable[FunctionSpec],
        *,
        endpoint_url: str,
        log_dir: Path,
        account_concurrency: int = 10,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        python_executable: str = sys.executable,
        idle_timeout_seconds: float = 300.0,
        lambda_endpoint: str | None = None,
        fault_plan: FaultPlan | Mapping[str, Any] | Path | None = None,
        latency: Mapping[str, float] | None = None,
        minimum_unreserved_concurrency: int = 0,
        sample_interval_seconds: float = 0.1,
        max_timeseries_samples: int = 36_000,
        async_retry_seconds: float = 60.0,
        fork_runtimes: bool = True,
        max_environments: int | None = None,
        runtime_fallback: bool = False,
        event_keys: EventKeys | None = None,
    ) -> None:
        functions = list(functions)
        self.region = region
        self.account_id = account_id
        self.idle_timeout_seconds = idle_timeout_seconds
        self.async_retry_seconds = async_retry_seconds
        self.sample_interval_seconds = sample_interval_seconds
        self.registry = FunctionRegistry(region, account_id)
        self.accounting = Accounting(account_concurrency, minimum_unreserved_concurrency)
        self.backend: Backend
        if lambda_endpoint:
            self.backend = RemoteBackend(lambda_endpoint)
        else:
            self.backend = ProcessBackend(
                LaunchSettings(
                    python_executable,
                    endpoint_url,
                    region,
                    Path(log_dir),
                    account_id=account_id,
                    runtime_fallback=runtime_fallback,
                ),
                fork_runtimes=fork_runtimes,
                max_environments=max_environments,
                functions=functions,
            )
        # The runtimes claim `once` crashes with marker files here (see FaultInjector).
        self.faults = FaultInjector(marker_dir=Path(log_dir) / "crash-markers", event_keys=event_keys)
        self._neighbour = NoisyNeighbourRunner(
            self.accounting.hold_unreserved, self.accounting.release_unreserved
        )
        self._started = time.monotonic()
        # (seconds, account peak, function names, their peaks): an hour of samples at 0.1 s is 36,000 of
        # them, so each is a few small tuples (the names shared while they do not change), not dicts.
        self._timeseries: deque[tuple[float, int, tuple[str, ...], tuple[int, ...]]] = deque(
            maxlen=max_timeseries_samples
        )
        self._closing = threading.Event()
        self._async_threads: set[threading.Thread] = set()
        self._async_lock = threading.Lock()
        self._durable: DurableExecutions | None = None
        # Durable invocations (replays, chained targets) throttled now and retrying for a slot: each one's
        # function and time.monotonic() at its first 429, under a key of its own.
        self._waiting_for_slot: dict[int, tuple[str, float]] = {}
        self._waiting_keys = itertools.count()
        self._waiting_lock = threading.Lock()
        # Set by the local cloud when it checks IAM: whether a durable function's role may invoke a target.
        self.chained_invoke_authorizer: ChainedInvokeAuthorizer | None = None
        self._durable_lock = threading.Lock()
        functions = list(functions)
        for spec in functions:
            self.add_function(spec)
        self._defined_at_start = functions
        self.set_fault_plan(fault_plan)
        if latency:
            self.set_fault_plan(self.faults.plan.with_latency(latency))
        self._plan_at_start = self.faults.plan
        self._housekeeper = threading.Thread(
            target=self._housekeeping, name="lambda-housekeeping", daemon=True
        )
        self._housekeeper.start()
        self._api = LambdaApi(self)

    # -- functions -----------------------------------------------------------------------------

    def add_function(self, spec: FunctionSpec) -> None:
        """Define or redefine a function; its reserved concurrency is checked as PutFunctionConcurrency."""
        self.registry.add(spec)
        self.accounting.register(spec.name, spec.reserved_concurrency)

    def reset(self, account_concurrency: int) -> None:
        """Back to the start: the quota given, the functions as defined then (reserved concurrency
        included), the fault plan then, and every counter from zero. Warm environments stay warm, as a
        function's do on AWS between two tests' invocations."""
        self.accounting.restart(account_concurrency)
        for spec in self._defined_at_start:
            self.add_function(spec)
        self.set_fault_plan(self._plan_at_start)
        self._timeseries.clear()

    def resolve(self, name: str, qualifier: str | None = None) -> FunctionSpec:
        return self.registry.resolve(name, qualifier)

    def launch_runtime_servers(self) -> None:
        """Starts, without waiting, the runtime servers of the functions defined at start (ProcessBackend)."""
        if isinstance(self.backend, ProcessBackend):
            self.backend.launch_runtime_servers(self._defined_at_start)

    def get_function(self, name: str, qualifier: str | None = None) -> JsonObject:
        spec = self.registry.resolve(name, qualifier)
        answer: JsonObject = {
            "Configuration": self.registry.configuration(spec),
            "Code": {"RepositoryType": "S3", "Location": spec.code_dir.resolve().as_uri()},
        }
        reserved = self.accounting.reserved(spec.name)
        if reserved is not None:
            answer["Concurrency"] = {"ReservedConcurrentExecutions": reserved}
        return answer

    def list_functions(self) -> JsonObject:
        configurations: list[JsonValue] = [
            self.registry.configuration(self.registry.get(n)) for n in self.registry.names()
        ]
        return {"Functions": configurations}

    def account_settings(self) -> JsonObject:
        return {
            "AccountLimit": {
                "TotalCodeSize": 80_530_636_800,
                "CodeSizeUnzipped": 262_144_000,
                "CodeSizeZipped": 52_428_800,
                "ConcurrentExecutions": self.accounting.account_limit,
                "UnreservedConcurrentExecutions": self.accounting.unreserved_limit(),
            },
            "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": len(self.registry.names())},
        }

    def put_function_concurrency(self, name: str, reserved: object) -> dict[str, int]:
        spec = self.registry.resolve(name)
        if isinstance(reserved, bool) or not isinstance(reserved, int) or reserved < 0:
            raise InvalidParameterValueError("ReservedConcurrentExecutions must be a non-negative integer.")
        self.accounting.set_reserved(spec.name, reserved)
        return {"ReservedConcurrentExecutions": reserved}

    def get_function_concurrency(self, name: str) -> dict[str, int]:
        reserved = self.accounting.reserved(self.registry.resolve(name).name)
        return {} if reserved is None else {"ReservedConcurrentExecutions": reserved}

    def delete_function_concurrency(self, name: str) -> None:
        self.accounting.set_reserved(self.registry.resolve(name).name, None)

    # -- faults --------------------------------------------------------------------------------

    @property
    def fault_plan(self) -> FaultPlan:
        return self.faults.plan

    def set_fault_plan(self, plan: FaultPlan | Mapping[str, Any] | Path | None) -> FaultPlan:
        """Replace the fault plan (None clears it); attempt counters restart and the neighbour re-arms."""
        if isinstance(plan, Path):
            plan = FaultPlan.from_file(plan)
        elif not isinstance(plan, FaultPlan):
            plan = FaultPlan.from_dict(plan)
        self.faults.set_plan(plan)
        self._neighbour.start(plan.noisy_neighbour)
        return plan

    def set_latency(self, latency: Mapping[str, float]) -> FaultPlan:
        """Shorthand: only these per-function latencies, nothing else."""
        return self.set_fault_plan({"latency": dict(latency)})

    # -- invoke --------------------------------------------------------------------------------

    def invoke(
        self,
        name: str,
        payload: bytes = b"",
        invocation_type: str = REQUEST_RESPONSE,
        *,
        qualifier: str | None = None,
        log_type: str | None = None,
        durable_execution_name: str | None = None,
    ) -> InvokeResult:
        try:
            spec = self.registry.resolve(name, qualifier)
        except ResourceNotFoundError as not_found:
            # Invoke names the version it looked for: an unqualified call asked for $LATEST.
            if qualifier is None and ":" not in unquote(name).rsplit(":function:", 1)[-1]:
                raise ResourceNotFoundError(f"{not_found.message}:{LATEST}") from None
            raise
        if invocation_type not in INVOCATION_TYPES:
            raise InvalidParameterValueError(f"Unsupported invocation type {invocation_type!r}.")
        request_id = str(uuid.uuid4())
        payload = payload or b"{}"
        self._check_payload(payload, invocation_type)
        if invocation_type == DRY_RUN:
            return InvokeResult(204, request_id)
        if self._closing.is_set():
            raise ServiceError("The local Lambda service is shutting down.")
        if spec.durable_config is not None:
            return self._start_durable(spec, payload, invocation_type, durable_execution_name, request_id)
        if durable_execution_name is not None:
            raise InvalidParameterValueError(
                f"DurableExecutionName is only valid for durable functions; {spec.name} has no DurableConfig."
            )
        if invocation_type == EVENT:
            self._start_async(spec, payload, request_id)
            return InvokeResult(202, request_id)
        if self.faults.has_rules(spec.name):
            reason = self.faults.throttle_reason(spec.name, payload)
            if reason is not None:
                raise self.accounting.throttled(spec.name, reason)
        slot = self.accounting.acquire(spec.name)
        return self._run(spec, payload, request_id, slot, tail_log=log_type == "Tail")

    def _check_payload(self, payload: bytes, invocation_type: str) -> None:
        limit = ASYNC_PAYLOAD_LIMIT_BYTES if invocation_type == EVENT else SYNC_PAYLOAD_LIMIT_BYTES
        if len(payload) > limit:
            raise RequestTooLargeError(
                f"{len(payload)} byte payload is too large for the {invocation_type} invocation type "
                f"(limit {limit} bytes)"
            )
        try:
            json.loads(payload)
        except (ValueError, RecursionError) as error:
            # Nested deeper than a parser's stack goes is unparseable too (Lambda's own parser refuses it).
            raise InvalidRequestContentError(f"Could not parse request body into json: {error}") from None

    def _run(
        self, spec: FunctionSpec, payload: bytes, request_id: str, slot: Slot, *, tail_log: bool
    ) -> InvokeResult:
        started = time.monotonic()
        outcome: BackendResult | None = None
        try:
            decision = self.faults.decide(spec.name, payload) if self.faults.has_rules(spec.name) else None
            if decision is None:
                outcome = self.backend.invoke(spec, payload, tail_log=tail_log, request_id=request_id)
            else:
                outcome = self._run_with_faults(spec, payload, request_id, decision, tail_log)
        finally:
            # A service failure (outcome None) is neither a function error nor billed init time.
            cold_start_seconds = outcome.cold_start_seconds if outcome else None
            duration = time.monotonic() - started - (cold_start_seconds or 0.0)
            self.accounting.release(
                slot,
                duration * 1000,
                error=bool(outcome and outcome.function_error),
                timed_out=bool(outcome and outcome.timed_out),
            )
            if cold_start_seconds is not None:
                self.accounting.record_cold_start(spec.name, cold_start_seconds)
        body = _timeout_document(spec, request_id) if outcome.timed_out else outcome.payload
        return InvokeResult(
            200,
            request_id,
            body,
            function_error="Unhandled" if outcome.function_error else None,
            executed_version=LATEST,
            log_result=_encode_log(outcome.log_tail) if tail_log else None,
        )

    def _run_with_faults(
        self, spec: FunctionSpec, payload: bytes, request_id: str, decision: FaultDecision, tail_log: bool
    ) -> BackendResult:
        crashed = False
        try:
            result = self._apply_faults(spec, payload, request_id, decision, tail_log)
            crashed = result.function_error and _runtime_exited(result.payload)
            return result
        finally:
            self.faults.settle(spec.name, decision, crashed=crashed)

    def _apply_faults(
        self, spec: FunctionSpec, payload: bytes, request_id: str, decision: FaultDecision, tail_log: bool
    ) -> BackendResult:
        if decision.latency_seconds:
            time.sleep(decision.latency_seconds)
        delay = decision.response_delay_seconds
        directive = decision.directive() if self.backend.supports_runtime_faults else None
        if directive is not None:
            injected = _with_directive(payload, directive)
            if injected is not None:
                return self.backend.invoke(
                    spec, injected, tail_log=tail_log, hold_after_seconds=delay, request_id=request_id
                )
        return self._emulate_fault(payload, Emulation(spec, request_id, delay), decision.outcome, tail_log)

    def _emulate_fault(
        self, payload: bytes, emulation: Emulation, rule: FaultRule | None, tail_log: bool
    ) -> BackendResult:
        """The service's part of the faults: all of it for the backends or events the shim cannot reach."""
        if rule is not None:
            settled = rule.emulate_before_body(emulation)
            if settled is not None:
                return settled
        started = time.monotonic()
        result = self.backend.invoke(
            emulation.spec,
            payload,
            tail_log=tail_log,
            hold_after_seconds=emulation.response_delay_seconds,
            request_id=emulation.request_id,
        )
        if rule is None or result.function_error:
            return result
        return rule.emulate_after_body(emulation, result, started)

    # -- durable executions --------------------------------------------------------------------

    @property
    def durable(self) -> DurableExecutions:
        """The durable executions (their executor and scheduler thread start with the first use)."""
        # Imported on first use: the durable SDKs take most of a second to import, which a local cloud
        # without durable functions, and every command that only reads the service's types, never needs.
        from sam_local_cloud.lambda_service.durable import DurableExecutions

        with self._durable_lock:
            if self._durable is None:
                self._durable = DurableExecutions(
                    resolve=self.registry.resolve,
                    run_invocation=self.run_durable_invocation,
                    region=self.region,
                    account_id=self.account_id,
                    authorizer=lambda: self.chained_invoke_authorizer,
                )
            return self._durable

    def _start_durable(
        self,
        spec: FunctionSpec,
        payload: bytes,
        invocation_type: str,
        execution_name: str | None,
        request_id: str,
    ) -> InvokeResult:
        """Invoke of a durable function: start an execution (the name is its idempotency key); a
        synchronous Invoke answers with its result once it ends."""
        from sam_local_cloud.lambda_service.durable import SYNC_INVOKE_MAX_SECONDS

        start = self.durable.start(spec, payload, execution_name)
        if invocation_type == EVENT:
            return InvokeResult(202, request_id, durable_execution_arn=start.arn)
        if not self.durable.wait(start.arn, SYNC_INVOKE_MAX_SECONDS):
            raise ServiceError(
                f"Durable execution {start.arn} did not end within {SYNC_INVOKE_MAX_SECONDS} s."
            )
        body, function_error = self.durable.outcome(start.arn)
        return InvokeResult(
            200,
            request_id,
            body,
            function_error=function_error,
            executed_version=LATEST,
            durable_execution_arn=start.arn,
        )

    def run_durable_invocation(self, identifier: str, payload: bytes) -> InvokeResult:
        """One invocation Lambda makes for a durable execution (a replay, or a chained invoke's plain
        target): admitted under the quota, a throttle retried with backoff as Lambda's own
        invocations are, until ``async_retry_seconds`` runs out (then the 429 is raised)."""
        spec = self.registry.resolve(identifier)
        self._check_payload(payload, REQUEST_RESPONSE)
        slot = self._acquire_with_backoff(spec)
        return self._run(spec, payload, str(uuid.uuid4()), slot, tail_log=False)

    def _acquire_with_backoff(self, spec: FunctionSpec) -> Slot:
        """A concurrency slot, throttles retried with exponential backoff, full jitter and a cap; each
        throttle counts as one, as on AWS."""
        deadline = time.monotonic() + self.async_retry_seconds
        ceiling = _ASYNC_BACKOFF_BASE_SECONDS
        waiting: int | None = None
        try:
            while True:
                try:
                    return self.accounting.acquire(spec.name)
                except TooManyRequestsError:
                    if waiting is None:
                        waiting = next(self._waiting_keys)
                        with self._waiting_lock:
                            self._waiting_for_slot[waiting] = (spec.name, time.monotonic())
                    delay = random.uniform(0, ceiling)
                    if time.monotonic() + delay > deadline or self._closing.wait(delay):
                        raise
                    ceiling = min(ceiling * 2, _ASYNC_BACKOFF_CAP_SECONDS)
        finally:
            if waiting is not None:
                with self._waiting_lock:
                    del self._waiting_for_slot[waiting]

    def durable_slot_waits(self) -> dict[str, tuple[int, float]]:
        """Replays and chained targets throttled now and retrying for a slot: by function, how many and the
        longest wait so far in seconds."""
        now = time.monotonic()
        waits: dict[str, tuple[int, float]] = {}
        with self._waiting_lock:
            for name, since in self._waiting_for_slot.values():
                count, longest = waits.get(name, (0, 0.0))
                waits[name] = (count + 1, max(longest, now - since))
        return waits

    def durable_stall_view(self, execution_arn: str) -> str:
        """Why a durable execution is still running, as far as this service knows: the executor's view of
        it (its invocation gate, its invocation in flight and for how long, its failed attempts in a row,
        ``needs_reinvoke``, the operations it waits on, a chained invoke's target in flight), and the
        durable invocations throttled at that moment. Never raises: it explains a verdict, it must not
        replace it."""
        try:
            view = self.durable.execution_view(execution_arn).describe()
        except Exception as error:
            view = f"none ({type(error).__name__}: {error})"
        waits = self.durable_slot_waits()
        if waits:
            throttled = ", ".join(
                f"{name} {count} (longest {longest:.0f} s)"
                for name, (count, longest) in sorted(waits.items())
            )
            view += f"; durable invocations throttled now, retrying for a slot: {throttled}"
        return view

    # -- asynchronous invocations --------------------------------------------------------------

    def _start_async(self, spec: FunctionSpec, payload: bytes, request_id: str) -> None:
        thread = threading.Thread(
            target=self._run_async,
            args=(spec, payload, request_id),
            name=f"lambda-event-{spec.name}",
            daemon=True,
        )
        with self._async_lock:
            self._async_threads.add(thread)
        thread.start()

    def _run_async(self, spec: FunctionSpec, payload: bytes, request_id: str) -> None:
        """Lambda queues events and retries throttled ones with backoff; so do we, for a bounded time."""
        deadline = time.monotonic() + self.async_retry_seconds
        backoff = _ASYNC_BACKOFF_BASE_SECONDS
        try:
            while True:
                try:
                    slot = self.accounting.acquire(spec.name)
                except TooManyRequestsError:
                    if time.monotonic() + backoff > deadline or self._closing.wait(backoff):
                        self.accounting.record_async(spec.name, dropped=True)
                        logger.warning("dropped event %s for %s: still throttled", request_id, spec.name)
                        return
                    backoff = min(backoff * 2, _ASYNC_BACKOFF_CAP_SECONDS)
                    continue
                self.accounting.record_async(spec.name, dropped=False)
                self._run(spec, payload, request_id, slot, tail_log=False)
                return
        except Exception:  # a background invocation has nobody to report to but the log
            logger.exception("event %s for %s failed", request_id, spec.name)
        finally:
            with self._async_lock:
                self._async_threads.discard(threading.current_thread())

    # -- observation ---------------------------------------------------------------------------

    def handles(self, path: str) -> bool:
        return self._api.handles(path)

    def in_process_client(self) -> InProcessLambdaClient:
        """A client whose ``invoke`` answers as boto3's would, for callers in this process."""
        return InProcessLambdaClient(self._api)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        return self._api(environ, start_response)

    @property
    def started_monotonic(self) -> float:
        """`time.monotonic()` when the service started: the origin of the time series' `t`."""
        return self._started

    def stats(self, *, include_timeseries: bool = True) -> LambdaStats:
        snapshot = self.accounting.snapshot()
        environments = self.backend.environments()
        for name, counters in snapshot["functions"].items():
            counters["environments"] = environments.get(name, {})
        with self._async_lock:
            snapshot["async_in_flight"] = len(self._async_threads)
        snapshot["fault_plan"] = self.faults.plan.to_dict()
        if include_timeseries:
            snapshot["timeseries"] = {
                "interval_seconds": self.sample_interval_seconds,
                "samples": [
                    {"t": t, "account": account, "functions": dict(zip(names, peaks, strict=True))}
                    for t, account, names, peaks in list(self._timeseries)
                ],
            }
        return snapshot

    def take_metrics_windows(self) -> tuple[int, dict[str, MetricsWindow]]:
        """For the metrics publisher (the only caller): account peak and per-function windows, reset."""
        return self.accounting.take_windows()

    def _housekeeping(self) -> None:
        reap_every = max(self.sample_interval_seconds, min(1.0, self.idle_timeout_seconds / 4))
        next_reap = time.monotonic() + reap_every
        function_names: tuple[str, ...] = ()
        while not self._closing.wait(self.sample_interval_seconds):
            account_peak, peaks = self.accounting.sample()
            elapsed = round(time.monotonic() - self._started, 3)
            names = tuple(peaks)
            if names != function_names:
                function_names = names
            self._timeseries.append((elapsed, account_peak, function_names, tuple(peaks.values())))
            if time.monotonic() >= next_reap:
                next_reap = time.monotonic() + reap_every
                try:
                    self.backend.reap(self.idle_timeout_seconds)
                except Exception:  # never let one failed kill stop sampling and reaping
                    logger.exception("reaping idle Lambda environments failed")

    def close(self) -> None:
        """Stop background work and kill every environment, busy or idle."""
        self._closing.set()
        with self._durable_lock:
            if self._durable is not None:
                self._durable.close()
        self._neighbour.stop()
        self._housekeeper.join(timeout=5)
        self.backend.close()
        with self._async_lock:
            threads = list(self._async_threads)
        for thread in threads:
            thread.join(timeout=5)

    def __enter__(self) -> LambdaService:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _with_directive(payload: bytes, directive: JsonObject) -> bytes | None:
    """The payload with the shim's directive added, or None when the event is not a JSON object."""
    event = json.loads(payload)
    if not isinstance(event, dict):
        return None
    event[runtime_shim.FAULT_EVENT_KEY] = directive
    return json.dumps(event).encode()


def _encode_log(log_tail: bytes | None) -> str:
    return base64.b64encode(log_tail or b"").decode()
