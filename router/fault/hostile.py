"""The fault server's hostile answers: what a malicious OpenAI-compatible (or any other) server
sends to exhaust the client reading it.

* ``endless`` — an answer that never ends: a streamed one repeats a chunk of text for ever, a
  non-streamed body never closes its JSON.
* ``huge`` — a well-formed answer whose text is ``size_mb`` long (streamed: in one event, one
  line); on a health check, a model list padded with ``size_mb`` of white space.
* ``trickle`` — the answer sent a byte at a time, ``every_s`` apart.
* ``comments`` — a stream of SSE comments (NDJSON: empty lines) for ever, ``every_s`` apart,
  and no event; a non-streamed body of white space for ever.
* ``bad_utf8`` — an answer whose text carries bytes that are not UTF-8.
* ``endless_head`` — a response head that never ends: header lines of 1 KiB for ever.
* ``encoding: gzip | deflate`` compresses any answer: a ``huge`` one is a bomb (1 GiB of text
  is ~1 MB on the wire).
* ``text`` replaces the responder's answer (a script's way to send escape sequences).

Every body goes out with chunked transfer encoding (its length is not known, or infinite).
"""

from __future__ import annotations

import asyncio
import json
import struct
import zlib
from collections.abc import Iterator
from functools import cache

from router.fault.codec import Answer, FaultCodec, Route
from router.fault.script import Fault

HOSTILE_KINDS = frozenset({"endless", "huge", "trickle", "comments", "bad_utf8", "endless_head"})
MARK = "@@workbench-fault-filler@@"
"""Stands in the answer's text for what the fault puts there (codecs cut a text into up to 8
pieces: eight marks make every piece one mark)."""
BLOCK = 1024 * 1024
_NOT_UTF8 = b"ok \xff\xfe\xc3( bad"


def is_hostile(fault: Fault) -> bool:
    return fault.kind in HOSTILE_KINDS or fault.encoding != "identity" or fault.text is not None


def _filled(template: bytes, filler: Iterator[bytes]) -> Iterator[bytes]:
    """``template`` with its first mark replaced by ``filler``, any other mark by nothing."""
    head, _, tail = template.partition(MARK.encode())
    yield head
    yield from filler
    yield tail.replace(MARK.encode(), b"")


def _repeat(unit: bytes, size: int) -> Iterator[bytes]:
    block = unit * (BLOCK // len(unit))
    whole, rest = divmod(size, len(block))
    for _ in range(whole):
        yield block
    yield block[:rest]


def _forever(unit: bytes) -> Iterator[bytes]:
    block = unit * (64 * 1024 // len(unit))
    while True:
        yield block


def _health_pieces(fault: Fault, body: bytes) -> Iterator[bytes]:
    padding = b" "
    if fault.kind == "huge":
        return iter([b"{", *_repeat(padding, int(fault.size_mb * BLOCK)), body[1:]])
    if fault.kind in ("endless", "comments"):
        return _filled(b"{" + MARK.encode(), _forever(padding))
    return iter([body])


def _chat_pieces(fault: Fault, route: Route, codec: FaultCodec, reply: Answer) -> Iterator[bytes]:
    text = fault.text if fault.text is not None else reply.content
    marked = Answer(reply.model, MARK * 8, reply.request, reply.input_tokens, reply.serial)
    plain = Answer(reply.model, text, reply.request, reply.input_tokens, reply.serial)
    if not route.stream:
        template = json.dumps(codec.success_body(marked)).encode()
        if fault.kind == "huge":
            return _filled(template, _repeat(b"x", int(fault.size_mb * BLOCK)))
        if fault.kind == "endless":
            return _filled(template, _forever(b"x"))
        if fault.kind == "comments":
            return _forever(b" ")
        if fault.kind == "bad_utf8":
            return _filled(template, iter([_NOT_UTF8]))
        return iter([json.dumps(codec.success_body(plain)).encode()])
    frames = codec.stream_frames(marked)
    middle = len(frames) // 2
    if fault.kind == "huge":
        return _filled(b"".join(frames), _repeat(b"x", int(fault.size_mb * BLOCK)))
    if fault.kind == "endless":
        return _endless_stream(frames, middle)
    if fault.kind == "comments":
        return _forever(b"\n" if codec.stream_content_type != "text/event-stream" else b": .\n\n")
    if fault.kind == "bad_utf8":
        return _filled(b"".join(frames), iter([_NOT_UTF8]))
    return iter(codec.stream_frames(plain))


def _endless_stream(frames: list[bytes], middle: int) -> Iterator[bytes]:
    mark = MARK.encode()
    yield b"".join(frames[:middle]).replace(mark, b"")
    piece = frames[middle].replace(mark, b"x" * 4096)
    while True:
        yield piece * 16


@cache
def _compressed_block(unit: bytes) -> bytes:
    """A block of ``unit`` deflated on its own (after a full flush a deflate stream starts over,
    so the same block compresses to the same bytes wherever it stands): a bomb of 1 GiB is
    ~1 MB, sent without compressing 1 GiB for each request."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return deflate.compress(unit) + deflate.flush(zlib.Z_FULL_FLUSH)


def _encoded(pieces: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    gzip = encoding == "gzip"
    check = zlib.crc32(b"") if gzip else zlib.adler32(b"")
    size = 0
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" if gzip else b"\x78\xda"
    for piece in pieces:
        check = zlib.crc32(piece, check) if gzip else zlib.adler32(piece, check)
        size += len(piece)
        if len(piece) == BLOCK and piece == piece[:1] * BLOCK:
            yield deflate.flush(zlib.Z_FULL_FLUSH) + _compressed_block(piece)
        else:
            yield deflate.compress(piece)
    yield deflate.flush()
    yield struct.pack("<II", check, size & 0xFFFFFFFF) if gzip else struct.pack(">I", check)


async def send(
    writer: asyncio.StreamWriter,
    fault: Fault,
    route: Route,
    codec: FaultCodec,
    reply: Answer | None,
    time_scale: float,
) -> None:
    """Answer with ``fault``'s hostile body (``reply``: the chat answer; None on a health check)."""
    if fault.kind == "endless_head":
        writer.write(b"HTTP/1.1 200 OK\r\n")
        line = b"x-padding: " + b"a" * 1024 + b"\r\n"
        while True:  # until the client hangs up
            writer.write(line * 64)
            await writer.drain()
    if reply is None:
        pieces = _health_pieces(fault, json.dumps(codec.health_body()).encode())
    else:
        pieces = _chat_pieces(fault, route, codec, reply)
    content_type = codec.stream_content_type if route.stream else "application/json"
    headers = {"content-type": content_type, "transfer-encoding": "chunked"}
    if fault.encoding != "identity":
        headers["content-encoding"] = fault.encoding
        pieces = _encoded(pieces, fault.encoding)
    headers.update({name.lower(): value for name, value in fault.headers.items()})
    head = ["HTTP/1.1 200 OK", *(f"{name}: {value}" for name, value in headers.items())]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    pause = fault.every_s * time_scale
    for piece in pieces:
        parts = (
            [piece[i : i + 1] for i in range(len(piece))] if fault.kind == "trickle" else [piece]
        )
        for part in parts:
            if part:
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                await writer.drain()
            if pause and (fault.kind != "trickle" or part):
                await asyncio.sleep(pause)
    writer.write(b"0\r\n\r\n")
    await writer.drain()
