"""Reading a provider's answer within bounds: its size once inflated, its lines, and its pace.

Whatever a provider sends is hostile until read: a body that inflates from 1 MB to 1 GiB, a
stream that never ends, a line that never ends, a server that sends a byte at a time. Every
answer is read here, from its raw bytes up, under the provider's :class:`ReadLimits` (its
config's ``max_*`` and ``trickle_timeout_s``):

* a non-streamed body (an error's and a health check's too) is at most ``body_bytes`` once
  inflated; a streamed body at most ``stream_bytes`` (comments and keep-alives count), and each
  of its lines at most ``line_bytes``;
* only gzip and deflate are asked for (``Accept-Encoding``) and they are inflated here, at most
  :data:`PIECE` bytes a step, so a bomb stops at the bound it passes. Hand-written over zlib's
  ``max_length`` because httpx's decoders inflate each network read whole — one 64 KiB read of a
  deflate bomb is 64 MiB, of a zstd one gigabytes — before anyone can count it. A coding that was
  not asked for is refused unread;
* once a line of a stream (or a non-streamed body) has begun, the rest must follow within
  ``trickle_s`` on the router's clock: a server that trickles its answer a byte at a time is cut
  in seconds, not held for the call's whole ``timeout_s``.

Passing a size bound fails the call as OVERSIZED, trickling as a TIMEOUT.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from functools import cache
from typing import cast

import httpx

from router.clock import Clock
from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError

MIB = 1024 * 1024
PIECE = 64 * 1024
"""The most bytes one step of inflating produces."""
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
_CODING = re.compile(r"[a-z0-9_.+-]{1,32}(?:, ?[a-z0-9_.+-]{1,32}){0,3}")
"""A content coding (or a short list of them) fit to be named in a detail string."""


@dataclass(frozen=True, slots=True)
class ReadLimits:
    body_bytes: int
    line_bytes: int
    stream_bytes: int
    answer_chars: int
    trickle_s: float

    @classmethod
    def of(cls, cfg: ProviderConfig) -> ReadLimits:
        return cls(
            body_bytes=int(cfg.max_body_mb * MIB),
            line_bytes=int(cfg.max_line_mb * MIB),
            stream_bytes=int(cfg.max_stream_mb * MIB),
            answer_chars=cfg.max_answer_chars,
            trickle_s=cfg.trickle_timeout_s,
        )


def mib(count: int) -> str:
    return f"{count / MIB:g} MiB"


def oversized(detail: str) -> ProviderCallError:
    return ProviderCallError(ErrorClass.OVERSIZED, detail)


class _Inflater:
    """One content coding's bytes inflated, at most :data:`PIECE` bytes a step."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib = zlib.decompressobj(_WBITS[coding])
        self._produced = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while not self._zlib.eof:  # what follows the end (a second gzip member) is ignored
            try:
                piece = self._zlib.decompress(pending, PIECE)
            except zlib.error:
                if self._coding == "deflate" and not self._produced:
                    # deflate without its zlib header, as some servers send it (httpx reads both)
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._produced = True
                    continue
                raise ProviderCallError(
                    ErrorClass.BAD_RESPONSE, f"a {self._coding} body that does not inflate"
                ) from None
            self._produced = True
            pending = self._zlib.unconsumed_tail
            if piece:
                yield piece
            if not pending and len(piece) < PIECE:
                return  # a full piece may leave output pending inside zlib: ask again


@cache
def _run_longer_than(limit: int) -> re.Pattern[bytes]:
    return re.compile(rb"[^\r\n]{%d}" % (limit + 1))


def _line_after(piece: bytes, line: int, limit: int) -> int:
    """The length of the unfinished line once ``piece`` is read after ``line`` bytes of it."""
    last = max(piece.rfind(b"\n"), piece.rfind(b"\r"))
    if last < 0:
        line += len(piece)
    else:
        first = min(i for i in (piece.find(b"\n"), piece.find(b"\r")) if i >= 0)
        inner = last - first > limit and _run_longer_than(limit).search(piece, first, last)
        if line + first > limit or inner:
            line = limit + 1
        else:
            line = len(piece) - last - 1
    if line > limit:
        raise oversized(f"a line of the stream passed max_line_mb ({mib(limit)}, inflated)")
    return line


