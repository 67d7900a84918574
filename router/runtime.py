"""Everything the router keeps about one remote provider, and how it reads as a snapshot or a stored row."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

from router.breaker import CircuitBreaker, Transition
from router.buckets import DualBucket
from router.bulkhead import Bulkhead, BulkheadBoard
from router.clock import Clock
from router.config import ProviderConfig, RouterPolicy
from router.metrics import ProviderMetrics
from router.model_health import ModelHealth
from router.models import BreakerState, ProviderSnapshot
from router.providers.base import Provider
from router.stats import BreakerRecord, StoredProvider
from router.throttle import AdaptiveThrottle


@dataclass(slots=True)
class ErrorNote:
    error_class: str | None = None
    status: int | None = None
    retry_after_s: float | None = None


class ProviderRuntime:
    def __init__(
        self,
        cfg: ProviderConfig,
        provider: Provider,
        policy: RouterPolicy,
        clock: Clock,
        board: BulkheadBoard,
        rng: random.Random,
        on_transition: Callable[[ProviderRuntime, Transition], None],
    ) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.provider = provider
        self.breaker = CircuitBreaker(
            policy.breaker_policy(),
            clock,
            lambda t: on_transition(self, t),
            random.Random(rng.random()),
        )
        self.models = ModelHealth(
            policy.breaker_policy(),
            clock,
            random.Random(rng.random()),
            policy.bad_answer_strikes,
            lambda model, t: on_transition(
                self, dataclasses.replace(t, reason=f"model {model}: {t.reason}", model=model)
            ),
        )
        self.buckets = DualBucket(cfg.rpm, cfg.tpm, clock)
        self.throttle = AdaptiveThrottle(
            clock,
            k=policy.throttle_k,
            window_s=policy.throttle_window_s,
            rng=random.Random(rng.random()),
        )
        self.bulkhead = Bulkhead(cfg.bulkhead, board)
        self.metrics = ProviderMetrics(clock, recency_tau_s=policy.recency_tau_s)
        self.misconfigured_reason: str | None = None
        self.last_error = ErrorNote()
        self._nominal_tokens = policy.default_output_tokens

    @property
    def misconfigured(self) -> bool:
        return self.misconfigured_reason is not None

    def capacity(self) -> float:
        """Share of capacity still free: the tighter of the buckets and the bulkhead."""
        return min(self.buckets.capacity_fraction(), self.bulkhead.free / self.bulkhead.size)

    def restore(self, stored: StoredProvider, now_wall: float) -> None:
        self.metrics.seed(
            stored.recent,
            (stored.totals.requests, stored.totals.successes, stored.totals.failures),
            stored.totals.cost_usd,
        )
        row = stored.breaker
        if row is None:
            return
        remaining = stored.cooldown_remaining(now_wall)
        state = (
            BreakerState(row.state)
            if row.state in BreakerState.__members__
            else BreakerState.CLOSED
        )
        self.breaker.restore(
            state, remaining, row.consecutive_trips, row.open_reason, row.changed_wall
        )
        self.last_error = ErrorNote(row.last_error, row.last_error_status)
        if row.misconfigured and state is not BreakerState.CLOSED and remaining > 0:
            self.misconfigured_reason = row.misconfigured_reason or "misconfigured"

    def breaker_record(self, now_wall: float) -> BreakerRecord:
        view = self.breaker.view()
        return BreakerRecord(
            provider=self.name,
            state=view.state.value,
            cooldown_remaining_s=view.cooldown_remaining_s,
            consecutive_trips=view.consecutive_trips,
            open_reason=view.open_reason,
            last_error=self.last_error.error_class,
            last_error_status=self.last_error.status,
            misconfigured=self.misconfigured,
            misconfigured_reason=self.misconfigured_reason,
            changed_wall=view.changed_wall,
            saved_wall=now_wall,
        )

    def snapshot(self, health_score: float, key_problem: str | None) -> ProviderSnapshot:
        view = self.breaker.view()
        latency = self.metrics.latency_summary()
        rpm_remaining, rpm_limit, tpm_remaining, tpm_limit = self.buckets.headroom()
        eta = self.buckets.eta(self._nominal_tokens)
        throttle_p = self.throttle.reject_probability()
        reason = self.misconfigured_reason or key_problem
        unhealthy = self.models.unhealthy()
        return ProviderSnapshot(
            name=self.name,
            kind=self.cfg.kind,
            state=view.state,
            cooldown_remaining_s=round(view.cooldown_remaining_s, 3),
            cooldown_ceiling_s=round(view.ceiling_s, 3),
            consecutive_trips=view.consecutive_trips,
            success_rate=self.metrics.success_rate(),
            health_score=round(health_score, 4),
            ema_latency_s=latency.ema,
            p50_latency_s=latency.p50,
            p95_latency_s=latency.p95,
            p99_latency_s=latency.p99,
            recent_latencies_s=latency.recent,
            rpm_remaining=rpm_remaining,
            rpm_limit=rpm_limit,
            tpm_remaining=tpm_remaining,
            tpm_limit=tpm_limit,
            bucket_eta_s=round(eta, 3),
            in_flight=self.bulkhead.in_flight,
            bulkhead_size=self.bulkhead.size,
            throttle_reject_p=round(throttle_p, 4),
            requests_total=self.metrics.requests_total,
            successes_total=self.metrics.successes_total,
            failures_total=self.metrics.failures_total,
            degraded=view.state is not BreakerState.CLOSED
            or throttle_p > 0
            or eta > 0
            or bool(unhealthy),
            misconfigured=reason is not None,
            misconfigured_reason=reason,
            last_error=self.last_error.error_class,
            last_error_status=self.last_error.status,
            last_error_retry_after_s=self.last_error.retry_after_s,
            open_reason=view.open_reason,
            changed_wall=view.changed_wall,
            models=dict(self.cfg.models),
            unhealthy_models=unhealthy,
            cost_usd_total=round(self.metrics.cost_usd_total, 6),
            structured_output=dict(self.provider.structured_modes()),
        )
