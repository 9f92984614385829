"""The concurrency quota and every per-function counter, kept under one lock.

Admission follows AWS: a function with reserved concurrency R runs at most R at once; every other
function shares the unreserved pool (account limit minus all reservations). The decision is taken
atomically before anything runs, so a throttled call never executes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from sam_local_cloud.json_types import JsonObject
from sam_local_cloud.lambda_service.errors import (
    CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
    RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED,
    InvalidParameterValueError,
    TooManyRequestsError,
)


class ColdStartStats(TypedDict):
    total: float
    max: float
    mean: float


class DurationStats(TypedDict):
    count: int
    total: float
    min: float
    max: float
    mean: float


class ConcurrencyStats(TypedDict):
    current: int
    max: int


class AsyncStats(TypedDict):
    accepted: int
    dropped: int


# The functional form: "async" is a keyword.
FunctionStats = TypedDict(
    "FunctionStats",
    {
        "reserved_concurrency": int | None,
        "invocations": int,
        "errors": int,
        "timeouts": int,
        "throttles": dict[str, int],
        "throttles_total": int,
        "cold_starts": int,
        "cold_start_ms": ColdStartStats,
        "duration_ms": DurationStats,
        "concurrency": ConcurrencyStats,
        "async": AsyncStats,
        # Added by the service: its backend's count of environments by state.
        "environments": NotRequired[dict[str, int]],
    },
)


class AccountStats(TypedDict):
    limit: int
    unreserved_limit: int
    current: int
    max: int
    noisy_neighbour_slots: int


class TimeseriesSample(TypedDict):
    t: float
    account: int
    functions: dict[str, int]


class Timeseries(TypedDict):
    interval_seconds: float
    samples: list[TimeseriesSample]


class LambdaStats(TypedDict):
    """The counters of ``GET /_sam_local_cloud/lambda/stats``; the accounting fills the first two, the
    service the rest."""

    account: AccountStats
    functions: dict[str, FunctionStats]
    async_in_flight: NotRequired[int]
    fault_plan: NotRequired[JsonObject]
    timeseries: NotRequired[Timeseries]


@dataclass
class MetricsWindow:
    """What happened to one function since the metrics publisher last looked."""

    invocations: int = 0
    errors: int = 0
    throttles: int = 0
    duration_count: int = 0
    duration_sum_ms: float = 0.0
    duration_min_ms: float = 0.0
    duration_max_ms: float = 0.0
    concurrency_peak: int = 0

    def add_duration(self, duration_ms: float) -> None:
        if self.duration_count == 0 or duration_ms < self.duration_min_ms:
            self.duration_min_ms = duration_ms
        self.duration_max_ms = max(self.duration_max_ms, duration_ms)
        self.duration_count += 1
        self.duration_sum_ms += duration_ms

    def is_empty(self) -> bool:
        return not (self.invocations or self.throttles or self.concurrency_peak)


@dataclass
class FunctionCounters:
    reserved: int | None = None
    current: int = 0
    max_concurrent: int = 0
    invocations: int = 0
    errors: int = 0
    timeouts: int = 0
    throttles: dict[str, int] = field(default_factory=dict)
    cold_starts: int = 0
    cold_start_ms_total: float = 0.0
    cold_start_ms_max: float = 0.0
    # Lifetime duration statistics; only the duration fields of this window are used.
    lifetime: MetricsWindow = field(default_factory=MetricsWindow)
    async_accepted: int = 0
    async_dropped: int = 0
    sample_peak: int = 0
    window: MetricsWindow = field(default_factory=MetricsWindow)


@dataclass(frozen=True)
class Slot:
    """One admitted execution; remembers which pool it came from so release returns it there."""

    function_name: str
    from_reservation: bool


class Accounting:
    def __init__(self, account_limit: int, minimum_unreserved: int = 0) -> None:
        if account_limit < 1:
            raise ValueError("account concurrency must be at least 1")
        self.account_limit = account_limit
        self.minimum_unreserved = minimum_unreserved
        self._functions: dict[str, FunctionCounters] = {}
        self._unreserved_running = 0
        self._neighbour_slots = 0
        self._account_max = 0
        self._account_sample_peak = 0
        self._account_window_peak = 0
        self._lock = threading.Lock()

    # -- configuration -------------------------------------------------------------------------

    def register(self, name: str, reserved: int | None) -> None:
        with self._lock:
            self._functions.setdefault(name, FunctionCounters())
        self.set_reserved(name, reserved)

    def reserved(self, name: str) -> int | None:
        return self._functions[name].reserved

    def set_reserved(self, name: str, reserved: int | None) -> None:
        """PutFunctionConcurrency / DeleteFunctionConcurrency.

        AWS keeps at least 100 executions unreserved; with a local quota of 10 that would forbid any
        reservation, so the floor here is ``minimum_unreserved`` (0 by default).
        """
        with self._lock:
            others = sum(c.reserved or 0 for n, c in self._functions.items() if n != name)
            if reserved is not None and self.account_limit - others - reserved < self.minimum_unreserved:
                raise InvalidParameterValueError(
                    "Specified ReservedConcurrentExecutions for function decreases account's "
                    f"UnreservedConcurrentExecution below its minimum value of [{self.minimum_unreserved}]."
                )
            self._functions[name].reserved = reserved

    def set_account_limit(self, account_limit: int) -> None:
        """A new account quota, as a Service Quotas increase (or a test's lower one) takes effect: running
        executions keep their slots, and admission from now on counts against the new limit."""
        with self._lock:
            reserved = sum(c.reserved or 0 for c in self._functions.values())
            if account_limit < 1 or account_limit - reserved < self.minimum_unreserved:
                raise ValueError(
                    f"account concurrency {account_limit}: at least 1, and at least the {reserved} reserved "
                    f"by functions plus {self.minimum_unreserved} unreserved"
                )
            self.account_limit = account_limit

    def restart(self, account_limit: int) -> None:
        """The counters from zero and the quota as given, as at the start: invocations still running keep
        their slots, so that their release balances."""
        with self._lock:
            self._functions = {
                name: FunctionCounters(reserved=counters.reserved, current=counters.current)
                for name, counters in self._functions.items()
            }
            self._account_max = self._account_sample_peak = self._account_window_peak = 0
        self.set_account_limit(account_limit)

    def unreserved_limit(self) -> int:
        return self.account_limit - sum(c.reserved or 0 for c in self._functions.values())

    # -- admission -----------------------------------------------------------------------------

    def acquire(self, name: str) -> Slot:
        """Admit one execution or raise ``TooManyRequestsError`` (counted as a throttle)."""
        with self._lock:
            counters = self._functions[name]
            if counters.reserved is not None:
                if counters.current >= counters.reserved:
                    raise self._throttle(counters, RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED)
                slot = Slot(name, from_reservation=True)
            else:
                if self._unreserved_running + self._neighbour_slots >= self._unreserved_limit_locked():
                    raise self._throttle(counters, CONCURRENT_INVOCATION_LIMIT_EXCEEDED)
                self._unreserved_running += 1
                slot = Slot(name, from_reservation=False)
            counters.current += 1
            counters.invocations += 1
            counters.window.invocations += 1
            counters.max_concurrent = max(counters.max_concurrent, counters.current)
            counters.sample_peak = max(counters.sample_peak, counters.current)
            counters.window.concurrency_peak = max(counters.window.concurrency_peak, counters.current)
            self._note_account_level()
            return slot

    def throttled(self, name: str, reason: str) -> TooManyRequestsError:
        """A 429 decided outside the quota (an injected ``throttle`` fault), counted as one."""
        with self._lock:
            return self._throttle(self._functions[name], reason)

    def release(self, slot: Slot, duration_ms: float, *, error: bool, timed_out: bool) -> None:
        with self._lock:
            counters = self._functions[slot.function_name]
            counters.current -= 1
            if not slot.from_reservation:
                self._unreserved_running -= 1
            counters.lifetime.add_duration(duration_ms)
            counters.window.add_duration(duration_ms)
            if error:
                counters.errors += 1
                counters.window.errors += 1
            if timed_out:
                counters.timeouts += 1

    def hold_unreserved(self, slots: int) -> int:
        """Occupy up to ``slots`` of the unreserved pool for a noisy neighbour; returns how many it got."""
        with self._lock:
            free = self._unreserved_limit_locked() - self._unreserved_running - self._neighbour_slots
            granted = max(0, min(slots, free))
            self._neighbour_slots += granted
            self._note_account_level()
            return granted

    def release_unreserved(self, slots: int) -> None:
        with self._lock:
            self._neighbour_slots -= slots

    def _unreserved_limit_locked(self) -> int:
        return self.account_limit - sum(c.reserved or 0 for c in self._functions.values())

    def _throttle(self, counters: FunctionCounters, reason: str) -> TooManyRequestsError:
        counters.throttles[reason] = counters.throttles.get(reason, 0) + 1
        counters.window.throttles += 1
        return TooManyRequestsError(reason)

    def _account_running_locked(self) -> int:
        return sum(c.current for c in self._functions.values()) + self._neighbour_slots

    def _note_account_level(self) -> None:
        running = self._account_running_locked()
        self._account_max = max(self._account_max, running)
        self._account_sample_peak = max(self._account_sample_peak, running)
        self._account_window_peak = max(self._account_window_peak, running)

    # -- counters ------------------------------------------------------------------------------

    def record_cold_start(self, name: str, seconds: float) -> None:
        with self._lock:
            counters = self._functions[name]
            counters.cold_starts += 1
            counters.cold_start_ms_total += seconds * 1000
            counters.cold_start_ms_max = max(counters.cold_start_ms_max, seconds * 1000)

    def record_async(self, name: str, *, dropped: bool) -> None:
        with self._lock:
            counters = self._functions[name]
            if dropped:
                counters.async_dropped += 1
            else:
                counters.async_accepted += 1

    def running(self) -> int:
        """Invocations of this account's functions running now (a noisy neighbour's slots not counted)."""
        with self._lock:
            return sum(counters.current for counters in self._functions.values())

    def sample(self) -> tuple[int, dict[str, int]]:
        """Peak concurrency (account, per function) since the previous sample; resets the peaks."""
        with self._lock:
            account_peak = max(self._account_sample_peak, self._account_running_locked())
            self._account_sample_peak = 0
            peaks = {}
            for name, counters in self._functions.items():
                peak = max(counters.sample_peak, counters.current)
                counters.sample_peak = 0
                if peak:
                    peaks[name] = peak
            return account_peak, peaks

    def take_windows(self) -> tuple[int, dict[str, MetricsWindow]]:
        """Account peak and per-function windows since the previous call; resets them (one consumer)."""
        with self._lock:
            account_peak = max(self._account_window_peak, self._account_running_locked())
            self._account_window_peak = 0
            windows = {}
            for name, counters in self._functions.items():
                counters.window.concurrency_peak = max(counters.window.concurrency_peak, counters.current)
                windows[name] = counters.window
                counters.window = MetricsWindow()
            return account_peak, windows

    def snapshot(self) -> LambdaStats:
        with self._lock:
            functions: dict[str, FunctionStats] = {}
            for name, c in self._functions.items():
                duration = c.lifetime
                functions[name] = {
                    "reserved_concurrency": c.reserved,
                    "invocations": c.invocations,
                    "errors": c.errors,
                    "timeouts": c.timeouts,
                    "throttles": dict(c.throttles),
                    "throttles_total": sum(c.throttles.values()),
                    "cold_starts": c.cold_starts,
                    "cold_start_ms": {
                        "total": round(c.cold_start_ms_total, 3),
                        "max": round(c.cold_start_ms_max, 3),
                        "mean": round(c.cold_start_ms_total / c.cold_starts, 3) if c.cold_starts else 0.0,
                    },
                    "duration_ms": {
                        "count": duration.duration_count,
                        "total": round(duration.duration_sum_ms, 3),
                        "min": round(duration.duration_min_ms, 3),
                        "max": round(duration.duration_max_ms, 3),
                        "mean": round(duration.duration_sum_ms / duration.duration_count, 3)
                        if duration.duration_count
                        else 0.0,
                    },
                    "concurrency": {"current": c.current, "max": c.max_concurrent},
                    "async": {"accepted": c.async_accepted, "dropped": c.async_dropped},
                }
            return {
                "account": {
                    "limit": self.account_limit,
                    "unreserved_limit": self._unreserved_limit_locked(),
                    "current": self._account_running_locked(),
                    "max": self._account_max,
                    "noisy_neighbour_slots": self._neighbour_slots,
                },
                "functions": functions,
            }
