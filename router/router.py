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
steps (``_admit`` here; ``record_answer``, ``record_failure``, ``release`` in router/settle.py) are
separate from the call itself so another entry point (streaming) reuses them. The healthy
providers left thus take the high-priority traffic plus a trickle, not the
whole load of the OPEN ones (the cascade ADR-002 §A warns about).

The router lives on one event loop. ``snapshot()`` may be called from any
thread; subscriber callbacks run on the router's loop thread.

This module is the request path. What an outcome does to its provider is
:mod:`router.settle`; the built-in provider's part is :class:`router.local.BuiltinFallback`;
the stats file's writes and polls are :class:`router.stats.SharedStats`; change notices and
wake-ups are :class:`router.publisher.ChangeNotices`; on-demand health checks are
:mod:`router.health_check`; building a router from config is :mod:`router.build`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable, Mapping

import httpx

from router.admission import Admission, Admitted, Skip
from router.breaker import Transition
from router.bulkhead import BulkheadBoard
from router.clock import Clock, SystemClock, wait_event_or_timeout
from router.config import ProfileConfig, RouterConfig
from router.errors import ErrorClass, ProviderCallError, RouterClosedError
from router.health_check import HealthCheck, check_health, probe_before_call
from router.local import BUILTIN_NAME, BuiltinFallback, BuiltinProvider, TaskHandlerRegistry
from router.metrics import ProviderMetrics, TotalsCounter
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
from router.providers.base import Provider, spec_from_request
from router.publisher import ChangeNotices, SnapshotPublisher, Subscriber
from router.runtime import ProviderRuntime
from router.selection import Candidate, health_scores, order_group, plan_chain
from router.settle import Held, Settlement
from router.shared_probe import SharedProbe
from router.shedding import LoadShedder
from router.stats import ProviderStatsStore, SharedStats
from router.streaming import StreamSink, streaming_to
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
        self._admission = Admission(self.policy, self.clock)
        self._totals = TotalsCounter()
        self._publisher = SnapshotPublisher(
            self._snapshot_by_name, self.NOTIFY_INTERVAL_S, self.clock.sleep
        )
        self._notices = ChangeNotices(self._publisher, self.clock)
        self._wake_tasks = self._notices.wake_tasks
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
        self._shared = (
            SharedStats(
                stats,
                self.clock,
                {rt.name: rt.breaker for rt in self._runtimes},
                flush_s=self.policy.stats_flush_s,
                poll_s=self.policy.shared_state_poll_s,
            )
            if stats is not None
            else None
        )
        self._recorder = self._shared.recorder if self._shared is not None else None
        self._probe = (
            SharedProbe(self._shared.store, self.clock, self._shared.track)
            if self._shared is not None
            else None
        )
        self._settlement = Settlement(self.clock, self._recorder)
        self._builtin = BuiltinFallback(
            self.builtin,
            self.clock,
            self._builtin_metrics,
            self._recorder,
            lambda: self._notify(None),
        )
        self._closed = False
        self._warned_profiles: set[str] = set()
        if stats is not None:
            now_wall = self.clock.wall()
            stored = stats.load()
            for rt in self._runtimes:
                if rt.name in stored:
                    rt.restore(stored[rt.name], now_wall)
            if BUILTIN_NAME in stored:
                self._builtin.restore(stored[BUILTIN_NAME])

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
        return self._finish(await self._builtin.answer(req, bool(groups), attempts, start))

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
        snaps.append(self._builtin.snapshot())
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
        return await check_health(self._runtimes, self._admission.health_timeout)

    async def sync_shared_state(self) -> None:
        """Write this process's pending stats, then adopt trips other processes wrote to the file.

        The router does this every ``shared_state_poll_s`` on its own; a trip anywhere thus
        reaches every process sharing the stats file within about a second.
        """
        if self._shared is not None:
            await self._shared.sync_shared_state()

    @property
    def shared_state_syncs(self) -> int:
        """Polls of the stats file done (tests wait on it)."""
        return self._shared.syncs if self._shared is not None else 0

    async def flush_stats(self) -> None:
        """Write buffered calls and changed breaker rows now (rows this process never changed are left alone,
        so a process that merely looked does not overwrite another's breaker state)."""
        if self._shared is not None:
            await self._shared.flush()

    async def wait_for_writes(self) -> None:
        """Wait for the stats writes already started (a trip's is started when it happens)."""
        if self._shared is not None:
            await self._shared.wait_for_writes()

    async def aclose(self, *, flush: bool = True) -> None:
        """Stop wake-up timers, write pending stats (unless ``flush=False``), close the client and the store."""
        if self._closed:
            return
        self._closed = True
        self._notices.close()
        if self._shared is not None:
            await self._shared.stop()
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
                        Skip(too_long)
                        if too_long
                        else self._admission.admit(rt, cand, estimate, deadline)
                    )
                    if isinstance(admission, Skip):
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
            await wait_event_or_timeout(self.clock, self._board.waiter(), delay)

    async def _attempt(
        self,
        req: ChatRequest,
        cand: Candidate,
        admitted: Admitted,
        wire: list[ChatMessage],
        deadline: float,
        attempts: list[Attempt],
        start: float,
    ) -> tuple[ChatResponse | None, int]:
        """One call to one provider; whatever happens — even cancellation — settles what it holds."""
        rt = cand.runtime
        held = Held(admitted.lease, admitted.model_lease, admitted.reservation)
        self._notify(rt)
        probe = self._probe if held.lease is not None else None  # probes the whole store's
        claimed = False
        try:
            if probe is not None and held.lease is not None:
                claim = await probe.claim(rt, held.lease)
                claimed = claim.granted
                if not claimed:
                    held.settled = True
                    self._settlement.release(rt, cand.model, held)
                    probe.adopt(rt, claim.outcome)
                    attempts.append(
                        Attempt(
                            provider=rt.name,
                            model=cand.model,
                            tier=cand.tier,
                            outcome="skipped",
                            detail="HALF_OPEN with its probe in flight in another process",
                        )
                    )
                    return None, 0
            if held.lease is not None and rt.provider.has_health_probe:
                if not await probe_before_call(
                    rt,
                    held.lease,
                    attempts,
                    self._admission.health_timeout(rt),
                    self.clock,
                    self._settlement,
                ):
                    held.lease = None  # the failed probe settled it
                    self._settlement.release(rt, cand.model, held)
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
            timeout = self._admission.call_timeout(rt, deadline)
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
                cost = self._settlement.record_failure(
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
            cost = self._settlement.record_answer(cand, held, reply, latency)
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
                self._settlement.release(rt, cand.model, held)
            raise
        finally:
            rt.bulkhead.release()
            if probe is not None and claimed:
                probe.release(rt)  # after the outcome settled the breaker: shared with it
            self._notify(rt)

    # --- events ---------------------------------------------------------------------------------------

    def _maybe_flush(self, *, urgent: bool = False) -> None:
        if self._shared is not None:
            self._shared.maybe_flush(urgent=urgent)

    def _bind_loop(self) -> None:
        if self._notices.loop is not None:
            return
        loop = self._notices.bind()
        for rt in self._runtimes:  # breakers restored OPEN from the stats store need their wake-up
            if rt.breaker.state is BreakerState.OPEN:
                self._schedule_wake(rt)
        if self._shared is not None:
            self._shared.start(loop)

    def _on_transition(self, rt: ProviderRuntime, transition: Transition) -> None:
        self._notices.on_loop(self._handle_transition, rt, transition)

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
        self._settlement.persist_breaker(rt)
        # a trip is urgent: written when it happens, every process sharing the file adopts it
        self._maybe_flush(urgent=transition.model is None and transition.new is BreakerState.OPEN)
        self._notify(rt, urgent=True)

    def _schedule_wake(self, rt: ProviderRuntime) -> None:
        self._notices.schedule_wake(rt.name, rt.breaker)

    def _notify(self, rt: ProviderRuntime | None, *, urgent: bool = False) -> None:
        """Tell subscribers a provider changed (``None``: the built-in one)."""
        self._notices.notify(BUILTIN_NAME if rt is None else rt.name, urgent=urgent)

    def _snapshot_by_name(self, name: str) -> ProviderSnapshot:
        rt = self._by_name.get(name)
        if rt is None:
            return self._builtin.snapshot()
        scores = health_scores(self._runtimes)
        return rt.snapshot(scores[rt.name], rt.provider.key_problem())
