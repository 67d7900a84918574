"""Streamed model calls: who listens to the partial text, and how a streamed body is read.

A caller that wants partial text uses ``SmartModelRouter.stream(request, sink)``: the router
walks the same chain as ``complete`` (selection, breakers, buckets, fail-over) and every HTTP
provider it calls streams its answer in its API's own format, handing each piece of text to
the sink as it arrives. The sink travels in a context variable, so the chain between the
router's entry point and the provider stays the one ``complete`` uses.

What the sink sees for one request: ``start`` when a provider's answer begins, ``text`` for
each piece, and ``abort`` when that provider's stream fails after it began (the router then
fails over and a later ``start`` begins again from nothing). Only the response that
``stream`` returns is the answer: partial text is for display, never for a step's output.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

import httpx
from httpx_sse import EventSource

from router.errors import ErrorClass, ProviderCallError
from router.providers.base import Framing

StreamEventKind = Literal["start", "text", "abort"]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    kind: StreamEventKind
    provider: str
    model: str
    text: str = ""


StreamSink = Callable[[StreamEvent], None]

_SINK: ContextVar[StreamSink | None] = ContextVar("router_stream_sink", default=None)


def active_sink() -> StreamSink | None:
    """The sink of the streamed request this task is serving, if any."""
    return _SINK.get()


@contextmanager
def streaming_to(sink: StreamSink) -> Iterator[None]:
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


async def _lines(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    async for line in response.aiter_lines():
        if line.strip():
            yield "", line


async def _sse(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    async for sse in EventSource(response).aiter_sse():
        if sse.data or sse.event != "message":
            yield ("" if sse.event == "message" else sse.event), sse.data


async def stream_events(
    response: httpx.Response, framing: Framing, first_byte_s: float, idle_s: float
) -> AsyncIterator[tuple[str, str]]:
    """``(event name, data)`` pairs of a streamed body, each within its timeout.

    The first event must arrive within ``first_byte_s``, every later one within ``idle_s`` of
    the one before: a stalled stream is a TIMEOUT, a cut one a CONNECTION failure.
    """
    events = (_lines if framing == "ndjson" else _sse)(response)
    timeout = first_byte_s
    while True:
        try:
            async with asyncio.timeout(timeout):
                event = await anext(events)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise ProviderCallError(
                ErrorClass.TIMEOUT,
                f"the stream stalled: no event within {timeout:.1f}s",
                status=response.status_code,
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderCallError(
                ErrorClass.CONNECTION,
                f"the stream broke off ({type(exc).__name__})",
                status=response.status_code,
            ) from None
        timeout = idle_s
        yield event
