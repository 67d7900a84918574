"""Fan-out of provider snapshots to subscribers (the TUI's providers panel, the run's event log),
and the router's loop that changes go out on (:class:`ChangeNotices`).

Breaker transitions are published at once. Counter and in-flight changes are
coalesced: at most one snapshot per provider every ``interval_s`` (the TUI
redraws at ~20 Hz anyway), which keeps the per-request cost of having a
subscriber near zero. A snapshot equal to the provider's last one is not published again. The interval is waited on the router's clock, so on an
injected clock what subscribers see does not depend on how busy the machine is. A subscriber that raises is logged and skipped; it
never breaks routing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from router.breaker import CircuitBreaker
from router.clock import Clock
from router.models import ProviderSnapshot

log = logging.getLogger(__name__)

Subscriber = Callable[[ProviderSnapshot], None]


class SnapshotPublisher:
    def __init__(
        self,
        snapshot_of: Callable[[str], ProviderSnapshot],
        interval_s: float = 0.05,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._snapshot_of = snapshot_of
        self.interval_s = interval_s
        self._sleep = sleep
        self._subscribers: list[Subscriber] = []
        self._dirty: set[str] = set()
        self._order: list[str] = []
        self._timer: asyncio.Task[None] | None = None
        self._last: dict[str, ProviderSnapshot] = {}
        """The snapshot each provider's subscribers saw last: an identical one is not sent again."""

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.append(callback)
        self._last.clear()  # a new subscriber hears every provider's next snapshot

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def changed(
        self, name: str, loop: asyncio.AbstractEventLoop | None, *, urgent: bool = False
    ) -> None:
        """Provider ``name`` changed; publish now (``urgent`` or no loop yet) or within ``interval_s``."""
        if not self._subscribers:
            return
        if urgent or loop is None:
            if name in self._dirty:
                self._dirty.discard(name)
                self._order.remove(name)
            self._publish(self._snapshot_of(name))
            return
        if name in self._dirty:
            return
        self._dirty.add(name)
        self._order.append(name)
        if self._timer is None:
            self._timer = loop.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await self._sleep(self.interval_s)
        self._timer = None
        self.flush()

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        names, self._order = self._order, []
        self._dirty.clear()
        for name in names:
            self._publish(self._snapshot_of(name))

    def _publish(self, snapshot: ProviderSnapshot) -> None:
        if self._last.get(snapshot.name) == snapshot:
            return  # nothing changed since the last one (a counter that went up and back)
        self._last[snapshot.name] = snapshot
        for callback in list(self._subscribers):
            try:
                callback(snapshot)
            except Exception:  # a subscriber's bug must not break routing
                log.exception("provider snapshot subscriber failed")


class ChangeNotices:
    """The router's changes going out, on the router's loop: snapshots to subscribers (through
    ``publisher``) and the wake-ups that notice a breaker's cooldown ending with no request to
    touch it. Bound to the loop the router first serves on; work asked from another thread (a
    breaker's transition there) is handed over to that loop."""

    def __init__(self, publisher: SnapshotPublisher, clock: Clock) -> None:
        self.publisher = publisher
        self.clock = clock
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.wake_tasks: dict[str, asyncio.Task[None]] = {}
        """The pending wake-up of each provider whose breaker is OPEN."""
        self._closed = False

    def bind(self) -> asyncio.AbstractEventLoop:
        """Serve on the running loop (from now on, for good)."""
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        return self.loop

    def on_loop(self, work: Callable[..., None], *args: Any) -> None:
        """Run ``work(*args)`` now on the loop's thread, or hand it to the loop from another."""
        loop = self.loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            if not loop.is_closed():
                loop.call_soon_threadsafe(work, *args)
            return
        work(*args)

    def notify(self, name: str, *, urgent: bool) -> None:
        """Tell subscribers provider ``name`` changed."""
        self.publisher.changed(name, self.loop, urgent=urgent)

    def schedule_wake(self, name: str, breaker: CircuitBreaker) -> None:
        """Notice OPEN → HALF_OPEN when the cooldown ends, even if no request touches the provider."""
        if self.loop is None or self._closed:
            return
        previous = self.wake_tasks.pop(name, None)
        if previous is not None:
            previous.cancel()
        self.wake_tasks[name] = self.loop.create_task(self._wake(breaker))

    async def _wake(self, breaker: CircuitBreaker) -> None:
        remaining = breaker.cooldown_remaining()
        while remaining > 0:
            await self.clock.sleep(remaining)
            remaining = breaker.cooldown_remaining()
        _ = breaker.state  # the read performs the transition and emits it

    def close(self) -> None:
        """Stop every wake-up; none is scheduled from now on."""
        self._closed = True
        for task in self.wake_tasks.values():
            task.cancel()
        self.wake_tasks.clear()
