"""Admission: whether a provider takes a call now, and what the call then holds.

A provider is passed over — at once, without waiting — when it is misconfigured, OPEN,
HALF_OPEN with its probe already out, its rate-limit bucket would make the request wait, its
bulkhead is full, or adaptive throttling rejects locally; a model that answers badly is passed
over the same way. An admitted call holds a token reservation, a bulkhead slot and, when it
probes, the probe leases (router/settle.py settles them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from router.breaker import ProbeLease
from router.buckets import Reservation
from router.clock import Clock
from router.config import RouterPolicy
from router.models import BreakerState
from router.runtime import ProviderRuntime
from router.selection import Candidate


@dataclass(frozen=True, slots=True)
class Skip:
    """Why a provider was passed over."""

    detail: str
    # set when only capacity stood in the way: seconds until a bucket has room, or ``math.inf``
    # for a full bulkhead (a slot frees whenever a call ends: wait for that, not for a time)
    capacity_eta: float | None = None


@dataclass(frozen=True, slots=True)
class Admitted:
    lease: ProbeLease | None  # the provider breaker's probe lease, when this call probes it
    model_lease: ProbeLease | None  # the model breaker's, when this call probes the model
    reservation: Reservation


class Admission:
    def __init__(self, policy: RouterPolicy, clock: Clock) -> None:
        self.policy = policy
        self.clock = clock

    def admit(
        self, rt: ProviderRuntime, cand: Candidate, estimate: int, deadline: float
    ) -> Skip | Admitted:
        """Admission checks with no await in between, so they are atomic on the loop."""
        breaker = rt.breaker
        state = breaker.state
        if rt.misconfigured and state is BreakerState.OPEN:
            return Skip(f"misconfigured: {rt.misconfigured_reason}")
        key_problem = rt.provider.key_problem()
        if key_problem is not None:
            return Skip(f"misconfigured: {key_problem}")
        if state is BreakerState.OPEN:
            return Skip(f"OPEN, next probe in {breaker.cooldown_remaining():.1f}s")
        probing = state is BreakerState.HALF_OPEN
        if probing and not breaker.can_attempt():
            return Skip("HALF_OPEN with its probe in flight")
        model_probe = None  # the model's breaker when this call would probe it
        model_breaker = rt.models.get(cand.model)  # None: the model never answered badly
        if model_breaker is not None:
            model_state = model_breaker.state
            if model_state is BreakerState.OPEN:
                return Skip(
                    f"model {cand.model} OPEN (bad answers), next probe in "
                    f"{model_breaker.cooldown_remaining():.1f}s"
                )
            if model_state is BreakerState.HALF_OPEN:
                if not model_breaker.can_attempt():
                    return Skip(f"model {cand.model} HALF_OPEN with its probe in flight")
                model_probe = model_breaker
        eta = rt.buckets.eta(estimate)
        if eta > 0:
            return Skip(f"rate-limit bucket has room in {eta:.2f}s", capacity_eta=eta)
        if rt.bulkhead.free <= 0:
            return Skip(
                f"bulkhead full ({rt.bulkhead.size} in flight)",
                capacity_eta=math.inf,
            )
        if not probing and model_probe is None and rt.throttle.should_reject():
            return Skip(f"throttled locally (p={rt.throttle.reject_probability():.2f})")
        lease = model_lease = None
        if probing or model_probe is not None:
            # a lease outlives its probe: the health check (if any) plus the real call
            probe_s = self.call_timeout(rt, deadline)
            if probing and rt.provider.has_health_probe:
                probe_s += self.health_timeout(rt)
            if probing:
                lease = breaker.acquire_probe(probe_s)
                if lease is None:
                    return Skip("HALF_OPEN with its probe in flight")
        if model_probe is not None:
            model_lease = model_probe.acquire_probe(probe_s)
            if model_lease is None:
                if lease is not None:
                    breaker.release_probe(lease)
                return Skip(f"model {cand.model} HALF_OPEN with its probe in flight")
        reservation = rt.buckets.try_reserve(estimate)
        if reservation is None:
            if lease is not None:
                breaker.release_probe(lease)
            if model_probe is not None and model_lease is not None:
                model_probe.release_probe(model_lease)
            return Skip("rate-limit bucket full", capacity_eta=rt.buckets.eta(estimate))
        rt.bulkhead.try_acquire()
        return Admitted(lease, model_lease, reservation)

    def call_timeout(self, rt: ProviderRuntime, deadline: float) -> float:
        return max(0.001, min(rt.cfg.timeout_s, deadline - self.clock.monotonic()))

    def health_timeout(self, rt: ProviderRuntime) -> float:
        return min(self.policy.probe_timeout_s, rt.cfg.timeout_s)
