"""A server's run followed live: its events read as Server-Sent Events from after the last one
shown, across dropped connections and server restarts.

The stream is read until a ``run_finished`` whose status is final (a WAITING run goes on once
answered). When the connection drops, or the server stops and comes back, the client waits
(from :data:`RECONNECT_MIN_S`, doubling to :data:`RECONNECT_MAX_S`) and reconnects with
``Last-Event-ID``: the server sends every later event and none already read. A server that
sends nothing — not even its keep-alive comment — for :data:`SILENT_S` seconds is taken for
gone. A refusal (no token, no such run) ends the follow with its one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import quote

import httpx
from httpx_sse import aconnect_sse

from engine.events import EVENT_ADAPTER, RunEvent, RunFinished
from tui.client.http import MAX_ERROR_CHARS, ServerClient, ServerError, refusal

RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 5.0
SILENT_S = 60.0
"""Four of the server's keep-alive intervals (tui/server/stream.py's PING_S)."""
MAX_EVENT_CHARS = 16_000_000
"""The largest event read; a larger one is a server gone wrong, and ends the follow."""

OnEvent = Callable[[RunEvent], Awaitable[None]]


async def follow_events(
    client: ServerClient, run_id: str, after_seq: int, on_event: OnEvent
) -> None:
    """Hand ``on_event`` every event of ``run_id`` after ``after_seq``, once each, in order,
    until the run ends; reconnects as the module doc says."""
    last = after_seq
    pause = RECONNECT_MIN_S
    timeout = httpx.Timeout(SILENT_S, connect=10.0)
    async with httpx.AsyncClient(
        base_url=client.url, headers=client.headers, timeout=timeout
    ) as http:
        while True:
            try:
                async with aconnect_sse(
                    http,
                    "GET",
                    f"/v1/runs/{quote(run_id, safe='')}/events/stream",
                    headers={"Last-Event-ID": str(last)},
                ) as source:
                    response = source.response
                    if 400 <= response.status_code < 500:
                        body = await response.aread()
                        raise refusal(response, body[: MAX_ERROR_CHARS * 4], client.url)
                    if response.status_code == 200:
                        async for sse in source.aiter_sse():
                            if len(sse.data) > MAX_EVENT_CHARS:
                                raise ServerError(
                                    f"the server at {client.url} sent an event over"
                                    f" {MAX_EVENT_CHARS // 1_000_000} MB"
                                )
                            event = EVENT_ADAPTER.validate_json(sse.data)
                            if event.seq <= last:
                                continue
                            last = event.seq
                            pause = RECONNECT_MIN_S
                            await on_event(event)
                            if isinstance(event, RunFinished) and event.status.final:
                                return
            except httpx.TransportError:
                pass  # dropped, refused or silent: reconnect from the last event read
            await asyncio.sleep(pause)
            pause = min(pause * 2, RECONNECT_MAX_S)
