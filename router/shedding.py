"""Load shedding when more than half the providers are OPEN (ADR-002 §B).

Low-priority requests are kept off the remote providers (the built-in
provider answers them); medium-priority ones take a turn when fewer than
``concurrency`` of them are in flight *or* a healthy provider has a free
bulkhead slot — a queue never waits while a healthy provider sits idle —
and otherwise wait in a bounded queue (``queue_size`` waiters, ``queue_wait_s``
each, on the router's clock), getting the built-in provider when their wait
runs out; high-priority ones pass freely. The providers still up thus carry
what their bulkheads allow, and no more — not the whole load of the OPEN
ones, which is how one outage cascades into the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from router.clock import Clock
from router.models import Priority


@dataclass(frozen=True, slots=True)
class Admission:
    remote: bool  # may the request use remote providers?
    gated: bool  # does it hold a turn that must be released?
    note: str | None = None  # what happened, for the request's attempts


class LoadShedder:
    def __init__(
        self,
        clock: Clock,
        *,
        threshold: float,
        concurrency: int,
        queue_size: int,
        queue_wait_s: float,
    ) -> None:
        self._clock = clock
        self.threshold = threshold
        self._concurrency = concurrency
        self._queue_size = queue_size
        self._queue_wait_s = queue_wait_s
        self._released: asyncio.Event | None = None
        self.in_flight = 0
        self.waiting = 0

    def active(self, opened: int, total: int) -> bool:
        return total > 0 and opened / total > self.threshold

    def release(self) -> None:
        self.in_flight -= 1
        if self._released is not None:
            self._released.set()
            self._released = None

    def _has_turn(self, free_slots: Callable[[], int]) -> bool:
        return self.in_flight < self._concurrency or free_slots() > 0

    async def admit(
        self,
        priority: Priority,
        opened: int,
        total: int,
        free_slots: Callable[[], int] = lambda: 0,
        slot_freed: Callable[[], asyncio.Event] | None = None,
    ) -> Admission:
        """``free_slots``: free bulkhead slots of healthy providers; ``slot_freed``: an event set
        when any bulkhead slot frees (both from the router)."""
        if priority == "high" or not self.active(opened, total):
            return Admission(True, False)
        share = f"{opened}/{total} providers OPEN"
        if priority == "low":
            return Admission(
                False,
                False,
                f"load shedding ({share}): low priority answered by the built-in provider",
            )
        if self._has_turn(free_slots):
            self.in_flight += 1
            return Admission(True, True)
        if self.waiting >= self._queue_size:
            return Admission(False, False, f"load shedding ({share}) and the queue is full")
        self.waiting += 1
        began = self._clock.monotonic()
        deadline = began + self._queue_wait_s
        try:
            while True:
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    return Admission(
                        False,
                        False,
                        f"load shedding: queued {self._queue_wait_s:.1f}s without a turn; "
                        "answered by the built-in provider",
                    )
                await self._wait(slot_freed, remaining)
                if self._has_turn(free_slots):
                    self.in_flight += 1
                    return Admission(
                        True,
                        True,
                        f"queued {self._clock.monotonic() - began:.1f}s under load shedding",
                    )
        finally:
            self.waiting -= 1

    async def _wait(self, slot_freed: Callable[[], asyncio.Event] | None, timeout: float) -> None:
        """Until a turn is released, a bulkhead slot frees, or ``timeout`` passes."""
        if self._released is None:
            self._released = asyncio.Event()
        waits = [asyncio.ensure_future(self._released.wait())]
        if slot_freed is not None:
            waits.append(asyncio.ensure_future(slot_freed().wait()))
        timer = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({*waits, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (*waits, timer):
                future.cancel()
