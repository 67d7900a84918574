"""One half-open probe for all the processes sharing the stats store, not one per process.

Every process's breaker reaches the end of its cooldown at about the same time once a trip is
shared (router/stats.py :class:`~router.stats.SharedStats`). Its local probe lease
(router/breaker.py) keeps it to one probe per process; this lease, a row per provider in the
stats store, keeps it to one probe in all: a process holding the local lease claims the shared
one before it sends anything (one conditional UPDATE, so exactly one claimant wins), with an
expiry of the local lease's length in wall time, so a process that dies holding it blocks
probing no longer than its own probe could have taken.

A claimant that loses sends nothing and falls back. When the winner's probe is settled it
releases the lease and writes the outcome into the same row — the breaker's state after the
probe, its cooldown and when it changed — and the next claim of any other process whose
breaker went HALF_OPEN before that is refused with the outcome, which it adopts: closed, or
open for what remains of the winner's cooldown. A probe released unjudged (cancelled, or an
answer that proves nothing) shares no outcome.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from router.breaker import ProbeLease
from router.clock import Clock
from router.models import BreakerState
from router.runtime import ProviderRuntime
from router.stats import ProbeClaim, ProbeOutcome, ProviderStatsStore


class SharedProbe:
    """This process's side of the shared probe lease; ``track`` keeps the release writes (so
    closing the router waits for them)."""

    def __init__(
        self,
        store: ProviderStatsStore,
        clock: Clock,
        track: Callable[[asyncio.Task[None]], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self._track = track
        self.holder = uuid.uuid4().hex  # one per router: two routers in one process are two
        self._held: set[str] = set()

    async def claim(self, rt: ProviderRuntime, lease: ProbeLease) -> ProbeClaim:
        """Whether this process sends ``rt``'s probe, holding the local ``lease``: refused while
        another process holds the shared lease, or with the outcome of a probe another process
        settled since this breaker went HALF_OPEN (for :meth:`adopt`, once ``lease`` is given back).

        A store that cannot be reached just now grants: each process then probes under its
        local lease alone, as a process with no shared store does.
        """
        now_wall = self.clock.wall()
        until_wall = now_wall + max(0.0, lease.expires_at - self.clock.monotonic())
        seen_wall = rt.breaker.view().changed_wall or 0.0
        try:
            claim = await asyncio.to_thread(
                self.store.claim_probe, rt.name, self.holder, now_wall, until_wall, seen_wall
            )
        except self.store.failures:
            return ProbeClaim(True)
        if claim.granted:
            self._held.add(rt.name)
        return claim

    def adopt(self, rt: ProviderRuntime, outcome: ProbeOutcome | None) -> None:
        """Adopt another process's probe outcome into ``rt``'s breaker (the local lease given back)."""
        if outcome is None:
            return
        remaining = outcome.cooldown_remaining_s - max(0.0, self.clock.wall() - outcome.saved_wall)
        rt.breaker.adopt_probe_outcome(
            BreakerState(outcome.state),
            remaining,
            outcome.consecutive_trips,
            outcome.open_reason,
            outcome.settled_wall,
        )

    def release(self, rt: ProviderRuntime) -> None:
        """After the probe is settled (or given back unjudged): release the shared lease, with
        the outcome when the breaker left HALF_OPEN. Written off the loop; never raises."""
        if rt.name not in self._held:
            return
        self._held.discard(rt.name)
        view = rt.breaker.view()
        outcome = None
        if view.state is not BreakerState.HALF_OPEN and view.changed_wall is not None:
            now_wall = self.clock.wall()
            outcome = ProbeOutcome(
                view.state.value,
                view.cooldown_remaining_s,
                view.consecutive_trips,
                view.open_reason,
                view.changed_wall,
                now_wall,
            )
        task = asyncio.get_running_loop().create_task(self._release(rt.name, outcome))
        self._track(task)

    async def _release(self, provider: str, outcome: ProbeOutcome | None) -> None:
        try:
            await asyncio.to_thread(self.store.release_probe, provider, self.holder, outcome)
        except self.store.failures:
            pass  # the lease expires by itself; then another process probes in turn
