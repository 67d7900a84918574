"""A run's events as Server-Sent Events, resumable by ``Last-Event-ID``.

Each event goes out once, in seq order, as ``id: <seq>``, ``event: <kind>`` and ``data: <the
event as JSON>`` — exactly what ``workbench runs export`` writes for it. A client that
reconnects with the last id it saw (the ``Last-Event-ID`` header, as browsers send it, or
``?after=``) gets every later event and none it already has: the stream reads the store for
``seq > last`` each time it is woken, and a run's seqs are committed in increasing order by
its one writer (its lease), so no later seq is ever read before an earlier one.

The stream watches the run before it first reads the store (tui/server/feed.py), reads again
on every notification and every :data:`~tui.server.feed.POLL_S` seconds, and ends after a
``run_finished`` whose status is final (a WAITING run goes on once it is answered). A comment
line keeps an idle connection open every :data:`PING_S` seconds (sse-starlette's ping).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from sse_starlette import ServerSentEvent

from engine.events import RunEvent, RunFinished
from tui.server.feed import POLL_S, EventFeed

PING_S = 15.0
"""Keep-alive comment interval; a client that hears nothing for several of these reconnects."""

ReadEvents = Callable[[str, int], list[RunEvent]]
"""``store.events(run_id, after_seq)``: read in a worker thread (the store is synchronous)."""


def parse_last_event_id(header: str | None, after: int | None) -> int:
    """The seq a stream resumes after: the ``Last-Event-ID`` header, else ``?after=``, else 0.

    Raises ValueError (one line) for an id that is not a seq."""
    if header is not None and header.strip():
        text = header.strip()
        if not text.isdigit() or len(text) > 18:
            raise ValueError(
                f"Last-Event-ID {text[:40]!r} is not an event id of this server (a seq)"
            )
        return int(text)
    return after or 0


def sse_of(event: RunEvent) -> ServerSentEvent:
    return ServerSentEvent(data=event.model_dump_json(), id=str(event.seq), event=event.kind)


async def run_events(
    feed: EventFeed, read: ReadEvents, run_id: str, after_seq: int, poll_s: float = POLL_S
) -> AsyncIterator[ServerSentEvent]:
    """Every event of ``run_id`` after ``after_seq``, as it is committed, until the run ends."""
    last = after_seq
    async with feed.watch(run_id) as watch:
        while True:
            events = await anyio.to_thread.run_sync(read, run_id, last)
            for event in events:
                if event.seq <= last:
                    continue  # never sent twice, whatever the store returns
                last = event.seq
                yield sse_of(event)
                if isinstance(event, RunFinished) and event.status.final:
                    return
            await watch.wait(poll_s)
