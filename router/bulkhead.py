"""Per-provider bulkheads: a cap on concurrent calls, so one slow provider cannot absorb all traffic.

Acquisition never blocks: a full bulkhead is passed over by selection. A
request that finds every candidate full may wait, for a bounded time, on the
event :meth:`BulkheadBoard.waiter` returns; any release sets it.
"""

from __future__ import annotations

import asyncio


class Bulkhead:
    def __init__(self, size: int, board: BulkheadBoard | None = None) -> None:
        if size < 1:
            raise ValueError("a bulkhead needs at least one slot")
        self.size = size
        self.in_flight = 0
        self.peak = 0
        self._board = board

    @property
    def free(self) -> int:
        return self.size - self.in_flight

    def try_acquire(self) -> bool:
        if self.in_flight >= self.size:
            return False
        self.in_flight += 1
        if self.in_flight > self.peak:
            self.peak = self.in_flight
        return True

    def release(self) -> None:
        if self.in_flight <= 0:
            raise RuntimeError("bulkhead released more often than acquired")
        self.in_flight -= 1
        if self._board is not None:
            self._board.notify()


class BulkheadBoard:
    """Wakes requests waiting for any bulkhead slot of the router to free."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    def notify(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    def waiter(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event
