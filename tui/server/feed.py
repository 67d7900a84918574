"""Which runs have new events: one ``LISTEN workbench_events`` connection for the whole server,
fanned out to the event streams that watch each run.

The run store's writers send ``NOTIFY workbench_events, '<run id> <highest seq>'`` in the
transaction that stores the events (engine/store/postgres.py), so a notification arrives only
once they are committed. A stream registers its :class:`Watch` *before* it reads the stored
events (the listening connection is already open), so an event committed between its read
and its wait still wakes it.

Notifications can be missed all the same: while the listening connection is down (the
database restarted, a network cut) nothing is delivered, and psycopg does not re-establish a
``LISTEN`` by itself. So the feed reconnects (with a growing pause, at most
:data:`RECONNECT_MAX_S`), wakes every stream once it listens again, checks an idle
connection every :data:`CHECK_S` seconds; and every stream also reads the store again every
:data:`POLL_S` seconds whatever it heard — the backstop that makes a missed notification cost
latency, never an event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from engine.store.postgres import EVENTS_CHANNEL
from plumbing.postgres import CONNECTION_KWARGS, Database

POLL_S = 2.0
"""How often a stream reads the store without having been notified."""
CHECK_S = 5.0
"""How long the listening connection may be silent before it is checked with a query."""
RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 5.0

log = logging.getLogger("workbench.server")


class Watch:
    """One stream's interest in one run: woken by the run's notifications."""

    def __init__(self) -> None:
        self._woken = asyncio.Event()

    def wake(self) -> None:
        self._woken.set()

    async def wait(self, timeout: float) -> None:
        """Until woken (since the last wait) or ``timeout`` seconds passed; clears the wake."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._woken.wait(), timeout)
        self._woken.clear()


class EventFeed:
    """The server's listening connection and the watches it wakes."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._watches: dict[str, set[Watch]] = {}
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()
        """Set while the connection listens (the health endpoint reports it)."""
        self.connections = 0
        """How many times the feed has (re)connected."""

    async def start(self) -> None:
        """Start listening; returns once the first ``LISTEN`` is in place (or has failed once,
        after which the feed keeps trying in the background)."""
        self._task = asyncio.create_task(self._listen_forever(), name="workbench-event-feed")
        attempt = asyncio.create_task(self.listening.wait())
        await asyncio.wait({attempt, self._task}, timeout=10.0, return_when="FIRST_COMPLETED")
        attempt.cancel()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def watching(self) -> int:
        """How many streams watch a run now."""
        return sum(len(watches) for watches in self._watches.values())

    @asynccontextmanager
    async def watch(self, run_id: str) -> AsyncIterator[Watch]:
        """A :class:`Watch` on ``run_id`` for the block's duration."""
        watch = Watch()
        self._watches.setdefault(run_id, set()).add(watch)
        try:
            yield watch
        finally:
            watches = self._watches.get(run_id)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._watches[run_id]

    def _notified(self, payload: str) -> None:
        run_id, _, _seq = payload.rpartition(" ")
        for watch in self._watches.get(run_id, ()):
            watch.wake()

    def _wake_all(self) -> None:
        for watches in self._watches.values():
            for watch in watches:
                watch.wake()

    async def _listen_forever(self) -> None:
        pause = RECONNECT_MIN_S
        while True:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - any failure: reconnect, the streams poll
                if self.listening.is_set():
                    log.warning(
                        "the event feed lost its database connection (%s); reconnecting",
                        self._database.redact(str(error).splitlines()[0] if str(error) else ""),
                    )
                self.listening.clear()
                await asyncio.sleep(pause)
                pause = min(pause * 2, RECONNECT_MAX_S)
            else:
                pause = RECONNECT_MIN_S

    async def _listen_once(self) -> None:
        import psycopg

        connection: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
            self._database.conninfo, autocommit=True, connect_timeout=10, **CONNECTION_KWARGS
        )
        async with connection:
            await connection.execute(f"LISTEN {EVENTS_CHANNEL}")
            self.connections += 1
            self.listening.set()
            self._wake_all()  # what was committed while nobody listened
            while True:
                async for notification in connection.notifies(timeout=CHECK_S):
                    self._notified(notification.payload)
                await connection.execute("SELECT 1")  # a silent connection: is it still there?
