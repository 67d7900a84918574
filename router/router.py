"""SmartModelRouter: one ``complete()`` over many providers, hardened per ADR-002.

Per request: plan the chain (profile, then the request's tier, then lower
tiers), order each group by health and capacity, and walk it. A provider is
passed over — at once, without waiting — when it is misconfigured, OPEN,
HALF_OPEN with its probe already out, its rate-limit bucket would make the
request wait, its bulkhead is full, or adaptive throttling rejects locally.
A HALF_OPEN provider's probe is the request itself, preceded by the
provider's cheap health check where it has one, both under one lease: only
the real answer closes the breaker. A model that answers 4xx or invalid
output to many different requests is passed over the same way
(router/model_health.py). Each provider is called at most once per request and at
most ``max_attempts`` remote calls are made in all: there is one flat loop
and no nested retry anywhere, so retries cannot multiply. When every
candidate is blocked only by capacity, the request waits once, bounded, for a
slot or a bucket. Whatever remains is answered by the built-in provider,
``degraded=True`` when remote providers were in the chain.

Under load (more than half the providers OPEN) low-priority requests go
straight to the built-in provider; medium ones reach the remaining providers
through a gate of ``shed_medium_concurrency`` turns — or any free bulkhead slot
of a healthy provider — waiting in a bounded queue (``shed_queue_size``
waiters, ``shed_queue_wait_s`` each) and otherwise getting the built-in
provider; high ones are served as usual.

Every call settles what it holds — its token reservation, throttle ticket,
bulkhead slot and probe leases — by its outcome, or releases it unjudged when
cancelled or cut short by the caller's deadline. The admission and settling
steps (``_admit``, ``_record_answer``, ``_record_failure``, ``_release``) are
separate from the call itself so another entry point (streaming) reuses them. The healthy
providers left thus take the high-priority traffic plus a trickle, not the
whole load of the OPEN ones (the cascade ADR-002 §A warns about).

The router lives on one event loop. ``snapshot()`` may be called from any
thread; subscriber callbacks run on the router's loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from router.breaker import ProbeLease, Transition
from router.buckets import Reservation
from router.bulkhead import BulkheadBoard
from router.capabilities import StructuredCapabilities
from router.clock import Clock, SystemClock
from router.config import ProfileConfig, RouterConfig
from router.errors import (
    TRAITS,
    BuiltinHandlerError,
    ErrorClass,
    NoHandlerError,
    ProviderCallError,
    RouterClosedError,
)
from router.local import (
    BUILTIN_KIND,
    BUILTIN_MODEL,
    BUILTIN_NAME,
    BuiltinProvider,
    TaskHandlerRegistry,
)
from router.metrics import ProviderMetrics, TotalsCounter
from router.model_health import request_fingerprint
from router.models import (
    Attempt,
    BreakerState,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ContextLimit,
    ProviderSnapshot,
    RouterTotals,
    Usage,
)
from router.providers.base import Provider, ProviderReply, spec_from_request
from router.providers.http import HttpProvider
from router.publisher import SnapshotPublisher, Subscriber
from router.runtime import ErrorNote, ProviderRuntime
from router.selection import Candidate, health_scores, order_group, plan_chain
from router.shedding import LoadShedder
from router.stats import (
    STATS_FILENAME,
    CallRecord,
    ProviderStatsStore,
    StatsRecorder,
    StatsStore,
)
from router.streaming import StreamSink, streaming_to
from router.throttle import ThrottleTicket
from router.truncation import more_room
from router.wire import (
    context_window_problem,
    encode_inputs,
    estimate_tokens,
    parse_structured,
    request_chars,
    wire_messages,
)

log = logging.getLogger(__name__)


_NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class _Skip:
    detail: str
    # set when only capacity stood in the way: seconds until a bucket has room, or ``math.inf``
    # for a full bulkhead (a slot frees whenever a call ends: wait for that, not for a time)
    capacity_eta: float | None = None


@dataclass(frozen=True, slots=True)
class _Admitted:
    lease: ProbeLease | None  # the provider breaker's probe lease, when this call probes it
    model_lease: ProbeLease | None  # the model breaker's, when this call probes the model
    reservation: Reservation


@dataclass(slots=True)
class _Held:
    """What one attempt holds until it is settled (by an outcome) or released (cancelled)."""

    lease: ProbeLease | None
    model_lease: ProbeLease | None
    reservation: Reservation
    ticket: ThrottleTicket | None = None
    settled: bool = False


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    kind: str
    ok: bool
    latency_s: float | None
    detail: str
    error_class: str | None = None


class SmartModelRouter:
    NOTIFY_INTERVAL_S = 0.05

    def __init__(
        self,
        config: RouterConfig,
        *,
        providers: Mapping[str, Provider],
        task_handlers: TaskHandlerRegistry,
        clock: Clock | None = None,
        stats: ProviderStatsStore | None = None,
        rng: random.Random | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.config = config
        self.policy = config.policy
        self.clock: Clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._board = BulkheadBoard()
        self._runtimes: list[ProviderRuntime] = []
        for cfg in config.enabled_providers():
            if cfg.name not in providers:
                raise ValueError(f"no provider object for configured provider {cfg.name!r}")
            self._runtimes.append(
                ProviderRuntime(
                    cfg,
                    providers[cfg.name],
                    self.policy,
                    self.clock,
                    self._board,
                    self._rng,
                    self._on_transition,
                )
            )
        self.builtin = BuiltinProvider(
            task_handlers,
            concurrency=self.policy.builtin_concurrency,
            in_thread=self.policy.builtin_in_thread,
        )
        self._builtin_metrics = ProviderMetrics(self.clock, recency_tau_s=self.policy.recency_tau_s)
        self._totals = TotalsCounter()
        self._publisher = SnapshotPublisher(
            self._snapshot_by_name, self.NOTIFY_INTERVAL_S, self.clock.sleep
        )
        self._shedder = LoadShedder(
            self.clock,
            threshold=self.policy.shed_threshold,
            concurrency=self.policy.shed_medium_concurrency,
            queue_size=self.policy.shed_queue_size,
            queue_wait_s=self.policy.shed_queue_wait_s,
        )
        self._by_name = {rt.name: rt for rt in self._runtimes}
        self._plans: dict[tuple[int, str | None], list[list[Candidate]]] = {}
        self._client = client
        self._stats = stats
        self._recorder = StatsRecorder(stats) if stats is not None else None
        self._last_flush = time.monotonic()
        self._flush_tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._wake_tasks: dict[str, asyncio.Task[None]] = {}
        self._sync_task: asyncio.Task[None] | None = None
        self._sync_warned = False
        self.shared_state_syncs = 0  # polls of the stats file done (tests wait on it)
        self._closed = False
        self._warned_profiles: set[str] = set()
        if stats is not None:
            now_wall = self.clock.wall()
            stored = stats.load()
            for rt in self._runtimes:
                if rt.name in stored:
                    rt.restore(stored[rt.name], now_wall)
            if BUILTIN_NAME in stored:
                builtin = stored[BUILTIN_NAME]
                self._builtin_metrics.seed(
                    builtin.recent,
                    (builtin.totals.requests, builtin.totals.successes, builtin.totals.failures),
                    fallbacks=builtin.totals.fallbacks,
                )

    # --- public API -------------------------------------------------------------------

    async def complete(self, req: ChatRequest) -> ChatResponse:
        if self._closed:
            raise RouterClosedError()
        self._bind_loop()
        start = self.clock.monotonic()
        attempts: list[Attempt] = []
        groups = self._plan(req, attempts)
        if groups:
            admission = await self._shedder.admit(
                req.priority, *self._open_share(), self._healthy_free_slots, self._board.waiter
            )
            if admission.note is not None:
                attempts.append(
                    Attempt(provider="router", outcome="skipped", detail=admission.note)
                )
            try:
                response = (
                    await self._try_remote(req, groups, attempts, start)
                    if admission.remote
                    else None
                )
            finally:
                if admission.gated:
                    self._shedder.release()
            if response is not None:
                return self._finish(response)
        return self._finish(await self._answer_builtin(req, bool(groups), attempts, start))

    def totals(self) -> RouterTotals:
        """Answers since this router started, by kind, with tokens and cost (a run's summary)."""
        return self._totals.totals()

    def _finish(self, response: ChatResponse) -> ChatResponse:
        self._totals.record(response, BUILTIN_NAME)
        self._maybe_flush()
        return response

    async def stream(self, req: ChatRequest, sink: StreamSink) -> ChatResponse:
        """``complete`` with the answer streamed: each provider called streams in its API's format
        and hands partial text to ``sink`` (see :mod:`router.streaming`); the chain, breakers,
        buckets and fail-over are those of ``complete``. The returned response is the answer."""
        with streaming_to(sink):
            return await self.complete(req)

    def snapshot(self) -> list[ProviderSnapshot]:
        scores = health_scores(self._runtimes)
        snaps = [rt.snapshot(scores[rt.name], rt.provider.key_problem()) for rt in self._runtimes]
        snaps.append(self._builtin_snapshot())
        return snaps

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with a provider's snapshot whenever it changes; returns the unsubscribe function.

        Breaker transitions arrive at once, other changes within ``NOTIFY_INTERVAL_S``; callbacks run on
        the router's loop thread (a UI on another thread must hand them over, e.g. ``call_from_thread``).
        """
        return self._publisher.subscribe(callback)

    async def check_health(self) -> list[HealthCheck]:
        """Probe every provider's health endpoint now, outside the breakers (``workbench providers check``).

        Never raises for a provider: whatever goes wrong becomes that provider's failed check.
        """
        return list(await asyncio.gather(*(self._check_one(rt) for rt in self._runtimes)))

    async def sync_shared_state(self) -> None:
        """Write this process's pending stats, then adopt trips other processes wrote to the file.

        The router does this every ``shared_state_poll_s`` on its own; a trip anywhere thus
        reaches every process sharing the stats file within about a second.
        """
        if self._stats is None:
            return
        await self.flush_stats()
        try:
            rows = await asyncio.to_thread(self._stats.load_breakers)
        except self._stats.failures as exc:
            if not self._sync_warned:
                self._sync_warned = True
                log.warning("provider stats could not be read (%s)", type(exc).__name__)
            return
        now_wall = self.clock.wall()
        for row in rows:
            rt = self._by_name.get(row.provider)
            if rt is None or row.state != BreakerState.OPEN.value or row.changed_wall is None:
                continue
            remaining = row.cooldown_remaining_s - max(0.0, now_wall - row.saved_wall)
            rt.breaker.adopt_trip(
                remaining, row.consecutive_trips, row.open_reason, row.changed_wall
            )
        self.shared_state_syncs += 1

    async def _sync_loop(self) -> None:
        while not self._closed:
            await self.clock.sleep(self.policy.shared_state_poll_s)
            await self.sync_shared_state()

    async def flush_stats(self) -> None:
        """Write buffered calls and changed breaker rows now (rows this process never changed are left alone,
        so a process that merely looked does not overwrite another's breaker state)."""
        if self._recorder is not None:
            await asyncio.to_thread(self._recorder.flush)
            self._last_flush = time.monotonic()

    async def wait_for_writes(self) -> None:
        """Wait for the stats writes already started (a trip's is started when it happens)."""
        while self._flush_tasks:
            await asyncio.gather(*self._flush_tasks, return_exceptions=True)

    async def aclose(self, *, flush: bool = True) -> None:
        """Stop wake-up timers, write pending stats (unless ``flush=False``), close the client and the store."""
        if self._closed:
            return
        self._closed = True
        for task in self._wake_tasks.values():
            task.cancel()
        self._wake_tasks.clear()
        if self._sync_task is not None:
            self._sync_task.cancel()
            await asyncio.gather(self._sync_task, return_exceptions=True)
        self._publisher.flush()
        await self.wait_for_writes()
        if flush:
            await self.flush_stats()
        if self._client is not None:
            await self._client.aclose()
        if self._stats is not None:
            self._stats.close()

    # --- planning and load shedding ----------------------------------------------------------

    def _plan(self, req: ChatRequest, attempts: list[Attempt]) -> list[list[Candidate]]:
        profile: ProfileConfig | None = None
        if req.profile is not None:
            profile = self.config.profiles.get(req.profile)
            if profile is None:
                attempts.append(
                    Attempt(
                        provider="router",
                        outcome="skipped",
                        detail=f"unknown profile {req.profile!r}; using tier {req.tier}",
                    )
                )
                if req.profile not in self._warned_profiles:
                    self._warned_profiles.add(req.profile)
                    log.warning(
                        "unknown model profile %r: add it under router.profiles", req.profile
                    )
        key = (req.tier, req.profile if profile is not None else None)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = plan_chain(self._runtimes, req.tier, profile)
        return plan

    def context_limit(self, tier: int = 1, profile: str | None = None) -> ContextLimit | None:
        """The tightest known context window among the remote models a request of ``tier`` (or
        ``profile``) may be sent to, so a caller can fit its prompt to every one of them; None
        when none of them has a known window (the built-in provider has none)."""
        known = self.config.profiles.get(profile) if profile is not None else None
        limits = [
            limit
            for group in plan_chain(self._runtimes, tier, known)
            for cand in group
            if (limit := cand.runtime.cfg.context_limit(cand.model)) is not None
        ]
        return min(limits, key=lambda limit: limit.prompt_chars(0), default=None)

    def more_room(self, req: ChatRequest, response: ChatResponse) -> ChatRequest | None:
        """``req`` asked again with more room when ``response`` was cut at its output limit
        (router/truncation.py), within the context window of the models ``req`` may reach."""
        window = self.context_limit(req.tier, req.profile)
        return more_room(req, response, window, self.policy.default_output_tokens)

    def _healthy_free_slots(self) -> int:
        return sum(
            rt.bulkhead.free
            for rt in self._runtimes
            if not rt.misconfigured and rt.breaker.state is BreakerState.CLOSED
        )

    def _open_share(self) -> tuple[int, int]:
        opened = sum(1 for rt in self._runtimes if rt.breaker.state is BreakerState.OPEN)
        return opened, len(self._runtimes)

    # --- the remote chain ------------------------------------------------------------------------

    async def _try_remote(
        self, req: ChatRequest, groups: list[list[Candidate]], attempts: list[Attempt], start: float
    ) -> ChatResponse | None:
        policy = self.policy
        deadline = start + (req.timeout_s or policy.request_timeout_s)
        inputs_json = encode_inputs(
            req
        )  # once per request: the estimate and the wire messages share it
        estimate = estimate_tokens(req, policy.default_output_tokens, inputs_json)
        chars = request_chars(req, inputs_json)
        tried: set[str] = set()
        calls = 0
        wait_until: float | None = None  # capacity waits share one bounded budget per request
        wire: list[ChatMessage] | None = None
        while True:
            capacity_eta: float | None = None
            passed: set[str] = set()
            for group in groups:
                for cand in order_group(group, self._rng):
                    rt = cand.runtime
                    if rt.name in tried or rt.name in passed:
                        continue
                    if calls >= policy.max_attempts:
                        attempts.append(
                            Attempt(
                                provider="router",
                                outcome="skipped",
                                detail=f"{policy.max_attempts} remote attempts made; no more",
                            )
                        )
                        return None
                    if self.clock.monotonic() >= deadline:
                        attempts.append(
                            Attempt(
                                provider="router",
                                outcome="skipped",
                                detail="request deadline passed",
                            )
                        )
                        return None
                    too_long = context_window_problem(
                        rt.cfg.context_limit(cand.model),
                        req,
                        policy.default_output_tokens,
                        chars,
                    )
                    admission = (
                        _Skip(too_long) if too_long else self._admit(rt, cand, estimate, deadline)
                    )
                    if isinstance(admission, _Skip):
                        passed.add(rt.name)
                        if admission.capacity_eta is not None:
                            capacity_eta = (
                                admission.capacity_eta
                                if capacity_eta is None
                                else min(capacity_eta, admission.capacity_eta)
                            )
                        attempts.append(
                            Attempt(
                                provider=rt.name,
                                model=cand.model,
                                tier=cand.tier,
                                outcome="skipped",
                                detail=admission.detail,
                            )
                        )
                        continue
                    tried.add(rt.name)
                    if wire is None:
                        wire = wire_messages(req, inputs_json)
                    response, called = await self._attempt(
                        req, cand, admission, wire, deadline, attempts, start
                    )
                    calls += called
                    if response is not None:
                        return response
            now = self.clock.monotonic()
            if capacity_eta is None or calls >= policy.max_attempts:
                return None
            if wait_until is None:
                wait_until = min(now + policy.capacity_wait_s, deadline)
            remaining = wait_until - now
            if remaining <= 0 or (math.isfinite(capacity_eta) and capacity_eta > remaining):
                attempts.append(
                    Attempt(
                        provider="router",
                        outcome="skipped",
                        detail="no capacity freed within the wait budget",
                    )
                )
                return None
            # full jitter over one more eta, so requests waiting on one bucket do not all wake at once
            delay = min(remaining, capacity_eta * (1.0 + self._rng.random()))  # inf: a slot event
            await self._wait_event_or_timeout(self._board.waiter(), delay)

    def _admit(
        self, rt: ProviderRuntime, cand: Candidate, estimate: int, deadline: float
    ) -> _Skip | _Admitted:
        """Admission checks with no await in between, so they are atomic on the loop."""
        breaker = rt.breaker
        state = breaker.state
        if rt.misconfigured and state is BreakerState.OPEN:
            return _Skip(f"misconfigured: {rt.misconfigured_reason}")
        key_problem = rt.provider.key_problem()
        if key_problem is not None:
            return _Skip(f"misconfigured: {key_problem}")
        if state is BreakerState.OPEN:
            return _Skip(f"OPEN, next probe in {breaker.cooldown_remaining():.1f}s")
        probing = state is BreakerState.HALF_OPEN
        if probing and not breaker.can_attempt():
            return _Skip("HALF_OPEN with its probe in flight")
        model_probe = None  # the model's breaker when this call would probe it
        model_breaker = rt.models.get(cand.model)  # None: the model never answered badly
        if model_breaker is not None:
            model_state = model_breaker.state
            if model_state is BreakerState.OPEN:
                return _Skip(
                    f"model {cand.model} OPEN (bad answers), next probe in "
                    f"{model_breaker.cooldown_remaining():.1f}s"
                )
            if model_state is BreakerState.HALF_OPEN:
                if not model_breaker.can_attempt():
                    return _Skip(f"model {cand.model} HALF_OPEN with its probe in flight")
                model_probe = model_breaker
        eta = rt.buckets.eta(estimate)
        if eta > 0:
            return _Skip(f"rate-limit bucket has room in {eta:.2f}s", capacity_eta=eta)
        if rt.bulkhead.free <= 0:
            return _Skip(
                f"bulkhead full ({rt.bulkhead.size} in flight)",
                capacity_eta=math.inf,
            )
        if not probing and model_probe is None and rt.throttle.should_reject():
            return _Skip(f"throttled locally (p={rt.throttle.reject_probability():.2f})")
        lease = model_lease = None
        if probing or model_probe is not None:
            # a lease outlives its probe: the health check (if any) plus the real call
            probe_s = self._call_timeout(rt, deadline)
            if probing and rt.provider.has_health_probe:
                probe_s += self._health_timeout(rt)
            if probing:
                lease = breaker.acquire_probe(probe_s)
                if lease is None:
                    return _Skip("HALF_OPEN with its probe in flight")
        if model_probe is not None:
            model_lease = model_probe.acquire_probe(probe_s)
            if model_lease is None:
                if lease is not None:
                    breaker.release_probe(lease)
                return _Skip(f"model {cand.model} HALF_OPEN with its probe in flight")
        reservation = rt.buckets.try_reserve(estimate)
        if reservation is None:
            if lease is not None:
                breaker.release_probe(lease)
            if model_probe is not None and model_lease is not None:
                model_probe.release_probe(model_lease)
            return _Skip("rate-limit bucket full", capacity_eta=rt.buckets.eta(estimate))
        rt.bulkhead.try_acquire()
        return _Admitted(lease, model_lease, reservation)

    def _call_timeout(self, rt: ProviderRuntime, deadline: float) -> float:
        return max(0.001, min(rt.cfg.timeout_s, deadline - self.clock.monotonic()))

    def _health_timeout(self, rt: ProviderRuntime) -> float:
        return min(self.policy.probe_timeout_s, rt.cfg.timeout_s)

    async def _attempt(
        self,
        req: ChatRequest,
        cand: Candidate,
        admitted: _Admitted,
        wire: list[ChatMessage],
        deadline: float,
        attempts: list[Attempt],
        start: float,
    ) -> tuple[ChatResponse | None, int]:
        """One call to one provider; whatever happens — even cancellation — settles what it holds."""
        rt = cand.runtime
        held = _Held(admitted.lease, admitted.model_lease, admitted.reservation)
        self._notify(rt)
        try:
            if held.lease is not None and rt.provider.has_health_probe:
                if not await self._probe(rt, held.lease, attempts):
                    held.lease = None  # the failed probe settled it
                    self._release(rt, cand.model, held)
                    return None, 0
                # the health check passed; the lease stays with the real call, which decides
            spec = spec_from_request(
                req,
                cand.model,
                wire,
                self.policy.default_output_tokens,
                cand.temperature,
                cand.max_tokens,
            )
            timeout = self._call_timeout(rt, deadline)
            cut_by_deadline = timeout < rt.cfg.timeout_s
            held.ticket = rt.throttle.begin()
            began = self.clock.monotonic()
            failure: ProviderCallError | None = None
            used = _NO_USAGE
            try:
                reply = await rt.provider.chat(spec, timeout)
            except ProviderCallError as exc:
                failure = exc
            except (
                Exception
            ) as exc:  # a provider bug must not escape as anything but a failed attempt
                failure = ProviderCallError(
                    ErrorClass.BAD_RESPONSE, f"{type(exc).__name__} in the provider"
                )
            latency = self.clock.monotonic() - began
            parsed = None
            if failure is None and req.response_schema is not None:
                try:
                    parsed = parse_structured(reply.content, req.response_schema)
                except ProviderCallError as exc:
                    # an answer cut at the caller's output limit is flagged for the caller to act
                    # on (ask again with more room), not held against the provider
                    if not reply.truncated:
                        used = reply.usage
                        failure = ProviderCallError(
                            exc.error_class,
                            exc.detail,
                            status=reply.status,
                            rate_limits=reply.rate_limits,
                        )
            if failure is not None:
                held.settled = True
                cost = self._record_failure(
                    req, cand, failure, held, latency, used, cut_by_deadline=cut_by_deadline
                )
                attempts.append(
                    Attempt(
                        provider=rt.name,
                        model=cand.model,
                        tier=cand.tier,
                        outcome="failed",
                        error_class=failure.error_class.value,
                        status=failure.status,
                        latency_s=latency,
                        cost_usd=cost,
                        detail=failure.detail,
                    )
                )
                return None, 1
            held.settled = True
            cost = self._record_answer(cand, held, reply, latency)
            attempts.append(
                Attempt(
                    provider=rt.name,
                    model=cand.model,
                    tier=cand.tier,
                    outcome="ok",
                    status=reply.status,
                    latency_s=latency,
                    cost_usd=cost,
                )
            )
            return ChatResponse(
                content=reply.content,
                parsed=parsed,
                provider=rt.name,
                model=cand.model,
                tier=cand.tier,
                usage=reply.usage,
                latency_s=self.clock.monotonic() - start,
                degraded=cand.tier < req.tier,
                cost_usd=round(sum(a.cost_usd for a in attempts), 9),
                attempts=attempts,
                truncated=reply.truncated,
            ), 1
        except asyncio.CancelledError:
            if not held.settled:
                self._release(rt, cand.model, held)
            raise
        finally:
            rt.bulkhead.release()
            self._notify(rt)

    def _release(self, rt: ProviderRuntime, model: str, held: _Held) -> None:
        """Give back what an attempt held without an outcome: no health verdict either way."""
        rt.buckets.reconcile(held.reservation, 0)
        if held.ticket is not None:
            rt.throttle.cancel(held.ticket)
        if held.lease is not None:
            rt.breaker.release_probe(held.lease)
        if held.model_lease is not None:
            rt.models.breaker(model).release_probe(held.model_lease)

    async def _probe(self, rt: ProviderRuntime, lease: ProbeLease, attempts: list[Attempt]) -> bool:
        """The cheap health check before a probing request's real call; a failure re-opens at once."""
        began = self.clock.monotonic()
        try:
            info = await rt.provider.health(self._health_timeout(rt))
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
                rt.misconfigured_reason = self._misconfigured_reason(rt, failure)
            elif not TRAITS[error_class].counts_for_breaker:
                error_class = (
                    ErrorClass.SERVER
                )  # a health endpoint that does not answer 2xx is not healthy
            rt.last_error = ErrorNote(
                failure.error_class.value, failure.status, failure.retry_after_s
            )
            rt.breaker.record_failure(error_class, failure.retry_after_s, lease)
            self._persist_breaker(rt)
            attempts.append(
                Attempt(
                    provider=rt.name,
                    outcome="probe_failed",
                    error_class=failure.error_class.value,
                    status=failure.status,
                    latency_s=self.clock.monotonic() - began,
                    detail=f"health probe: {failure.detail}",
                )
            )
            return False
        rt.buckets.apply(info)
        attempts.append(
            Attempt(
                provider=rt.name,
                outcome="probe_ok",
                latency_s=self.clock.monotonic() - began,
                detail="health probe",
            )
        )
        return True

    # --- bookkeeping -------------------------------------------------------------------------------

    def _record_answer(
        self, cand: Candidate, held: _Held, reply: ProviderReply, latency: float
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

    def _record_failure(
        self,
        req: ChatRequest,
        cand: Candidate,
        exc: ProviderCallError,
        held: _Held,
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
            rt.misconfigured_reason = self._misconfigured_reason(rt, exc)
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
        self._persist_breaker(rt)
        return cost

    @staticmethod
    def _misconfigured_reason(rt: ProviderRuntime, exc: ProviderCallError) -> str:
        where = f"the key in ${rt.cfg.api_key_env}, " if rt.cfg.api_key_env else ""
        return f"{exc.detail}: check {where}the model names and base_url"

    def _persist_breaker(self, rt: ProviderRuntime) -> None:
        if self._recorder is not None:
            self._recorder.set_breaker(rt.breaker_record(self.clock.wall()))

    def _maybe_flush(self, *, urgent: bool = False) -> None:
        """Write pending stats in a worker thread: at most every ``stats_flush_s``, or at once when ``urgent``.

        A trip is urgent: written when it happens, every process sharing the file adopts it at its
        next poll. Concurrent flushes are safe, the recorder serialises them.
        """
        if self._recorder is None or self._recorder.pending == 0:
            return
        if not urgent and (
            self._flush_tasks or time.monotonic() - self._last_flush < self.policy.stats_flush_s
        ):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet: the next poll or ``aclose`` writes it
            return
        self._last_flush = time.monotonic()
        task = loop.create_task(asyncio.to_thread(self._recorder.flush))
        self._flush_tasks.add(task)
        task.add_done_callback(self._flush_tasks.discard)

    async def _answer_builtin(
        self, req: ChatRequest, had_remote: bool, attempts: list[Attempt], start: float
    ) -> ChatResponse:
        if not self.builtin.can_answer(req.task):
            raise NoHandlerError(
                req.task, sum(1 for a in attempts if a.provider not in ("router",))
            )
        began = self.clock.monotonic()
        try:
            content, parsed = await self.builtin.answer(req)
        except BuiltinHandlerError:
            self._record_builtin(False, None)
            raise
        latency = self.clock.monotonic() - began
        self._record_builtin(True, latency, fallback=had_remote)
        attempts.append(
            Attempt(
                provider=BUILTIN_NAME, model=BUILTIN_MODEL, tier=0, outcome="ok", latency_s=latency
            )
        )
        return ChatResponse(
            content=content,
            parsed=parsed,
            provider=BUILTIN_NAME,
            model=BUILTIN_MODEL,
            tier=0,
            usage=Usage(),
            latency_s=self.clock.monotonic() - start,
            degraded=had_remote,
            fallback=had_remote,
            attempts=attempts,
        )

    def _record_builtin(self, ok: bool, latency: float | None, *, fallback: bool = False) -> None:
        self._builtin_metrics.record(ok, latency)
        self._builtin_metrics.fallback_total += fallback
        if self._recorder is not None:
            self._recorder.add_call(
                CallRecord(
                    BUILTIN_NAME,
                    ok,
                    latency,
                    None if ok else "handler_error",
                    0,
                    0,
                    self.clock.wall(),
                    fallback=fallback,
                )
            )
        self._notify(None)

    def _builtin_snapshot(self) -> ProviderSnapshot:
        metrics = self._builtin_metrics
        latency = metrics.latency_summary()
        return ProviderSnapshot(
            name=BUILTIN_NAME,
            kind=BUILTIN_KIND,
            state=BreakerState.CLOSED,
            success_rate=metrics.success_rate(),
            health_score=round(metrics.health_score(), 4),
            ema_latency_s=latency.ema,
            p50_latency_s=latency.p50,
            p95_latency_s=latency.p95,
            p99_latency_s=latency.p99,
            recent_latencies_s=latency.recent,
            in_flight=self.builtin.in_flight,
            bulkhead_size=self.builtin.concurrency,
            requests_total=metrics.requests_total,
            successes_total=metrics.successes_total,
            failures_total=metrics.failures_total,
            fallback_total=metrics.fallback_total,
            models={0: BUILTIN_MODEL},
        )

    # --- events ---------------------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        for rt in self._runtimes:  # breakers restored OPEN from the stats store need their wake-up
            if rt.breaker.state is BreakerState.OPEN:
                self._schedule_wake(rt)
        if self._stats is not None:
            self._sync_task = self._loop.create_task(self._sync_loop())

    def _on_transition(self, rt: ProviderRuntime, transition: Transition) -> None:
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._handle_transition, rt, transition)
            return
        self._handle_transition(rt, transition)

    def _handle_transition(self, rt: ProviderRuntime, transition: Transition) -> None:
        log.info(
            "provider %s: %s -> %s (%s)",
            rt.name,
            transition.old.value,
            transition.new.value,
            transition.reason,
        )
        if transition.model is None:  # the provider's own breaker, not one of its models'
            if transition.new is BreakerState.CLOSED:
                rt.misconfigured_reason = None
            if transition.new is BreakerState.OPEN:
                self._schedule_wake(rt)
        self._persist_breaker(rt)
        self._maybe_flush(urgent=transition.model is None and transition.new is BreakerState.OPEN)
        self._notify(rt, urgent=True)

    def _schedule_wake(self, rt: ProviderRuntime) -> None:
        """Notice OPEN → HALF_OPEN when the cooldown ends, even if no request touches the provider."""
        if self._loop is None or self._closed:
            return
        previous = self._wake_tasks.pop(rt.name, None)
        if previous is not None:
            previous.cancel()
        self._wake_tasks[rt.name] = self._loop.create_task(self._wake(rt))

    async def _wake(self, rt: ProviderRuntime) -> None:
        remaining = rt.breaker.cooldown_remaining()
        while remaining > 0:
            await self.clock.sleep(remaining)
            remaining = rt.breaker.cooldown_remaining()
        _ = rt.breaker.state  # the read performs the transition and emits it

    async def _wait_event_or_timeout(self, event: asyncio.Event, timeout: float) -> None:
        waiter = asyncio.ensure_future(event.wait())
        sleeper = asyncio.ensure_future(self.clock.sleep(timeout))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            sleeper.cancel()

    def _notify(self, rt: ProviderRuntime | None, *, urgent: bool = False) -> None:
        """Tell subscribers a provider changed (``None``: the built-in one)."""
        self._publisher.changed(BUILTIN_NAME if rt is None else rt.name, self._loop, urgent=urgent)

    def _snapshot_by_name(self, name: str) -> ProviderSnapshot:
        rt = self._by_name.get(name)
        if rt is None:
            return self._builtin_snapshot()
        scores = health_scores(self._runtimes)
        return rt.snapshot(scores[rt.name], rt.provider.key_problem())

    # --- health checks ----------------------------------------------------------------------------------

    async def _check_one(self, rt: ProviderRuntime) -> HealthCheck:
        problem = rt.provider.key_problem()
        if problem is not None:
            return HealthCheck(
                rt.name, rt.cfg.kind, False, None, f"misconfigured: {problem}", "permanent"
            )
        began = time.perf_counter()
        try:
            await rt.provider.health(self._health_timeout(rt))
        except Exception as exc:  # one line per provider, whatever failed — never a traceback
            if not isinstance(exc, ProviderCallError):
                exc = ProviderCallError(
                    ErrorClass.CONNECTION, f"{type(exc).__name__}: check the base_url"
                )
            detail = exc.detail
            if exc.error_class is ErrorClass.PERMANENT:
                detail = f"misconfigured: {self._misconfigured_reason(rt, exc)}"
            return HealthCheck(
                rt.name,
                rt.cfg.kind,
                False,
                time.perf_counter() - began,
                detail,
                exc.error_class.value,
            )
        return HealthCheck(rt.name, rt.cfg.kind, True, time.perf_counter() - began, "healthy")


def _client(transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """One shared client: no retries, HTTP(S)_PROXY/NO_PROXY honoured, loopback always direct.

    The default transport is left to httpx on purpose: passing one makes httpx ignore the
    proxy variables, and its default already makes no retries.
    """
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    if transport is not None:
        return httpx.AsyncClient(transport=transport, limits=limits, follow_redirects=False)
    direct = httpx.AsyncHTTPTransport(retries=0, limits=limits)
    return httpx.AsyncClient(
        mounts={"all://127.0.0.1": direct, "all://localhost": direct, "all://[::1]": direct},
        limits=limits,
        follow_redirects=False,
        trust_env=True,
    )


def build_router(
    config: RouterConfig,
    *,
    stats_path: Path | None,
    stats_database: str | None = None,
    task_handlers: TaskHandlerRegistry,
    clock: Clock | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    rng: random.Random | None = None,
    environ: Mapping[str, str] | None = None,
) -> SmartModelRouter:
    """The router for ``config``: HTTP providers over one shared client, stats in ``stats_path``.

    ``stats_path`` may be the SQLite file (a name with a suffix) or the workspace directory,
    existing or not (the file is then ``provider_stats.sqlite3`` in it); ``None`` keeps
    statistics in memory only. ``stats_database`` (a PostgreSQL address) keeps them in that
    database instead, shared by every process using it; provider capabilities stay in
    ``stats_path``'s folder.
    """
    clock = clock or SystemClock()
    client = _client(transport)
    stats: ProviderStatsStore | None = None
    path: Path | None = None
    if stats_path is not None:
        path = Path(stats_path)
        if path.is_dir() or not path.suffix:  # a workspace directory, existing or not yet created
            path = path / STATS_FILENAME
    if stats_database is not None:
        from router.stats_postgres import PostgresStatsStore

        stats = PostgresStatsStore(stats_database)
    elif path is not None:
        stats = StatsStore(path)
    capabilities = StructuredCapabilities(path)
    providers: dict[str, Provider] = {
        cfg.name: HttpProvider(cfg, client, clock, environ, capabilities=capabilities)
        for cfg in config.enabled_providers()
    }
    return SmartModelRouter(
        config,
        providers=providers,
        task_handlers=task_handlers,
        clock=clock,
        stats=stats,
        rng=rng,
        client=client,
    )
