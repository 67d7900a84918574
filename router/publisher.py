"""Fan-out of provider snapshots to subscribers (the TUI's providers panel, the run's event log).

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
from collections.abc import Awaitable, Callable

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
