"""Load shedding when more than half the providers are OPEN (ADR-002 §B).

Low-priority requests are kept off the remote providers (the built-in
provider answers them); medium-priority ones pass through a gate of
``concurrency`` slots, waiting in a bounded queue (``queue_size`` waiters,
``queue_wait_s`` each, on the router's clock) and otherwise getting the
built-in provider; high-priority ones pass freely. The providers still up thus
carry the high-priority traffic plus a trickle — not the whole load of the
OPEN ones, which is how one outage cascades into the next.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from router.clock import Clock
from router.models import Priority


@dataclass(frozen=True, slots=True)
class Admission:
    remote: bool  # may the request use remote providers?
    gated: bool  # does it hold a gate slot that must be released?
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
        self._gate: asyncio.Semaphore | None = None
        self.waiting = 0

    def active(self, opened: int, total: int) -> bool:
        return total > 0 and opened / total > self.threshold

    def _semaphore(self) -> asyncio.Semaphore:
        if self._gate is None:  # created on first use, inside the router's loop
            self._gate = asyncio.Semaphore(self._concurrency)
        return self._gate

    def release(self) -> None:
        self._semaphore().release()

    async def admit(self, priority: Priority, opened: int, total: int) -> Admission:
        if priority == "high" or not self.active(opened, total):
            return Admission(True, False)
        share = f"{opened}/{total} providers OPEN"
        if priority == "low":
            return Admission(
                False,
                False,
                f"load shedding ({share}): low priority answered by the built-in provider",
            )
        gate = self._semaphore()
        if not gate.locked():
            await gate.acquire()  # a free slot: this does not suspend
            return Admission(True, True)
        if self.waiting >= self._queue_size:
            return Admission(False, False, f"load shedding ({share}) and the queue is full")
        self.waiting += 1
        began = self._clock.monotonic()
        acquire = asyncio.ensure_future(gate.acquire())
        timer = asyncio.ensure_future(self._clock.sleep(self._queue_wait_s))
        try:
            await asyncio.wait({acquire, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.waiting -= 1
            timer.cancel()
            if not acquire.done():
                acquire.cancel()
            await asyncio.gather(acquire, return_exceptions=True)
        if acquire.cancelled():
            return Admission(
                False,
                False,
                f"load shedding: queued {self._queue_wait_s:.1f}s without a turn; "
                "answered by the built-in provider",
            )
        return Admission(
            True, True, f"queued {self._clock.monotonic() - began:.1f}s under load shedding"
        )
