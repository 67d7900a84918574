"""What a call's outcome does to its provider: settling what the call held.

An admitted call holds a token reservation, perhaps a throttle ticket, and — when it probes —
the provider's or the model's probe lease. Its outcome settles all of them at once: an answer
(:meth:`Settlement.record_answer`) or a failure by its error class
(:meth:`Settlement.record_failure`) moves the breakers, the buckets, the throttle, the model's
health and the metrics, and is recorded in the stats file; a call cancelled or cut short
without an outcome gives everything back unjudged (:meth:`Settlement.release`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from router.breaker import ProbeLease
from router.buckets import Reservation
from router.clock import Clock
from router.errors import TRAITS, ErrorClass, ProviderCallError
from router.model_health import request_fingerprint
from router.models import ChatRequest, Usage
from router.providers.base import ProviderReply
from router.runtime import ErrorNote, ProviderRuntime
from router.selection import Candidate
from router.stats import CallRecord, StatsRecorder
from router.throttle import ThrottleTicket

log = logging.getLogger("router.router")
"""The router's own log: what settling a call says (a provider found misconfigured) is the
router's news, whichever of its modules settles it."""


@dataclass(slots=True)
class Held:
    """What one attempt holds until it is settled (by an outcome) or released (cancelled)."""

    lease: ProbeLease | None
    model_lease: ProbeLease | None
    reservation: Reservation
    ticket: ThrottleTicket | None = None
    settled: bool = False


def misconfigured_reason(rt: ProviderRuntime, exc: ProviderCallError) -> str:
    where = f"the key in ${rt.cfg.api_key_env}, " if rt.cfg.api_key_env else ""
    return f"{exc.detail}: check {where}the model names and base_url"


class Settlement:
    """Settles calls on the router's runtimes; ``recorder`` (None: no stats file) gets a row for
    each outcome and each breaker change."""

    def __init__(self, clock: Clock, recorder: StatsRecorder | None) -> None:
        self.clock = clock
        self._recorder = recorder

    def record_answer(
        self, cand: Candidate, held: Held, reply: ProviderReply, latency: float
    ) -> float:
        """Settle a good answer; returns its cost in USD."""
        rt = cand.runtime
        rt.buckets.reconcile(held.reservation, reply.usage.total_tokens)
        rt.buckets.apply(reply.rate_limits)
        if held.ticket is not None:
            rt.throttle.settle(held.ticket, accepted=True)
        rt.misconfigured_reason = None
        rt.breaker.record_success(held.lease)
        rt.models.record_good(cand.model, held.model_lease)
        rt.metrics.record(True, latency)
        cost = self._cost(rt, cand.model, reply.usage)
        if self._recorder is not None:
            self._recorder.add_call(
                CallRecord(
                    rt.name,
                    True,
                    latency,
                    None,
                    reply.usage.input_tokens,
                    reply.usage.output_tokens,
                    self.clock.wall(),
                    cost_usd=cost,
                )
            )
        return cost

    def _cost(self, rt: ProviderRuntime, model: str, usage: Usage) -> float:
        price = rt.cfg.price_of(model)
        cost = 0.0 if price is None else price.cost(usage.input_tokens, usage.output_tokens)
        if cost:
            rt.metrics.add_cost(cost)
        return cost

    def record_failure(
        self,
        req: ChatRequest,
        cand: Candidate,
        exc: ProviderCallError,
        held: Held,
        latency: float,
        used: Usage,
        *,
        cut_by_deadline: bool,
    ) -> float:
        """Settle a failed call; returns its cost in USD (an invalid answer was still generated)."""
        rt = cand.runtime
        lease = held.lease
        error_class = exc.error_class
        traits = TRAITS[error_class]
        # the caller's own deadline ran out, not the provider's time: no verdict on its health
        deadline_cut = cut_by_deadline and error_class is ErrorClass.TIMEOUT
        rt.buckets.reconcile(held.reservation, used.total_tokens)
        rt.buckets.apply(exc.rate_limits)
        if held.ticket is not None:
            if deadline_cut:
                rt.throttle.cancel(held.ticket)
            else:
                rt.throttle.settle(held.ticket, accepted=traits.accepted)
        rt.last_error = ErrorNote(error_class.value, exc.status, exc.retry_after_s)
        answered_badly = error_class in (ErrorClass.BAD_REQUEST, ErrorClass.INVALID_OUTPUT)
        if traits.misconfigures:
            rt.misconfigured_reason = misconfigured_reason(rt, exc)
            if lease is not None:
                rt.breaker.record_failure(error_class, exc.retry_after_s, lease)
            else:
                rt.breaker.force_open(
                    error_class, f"misconfigured ({exc.detail})", exc.retry_after_s
                )
            log.warning(
                "provider %s is misconfigured (%s): it is skipped until a health probe passes",
                rt.name,
                exc.detail,
            )
        elif traits.counts_for_breaker and not deadline_cut:
            rt.breaker.record_failure(error_class, exc.retry_after_s, lease)
        elif lease is not None:
            rt.breaker.release_probe(lease)  # it answered, but the failed path is not proven yet
        if answered_badly:
            rt.models.record_bad(
                cand.model,
                request_fingerprint(req),
                error_class,
                exc.detail,
                held.model_lease,
            )
        elif held.model_lease is not None:
            rt.models.breaker(cand.model).release_probe(held.model_lease)
        healthy = deadline_cut or not (
            traits.counts_for_breaker or traits.misconfigures or answered_badly
        )
        rt.metrics.record(healthy, latency if exc.status is not None else None)
        cost = self._cost(rt, cand.model, used) if used.total_tokens else 0.0
        if self._recorder is not None:
            self._recorder.add_call(
                CallRecord(
                    rt.name,
                    healthy,
                    latency if exc.status is not None else None,
                    error_class.value,
                    used.input_tokens,
                    used.output_tokens,
                    self.clock.wall(),
                    cost_usd=cost,
                )
            )
        self.persist_breaker(rt)
        return cost

    @staticmethod
    def release(rt: ProviderRuntime, model: str, held: Held) -> None:
        """Give back what an attempt held without an outcome: no health verdict either way."""
        rt.buckets.reconcile(held.reservation, 0)
        if held.ticket is not None:
            rt.throttle.cancel(held.ticket)
        if held.lease is not None:
            rt.breaker.release_probe(held.lease)
        if held.model_lease is not None:
            rt.models.breaker(model).release_probe(held.model_lease)

    def persist_breaker(self, rt: ProviderRuntime) -> None:
        if self._recorder is not None:
            self._recorder.set_breaker(rt.breaker_record(self.clock.wall()))
