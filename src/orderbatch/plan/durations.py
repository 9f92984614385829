"""How long one invocation of a function runs: a lognormal fitted to a mean and a p99.

CloudWatch gives a function's ``Duration`` average and p99; a lognormal with that mean and p99 has a
right tail like real handlers (most calls near the median, a few slow DynamoDB round trips). With
``p99 == mean`` the duration is fixed, which the closed-form checks of the planner rely on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The 99th percentile of the standard normal distribution.
Z_99 = 2.3263478740408408
# The benchmark's work per step (docs/benchmark.md, `--work`, d = 0.5 s).
DEFAULT_MEAN_SECONDS = 0.5
# With no p99 given: a moderate tail, p99 = 2 x the mean (an assumption, not a measurement; give your
# function's CloudWatch Duration p99 with --duration FN=MEAN,P99).
DEFAULT_P99_OVER_MEAN = 2.0


@dataclass(frozen=True)
class Duration:
    mean_seconds: float
    p99_seconds: float

    def __post_init__(self) -> None:
        if self.mean_seconds < 0 or self.p99_seconds < 0:
            raise ValueError("durations cannot be negative")
        if self.p99_seconds < self.mean_seconds:
            raise ValueError(
                f"p99 {self.p99_seconds:g} s is below the mean {self.mean_seconds:g} s: "
                "a lognormal cannot fit"
            )
        if self.mean_seconds > 0 and self.p99_seconds / self.mean_seconds > math.exp(Z_99**2 / 2):
            raise ValueError(
                f"p99 / mean = {self.p99_seconds / self.mean_seconds:.1f} is above "
                f"{math.exp(Z_99**2 / 2):.1f}, the most a lognormal allows"
            )

    @classmethod
    def with_default_tail(cls, mean_seconds: float) -> Duration:
        return cls(mean_seconds, mean_seconds * DEFAULT_P99_OVER_MEAN)

    @classmethod
    def fixed(cls, seconds: float) -> Duration:
        return cls(seconds, seconds)

    @classmethod
    def parse(cls, text: str) -> Duration:
        """``MEAN`` (default tail) or ``MEAN,P99``, in seconds."""
        parts = [part.strip() for part in text.split(",")]
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            raise ValueError(f"duration {text!r} is not MEAN or MEAN,P99 in seconds") from None
        if len(numbers) == 1:
            return cls.with_default_tail(numbers[0])
        if len(numbers) == 2:
            return cls(numbers[0], numbers[1])
        raise ValueError(f"duration {text!r} is not MEAN or MEAN,P99 in seconds")

    @property
    def is_fixed(self) -> bool:
        return self.p99_seconds == self.mean_seconds

    def lognormal_parameters(self) -> tuple[float, float]:
        """(mu, sigma) of the lognormal with this mean and p99.

        mean = exp(mu + sigma^2 / 2) and p99 = exp(mu + z sigma),
        so sigma^2 / 2 - z sigma + ln(p99 / mean) = 0; the smaller root is the one whose median sits
        below the mean, as measured durations have.
        """
        if self.is_fixed or self.mean_seconds == 0:
            return (math.log(self.mean_seconds) if self.mean_seconds > 0 else -math.inf, 0.0)
        log_ratio = math.log(self.p99_seconds / self.mean_seconds)
        sigma = Z_99 - math.sqrt(Z_99**2 - 2 * log_ratio)
        mu = math.log(self.mean_seconds) - sigma**2 / 2
        return mu, sigma

    def describe(self) -> str:
        if self.is_fixed:
            return f"{self.mean_seconds:g} s fixed"
        return f"mean {self.mean_seconds:g} s, p99 {self.p99_seconds:g} s (lognormal)"