class BoundedBody:
    """One answer's body read from its raw bytes under ``limits`` (see the module's docstring)."""

    def __init__(self, response: httpx.Response, limits: ReadLimits, clock: Clock) -> None:
        self._response = response
        self._limits = limits
        self._clock = clock
        coding = response.headers.get("content-encoding", "").strip().lower()
        self._inflater: _Inflater | None = None
        if coding in _WBITS:
            self._inflater = _Inflater(coding)
        elif coding not in ("", "identity"):
            shown = coding if _CODING.fullmatch(coding) else "of another kind"
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"answered in content-encoding {shown}, which was not asked for",
            )
        self._unfinished_since: float | None = None
        """When the unfinished line (or body) began, on the router's clock; None: none is."""

    async def read(self) -> bytes:
        """The whole body: at most ``body_bytes`` once inflated."""
        limit = self._limits.body_bytes
        parts: list[bytes] = []
        size = 0
        async for piece in self._pieces(whole=True):
            size += len(piece)
            if size > limit:
                raise oversized(f"the body passed max_body_mb ({mib(limit)}, inflated)")
            parts.append(piece)
        return b"".join(parts)

    def as_stream(self) -> httpx.Response:
        """The body, inflated and bounded, as a response of its own for the stream readers."""
        content_type = self._response.headers.get("content-type", "")
        return httpx.Response(
            self._response.status_code,
            headers={"content-type": content_type},
            stream=_Inflated(self._streamed()),
        )

    async def _streamed(self) -> AsyncGenerator[bytes, None]:
        total_limit, line_limit = self._limits.stream_bytes, self._limits.line_bytes
        total = line = 0
        async for piece in self._pieces(whole=False):
            total += len(piece)
            if total > total_limit:
                raise oversized(f"the stream passed max_stream_mb ({mib(total_limit)}, inflated)")
            before = line
            line = _line_after(piece, line, line_limit)
            if line == 0:
                self._unfinished_since = None
            elif before == 0 or line < before + len(piece):  # a new line began in this piece
                self._unfinished_since = self._clock.monotonic()
            yield piece

    async def _pieces(self, *, whole: bool) -> AsyncGenerator[bytes, None]:
        raw = cast(AsyncGenerator[bytes, None], self._response.aiter_raw())  # it is one
        try:
            while (chunk := await self._next(raw)) is not None:
                if whole and self._unfinished_since is None:
                    self._unfinished_since = self._clock.monotonic()
                if self._inflater is None:
                    yield chunk
                else:
                    for piece in self._inflater.feed(chunk):
                        yield piece
        finally:
            await raw.aclose()

    async def _next(self, raw: AsyncGenerator[bytes, None]) -> bytes | None:
        """The next raw chunk; within ``trickle_s`` of the unfinished line's start, if one is."""
        since = self._unfinished_since
        if since is None:
            return await anext(raw, None)
        left = since + self._limits.trickle_s - self._clock.monotonic()
        reading = asyncio.ensure_future(anext(raw, None))
        timer = asyncio.ensure_future(self._clock.sleep(left))
        try:
            await asyncio.wait({reading, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not reading.done():
                reading.cancel()
                await asyncio.wait({reading})  # the reader must be idle before it is closed
        if not reading.cancelled():
            return reading.result()
        raise ProviderCallError(
            ErrorClass.TIMEOUT,
            f"the answer trickled: a line still unfinished after trickle_timeout_s "
            f"({self._limits.trickle_s:g} s)",
        )


class _Inflated(httpx.AsyncByteStream):
    def __init__(self, pieces: AsyncGenerator[bytes, None]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._pieces:
            yield piece

    async def aclose(self) -> None:
        await self._pieces.aclose()
