"""A provider's health endpoint: checked before a HALF_OPEN provider's probing request, and for
every provider on request, outside the breakers (``workbench providers check``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from router.breaker import ProbeLease
from router.clock import Clock
from router.errors import TRAITS, ErrorClass, ProviderCallError
from router.models import Attempt
from router.runtime import ErrorNote, ProviderRuntime
from router.settle import Settlement, misconfigured_reason


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    kind: str
    ok: bool
    latency_s: float | None
    detail: str
    error_class: str | None = None


async def check_health(
    runtimes: Sequence[ProviderRuntime], timeout_of: Callable[[ProviderRuntime], float]
) -> list[HealthCheck]:
    """Each provider's check, in order, all at once; ``timeout_of`` gives each its limit.

    Never raises for a provider: whatever goes wrong becomes that provider's failed check.
    """
    return list(await asyncio.gather(*(_check_one(rt, timeout_of(rt)) for rt in runtimes)))


async def _check_one(rt: ProviderRuntime, timeout_s: float) -> HealthCheck:
    problem = rt.provider.key_problem()
    if problem is not None:
        return HealthCheck(
            rt.name, rt.cfg.kind, False, None, f"misconfigured: {problem}", "permanent"
        )
    began = time.perf_counter()
    try:
        await rt.provider.health(timeout_s)
    except Exception as exc:  # one line per provider, whatever failed — never a traceback
        if not isinstance(exc, ProviderCallError):
            exc = ProviderCallError(
                ErrorClass.CONNECTION, f"{type(exc).__name__}: check the base_url"
            )
        detail = exc.detail
        if exc.error_class is ErrorClass.PERMANENT:
            detail = f"misconfigured: {misconfigured_reason(rt, exc)}"
        return HealthCheck(
            rt.name,
            rt.cfg.kind,
            False,
            time.perf_counter() - began,
            detail,
            exc.error_class.value,
        )
    return HealthCheck(rt.name, rt.cfg.kind, True, time.perf_counter() - began, "healthy")


async def probe_before_call(
    rt: ProviderRuntime,
    lease: ProbeLease,
    attempts: list[Attempt],
    timeout_s: float,
    clock: Clock,
    settlement: Settlement,
) -> bool:
    """The cheap health check before a probing request's real call; a failure re-opens at once."""
    began = clock.monotonic()
    try:
        info = await rt.provider.health(timeout_s)
    except Exception as exc:
        failure = (
            exc
            if isinstance(exc, ProviderCallError)
            else ProviderCallError(
                ErrorClass.BAD_RESPONSE, f"{type(exc).__name__} in the health probe"
            )
        )
        error_class = failure.error_class
        if error_class is ErrorClass.PERMANENT:
            rt.misconfigured_reason = misconfigured_reason(rt, failure)
        elif not TRAITS[error_class].counts_for_breaker:
            error_class = (
                ErrorClass.SERVER
            )  # a health endpoint that does not answer 2xx is not healthy
        rt.last_error = ErrorNote(failure.error_class.value, failure.status, failure.retry_after_s)
        rt.breaker.record_failure(error_class, failure.retry_after_s, lease)
        settlement.persist_breaker(rt)
        attempts.append(
            Attempt(
                provider=rt.name,
                outcome="probe_failed",
                error_class=failure.error_class.value,
                status=failure.status,
                latency_s=clock.monotonic() - began,
                detail=f"health probe: {failure.detail}",
            )
        )
        return False
    rt.buckets.apply(info)
    attempts.append(
        Attempt(
            provider=rt.name,
            outcome="probe_ok",
            latency_s=clock.monotonic() - began,
            detail="health probe",
        )
    )
    return True
