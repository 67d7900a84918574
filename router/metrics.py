"""Per-provider call statistics and the health score used for selection (ADR-002).

Success rate over a sliding window of recent calls, latency as an EMA plus a
window for p50–p99, and the time since the last failure for recency. The
health score weighs them 60 / 20 / 20:

* success: the windowed success rate, smoothed toward 1 with two virtual
  successes so a provider with no history is given a chance;
* latency: the fastest candidate's EMA divided by this provider's (1.0 for the
  fastest, computed by the selector, which sees all candidates);
* recency: ``1 - exp(-age / tau)`` of the last failure — 0 right after a
  failure, back near 1 after a few ``tau``; 1 if it never failed.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from router.clock import Clock
from router.models import ChatResponse, RouterTotals

SUCCESS_WEIGHT = 0.6
LATENCY_WEIGHT = 0.2
RECENCY_WEIGHT = 0.2


@dataclass(frozen=True, slots=True)
class LatencySummary:
    ema: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    recent: list[float]


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (``q`` in 0..100)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class ProviderMetrics:
    def __init__(
        self,
        clock: Clock,
        *,
        window: int = 100,
        latency_window: int = 100,
        ema_alpha: float = 0.2,
        recency_tau_s: float = 120.0,
    ) -> None:
        self._clock = clock
        self._outcomes: deque[bool] = deque(maxlen=window)
        self._ok_in_window = 0
        self._latencies: deque[float] = deque(maxlen=latency_window)
        self._ema: float | None = None
        self._alpha = ema_alpha
        self._tau = recency_tau_s
        self.last_failure_at: float | None = None
        self.last_success_at: float | None = None
        self.requests_total = 0
        self.successes_total = 0
        self.failures_total = 0
        self.cost_usd_total = 0.0
        self.fallback_total = 0  # built-in provider only: answers given in place of a remote one
        self._lock = threading.Lock()

    def record(self, ok: bool, latency_s: float | None) -> None:
        """One finished call. ``ok`` is the provider-health outcome; latency only for answered calls."""
        with self._lock:
            now = self._clock.monotonic()
            self._push(ok, latency_s)
            if ok:
                self.last_success_at = now
                self.successes_total += 1
            else:
                self.last_failure_at = now
                self.failures_total += 1
            self.requests_total += 1

    def add_cost(self, usd: float) -> None:
        with self._lock:
            self.cost_usd_total += usd

    def seed(
        self,
        outcomes: Iterable[tuple[bool, float | None]],
        totals: tuple[int, int, int],
        cost_usd: float = 0.0,
        fallbacks: int = 0,
    ) -> None:
        """Load persisted history (oldest first) without touching recency."""
        with self._lock:
            for ok, latency in outcomes:
                self._push(ok, latency)
            self.requests_total, self.successes_total, self.failures_total = totals
            self.cost_usd_total = cost_usd
            self.fallback_total = fallbacks

    def _push(self, ok: bool, latency_s: float | None) -> None:
        """Add one outcome to the windows and the EMA (lock held)."""
        if len(self._outcomes) == self._outcomes.maxlen and self._outcomes[0]:
            self._ok_in_window -= 1
        self._outcomes.append(ok)
        self._ok_in_window += ok
        if latency_s is not None:
            self._latencies.append(latency_s)
            self._ema = (
                latency_s
                if self._ema is None
                else self._ema + self._alpha * (latency_s - self._ema)
            )

    @property
    def ema_latency(self) -> float | None:
        return self._ema

    def success_rate(self) -> float | None:
        with self._lock:
            n = len(self._outcomes)
            return None if n == 0 else self._ok_in_window / n

    def smoothed_success(self) -> float:
        n = len(self._outcomes)
        return (self._ok_in_window + 2.0) / (n + 2.0)

    def recency_score(self) -> float:
        if self.last_failure_at is None:
            return 1.0
        age = max(0.0, self._clock.monotonic() - self.last_failure_at)
        return 1.0 - math.exp(-age / self._tau)

    def health_score(self, latency_score: float = 1.0) -> float:
        return (
            SUCCESS_WEIGHT * self.smoothed_success()
            + LATENCY_WEIGHT * latency_score
            + RECENCY_WEIGHT * self.recency_score()
        )

    def latency_summary(self, recent: int = 30) -> LatencySummary:
        with self._lock:
            values = list(self._latencies)
            ema = self._ema
        if not values:
            return LatencySummary(ema, None, None, None, [])
        ordered = sorted(values)
        return LatencySummary(
            ema,
            percentile(ordered, 50),
            percentile(ordered, 95),
            percentile(ordered, 99),
            values[-recent:],
        )


class TotalsCounter:
    """Counts a router's answers by kind (remote, lower tier, fallback, built-in) and their cost."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(
            (
                "calls",
                "remote",
                "lower_tier",
                "fallback",
                "builtin",
                "input_tokens",
                "output_tokens",
            ),
            0,
        )
        self._cost = 0.0

    def record(self, response: ChatResponse, builtin_name: str) -> None:
        if response.provider == builtin_name:
            kind = "fallback" if response.fallback else "builtin"
        else:
            kind = "lower_tier" if response.degraded else "remote"
        with self._lock:
            counts = self._counts
            counts["calls"] += 1
            counts[kind] += 1
            counts["input_tokens"] += response.usage.input_tokens
            counts["output_tokens"] += response.usage.output_tokens
            self._cost += response.cost_usd

    def totals(self) -> RouterTotals:
        with self._lock:
            return RouterTotals(**self._counts, cost_usd=round(self._cost, 9))
