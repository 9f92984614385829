"""A Step Functions retrier as the planner applies it: how long the n-th retry waits.

The formula is the Developer Guide's ("Handling errors"): the n-th retry (n = 1, 2, ...) waits
``min(MaxDelaySeconds, IntervalSeconds * BackoffRate ** (n - 1))``; with ``JitterStrategy: FULL`` the wait
is drawn uniformly from ``[0, that]``. ``MaxAttempts`` retries follow the first attempt, so a call is
tried at most ``MaxAttempts + 1`` times; ``MaxAttempts: 0`` means it is never retried.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from orderbatch.lint.asl import Retrier


@dataclass(frozen=True)
class RetryPolicy:
    """One retrier with every field resolved to a number (ASL defaults applied)."""

    errors: tuple[str, ...]
    interval_seconds: float
    max_attempts: int
    backoff_rate: float
    max_delay_seconds: float | None
    full_jitter: bool

    @classmethod
    def from_retrier(cls, retrier: Retrier, where: str) -> RetryPolicy:
        """From the linter's reading of a ``Retry`` entry; ``where`` names it in the error."""
        if retrier.interval_seconds is None or retrier.max_attempts is None or retrier.backoff_rate is None:
            raise ValueError(
                f"{where}: retrier {retrier.index} ({', '.join(retrier.errors)}) has a field that is not a "
                "number the template resolves (a path or an unknown substitution)"
            )
        return cls(
            errors=retrier.errors,
            interval_seconds=retrier.interval_seconds,
            max_attempts=retrier.max_attempts,
            backoff_rate=retrier.backoff_rate,
            max_delay_seconds=retrier.max_delay_seconds,
            full_jitter=retrier.full_jitter,
        )

    def wait_ceiling(self, retry_number: int) -> float:
        """The wait before retry ``retry_number`` (1-based) without jitter, capped by MaxDelaySeconds."""
        try:
            wait = self.interval_seconds * self.backoff_rate ** (retry_number - 1)
        except OverflowError:  # a huge MaxAttempts with no cap: the wait is effectively forever
            wait = math.inf
        if self.max_delay_seconds is not None:
            wait = min(wait, self.max_delay_seconds)
        return wait

    def wait_seconds(self, retry_number: int, rng: random.Random) -> float:
        """The wait before retry ``retry_number``: the ceiling, or uniform in [0, ceiling] (FULL jitter)."""
        ceiling = self.wait_ceiling(retry_number)
        return rng.random() * ceiling if self.full_jitter else ceiling

    def describe(self) -> str:
        cap = f", cap {self.max_delay_seconds:g} s" if self.max_delay_seconds is not None else ""
        jitter = "FULL jitter" if self.full_jitter else "no jitter"
        return (
            f"interval {self.interval_seconds:g} s, rate {self.backoff_rate:g}{cap}, "
            f"{self.max_attempts} attempts, {jitter}"
        )
