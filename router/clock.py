"""Time sources for the router.

Every cooldown, lease, bucket and window in ``router/`` reads time through a
:class:`Clock`, never through ``datetime.now()``: monotonic time cannot jump
with NTP corrections (ADR-002 §C), and tests swap in :class:`ManualClock` to
move time by hand instead of sleeping. Wall time exists only for display and
for persisting offsets across processes.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Monotonic time for decisions, wall time for display, and a sleep on the same time base."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clocks: ``time.monotonic`` (CLOCK_MONOTONIC) and ``time.time``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that only moves when told to; sleepers wake when ``advance`` passes their deadline.

    ``advance`` may be called from the event loop's thread only (it resolves futures).
    """

    def __init__(self, start: float = 1_000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._wall_offset

    def set_wall(self, wall: float) -> None:
        """Step the wall clock alone (an NTP correction); monotonic time is untouched."""
        self._wall_offset = wall - self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    @property
    def pending_sleepers(self) -> int:
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def advance(self, seconds: float) -> None:
        """Move both clocks forward and wake every sleeper whose deadline has come."""
        if seconds < 0:
            raise ValueError("a monotonic clock never goes backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)


async def wait_event_or_timeout(clock: Clock, event: asyncio.Event, timeout: float) -> None:
    """Until ``event`` is set or ``timeout`` seconds have passed on ``clock``."""
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(timeout))
    try:
        await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        sleeper.cancel()
