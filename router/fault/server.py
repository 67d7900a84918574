"""A real HTTP server on loopback that speaks every provider protocol and injects scripted faults.

Each provider is a path prefix (``/openai``, ``/anthropic``, …); below it the
server answers whichever API the path names — OpenAI-compatible chat
completions (and Azure's ``/openai/deployments/{d}/chat/completions``),
Anthropic ``/v1/messages``, Gemini ``:generateContent``, Ollama ``/api/chat`` —
and their health endpoints, streamed (SSE; Ollama NDJSON) when the request asks for it. Like
the real APIs it refuses a chat body with a top-level field the API does not define or without
a required one (400), and, for a provider scripted ``auth: required``, a request without the
API's key header (401), so a wrong request fails in tests. Every request is recorded (method, path, query,
headers, JSON body, task and inputs) before its fault is applied, so tests can
check each adapter's exact request. Successful answers come from a responder
``(task, inputs, raw_body) -> str | dict``.

The time scale multiplies every scripted delay, hang, phase length and
Retry-After, so a demo shows a whole OPEN → HALF_OPEN → CLOSED cycle in seconds.

Use it as ``async with FaultServer(...) as srv`` on a running loop, or from
synchronous code as ``with FaultServer.running(...) as srv`` (its own thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from router.fault import hostile
from router.fault.codec import Answer, RateWindow, Route
from router.fault.playback import ProviderState, describe_fault
from router.fault.protocols import (
    codec_for,
    prompt_tokens,
    refusal,
    request_inputs,
    route_for,
)
from router.fault.script import Fault, FaultScript, ProviderScript, load_fault_script
from router.wire import TASK_HEADER

log = logging.getLogger(__name__)

Responder = Callable[[str, dict[str, Any], dict[str, Any]], "str | dict[str, Any]"]
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 32 * 1024 * 1024


def default_responder(task: str, inputs: dict[str, Any], raw_body: dict[str, Any]) -> str:
    return f"fault-server answer for task {task}"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    provider: str
    method: str
    path: str
    api_path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    route: str  # chat | health | unknown
    protocol: str
    task: str | None
    inputs: dict[str, Any]
    fault: str
    at: float


@dataclass(slots=True)
class _Incoming:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class FaultServer:
    def __init__(
        self,
        script: FaultScript | Mapping[str, Any] | Path | str | None = None,
        responder: Responder | None = None,
        time_scale: float | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        on_request: Callable[[RecordedRequest], None] | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(
                f"the fault server only listens on loopback ({', '.join(LOOPBACK_HOSTS)}), not {host}"
            )
        self.script = load_fault_script(script)
        self.time_scale = time_scale if time_scale is not None else self.script.time_scale
        if self.time_scale <= 0:
            raise ValueError("time_scale must be greater than 0")
        self.responder: Responder = responder or default_responder
        self.on_request = on_request
        self.host = host
        self._requested_port = port
        self.port: int | None = None
        self._server: asyncio.base_events.Server | None = None
        self._states: dict[str, ProviderState] = {}
        self._requests: list[RecordedRequest] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._serial = 0
        self._lock = threading.Lock()
        self._release: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._held = 0
        self._started_at = time.monotonic()
        self._script_epoch = (
            self._started_at
        )  # phases count from here: server start or the last set_script

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> FaultServer:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self._requested_port, limit=_MAX_HEADER_BYTES
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        self._release = asyncio.Event()
        self._started_at = self._script_epoch = time.monotonic()
        self._states.clear()
        return self

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> FaultServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    @classmethod
    @contextlib.contextmanager
    def running(cls, **kwargs: Any) -> Iterator[FaultServer]:
        """Run a server on its own thread and loop for synchronous callers."""
        server = cls(**kwargs)
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(server.start())
            except BaseException as exc:  # reported to the caller below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name="fault-server", daemon=True)
        thread.start()
        ready.wait(10)
        if failure:
            thread.join(5)
            loop.close()
            raise failure[0]
        try:
            yield server
        finally:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    # --- addresses and records -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the fault server is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url(self, provider: str) -> str:
        """The root URL of one provider prefix, e.g. ``http://127.0.0.1:PORT/openai``."""
        return f"{self.base_url}/{provider.strip('/')}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, provider: str, route: str | None = None) -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if r.provider == provider and (route is None or r.route == route)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def max_in_flight(self, provider: str) -> int:
        state = self._states.get(provider)
        return 0 if state is None else state.max_in_flight

    @property
    def held(self) -> int:
        """How many answers a ``hold`` fault keeps half-sent right now."""
        return self._held

    @property
    def open_connections(self) -> int:
        """How many client connections are open right now (kept alive between requests too)."""
        return len(self._connections)

    def release_held(self) -> None:
        """Let every answer a ``hold`` fault keeps (and every later one) finish; any thread."""
        if self._loop is not None and self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)

    async def _hold(self, writer: asyncio.StreamWriter) -> None:
        await writer.drain()
        assert self._release is not None, "a held answer is sent by a running server"
        self._held += 1
        try:
            await self._release.wait()
        finally:
            self._held -= 1

    def set_script(self, script: FaultScript | Mapping[str, Any] | Path | str | None) -> None:
        """Replace the script; every provider starts over from the beginning of its new script."""
        self.script = load_fault_script(script)
        self._script_epoch = time.monotonic()
        self._states = {}

    def _state(self, provider: str) -> ProviderState:
        state = self._states.get(provider)
        if state is None:
            script = self.script.providers.get(provider, ProviderScript())
            state = self._states[provider] = ProviderState(
                script, self._script_epoch, self.time_scale
            )
        return state

    # --- HTTP ------------------------------------------------------------------------------------------

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                incoming = await self._read_request(reader)
                if incoming is None:
                    break
                keep_alive = await self._dispatch(incoming, writer)
                if not keep_alive or incoming.headers.get("connection", "").lower() == "close":
                    break
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            pass
        except asyncio.CancelledError:
            pass  # stop() cancels hanging connections; end quietly, the transport is closed below
        finally:
            self._connections.discard(task)
            writer.close()

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> _Incoming | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if length < 0 or length > _MAX_BODY_BYTES:
            raise ValueError("bad content-length")
        body = await reader.readexactly(length) if length else b""
        return _Incoming(method.upper(), target, headers, body)

    @staticmethod
    def _head(status: int, headers: Mapping[str, str], length: int) -> bytes:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Overloaded" if status == 529 else "Status"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"content-length: {length}",
            "connection: keep-alive",
        ]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        all_headers = {"content-type": "application/json", **(headers or {})}
        writer.write(self._head(status, all_headers, len(payload)) + payload)
        await writer.drain()

    async def _sleep(self, script_seconds: float) -> None:
        if script_seconds > 0:
            await asyncio.sleep(script_seconds * self.time_scale)

    # --- dispatch -----------------------------------------------------------------------------------------

    async def _dispatch(self, incoming: _Incoming, writer: asyncio.StreamWriter) -> bool:
        parts = urlsplit(incoming.target)
        path = unquote(parts.path)
        segments = path.lstrip("/").split("/", 1)
        provider = segments[0]
        api_path = "/" + segments[1] if len(segments) > 1 else "/"
        try:
            body = json.loads(incoming.body) if incoming.body else None
        except ValueError:
            body = None
        route = route_for(incoming.method, api_path, body, incoming.headers)
        state = self._state(provider)
        now = time.monotonic()
        fault: Fault | None = None
        refused = (
            refusal(
                route.protocol,
                route.kind,
                incoming.headers,
                body,
                state.script.auth == "required",
                state.script.response_formats,
                state.script.format_refusal_status,
                state.script.emulate,
            )
            if route.kind != "unknown"
            else None
        )
        if refused is not None:
            fault = Fault(kind="error", status=refused.status)
        elif route.kind == "chat":
            fault = state.next_chat_fault(now)
        elif route.kind == "health":
            fault = state.health_fault(now)
        task = incoming.headers.get(TASK_HEADER)
        inputs = request_inputs(route.protocol, body) if route.kind == "chat" else {}
        record = RecordedRequest(
            provider=provider,
            method=incoming.method,
            path=path,
            api_path=api_path,
            query=dict(parse_qsl(parts.query)),
            headers=dict(incoming.headers),
            json=body,
            route=route.kind,
            protocol=route.protocol,
            task=task,
            inputs=inputs,
            fault=f"refused: {refused.message}" if refused is not None else describe_fault(fault),
            at=now - self._started_at,
        )
        with self._lock:
            self._requests.append(record)
        if self.on_request is not None:
            try:
                self.on_request(record)
            except Exception:  # an observer's bug must not take the server down
                log.exception("fault server on_request callback failed")
        if fault is None:
            await self._send(writer, 404, {"error": f"fault server: no API at {api_path}"})
            return True
        if refused is not None:
            payload = refused.body
            if payload is None:
                payload = codec_for(route.protocol).error_body(
                    refused.status, quota=None, retry_after_s=None, overloaded=False
                )
                _set_message(payload, refused.message)
            await self._send(writer, refused.status, payload)
            return True
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            return await self._apply(
                fault, route, state, incoming, body, task or "chat", inputs, writer
            )
        finally:
            state.in_flight -= 1

    async def _apply(
        self,
        fault: Fault,
        route: Route,
        state: ProviderState,
        incoming: _Incoming,
        body: Any,
        task: str,
        inputs: dict[str, Any],
        writer: asyncio.StreamWriter,
    ) -> bool:
        scale = self.time_scale
        if fault.kind == "down":
            return False
        if fault.kind == "timeout":
            await self._sleep(fault.hang_s)
            return False
        await self._sleep(state.script.latency_s + fault.delay_s)
        if fault.kind == "error":
            return await self._send_error(
                writer, route, fault.status or 500, fault, fault.retry_after_s
            )
        if fault.kind == "malformed" or (fault.kind == "stream_malformed" and not route.stream):
            await self._send(writer, 200, b'{"choices": [{"message": {"content": "trunc')
            return True
        if route.kind == "health":
            if hostile.is_hostile(fault):
                await hostile.send(writer, fault, route, codec_for(route.protocol), None, scale)
            else:
                await self._send(writer, 200, codec_for(route.protocol).health_body())
            return True
        limit_headers, retry = self._take_limits(state, route, incoming.body)
        if retry is not None:
            limited = Fault(
                kind="error", status=429, retry_after_s=retry / scale, headers=limit_headers
            )
            return await self._send_error(writer, route, 429, limited, retry / scale)
        try:
            answer = self.responder(task, inputs, body if isinstance(body, dict) else {})
        except Exception as exc:
            log.warning("fault server responder failed for task %s: %s", task, type(exc).__name__)
            return await self._send_error(writer, route, 500, Fault(kind="error", status=500), None)
        self._serial += 1
        input_tokens = prompt_tokens(incoming.body)
        reply = Answer(
            route.model or "fault-model",
            answer,
            body,
            input_tokens,
            self._serial,
            truncated=fault.kind == "truncated",
        )
        codec = codec_for(route.protocol)
        if hostile.is_hostile(fault):
            await hostile.send(writer, fault, route, codec, reply, scale)
            return True
        if route.stream:
            frames = codec.stream_frames(reply)
            self._settle_tokens(state, input_tokens + max(1, sum(map(len, frames)) // 8))
            return await self._stream(
                writer, route, frames, fault, {**limit_headers, **fault.headers}
            )
        encoded = json.dumps(codec.success_body(reply)).encode()
        self._settle_tokens(state, input_tokens + max(1, len(encoded) // 8))
        if fault.kind == "slow_body":
            await self._trickle(writer, encoded, limit_headers, fault.duration_s * scale)
        elif fault.kind == "stream_cut":
            writer.write(self._head(200, {"content-type": "application/json"}, len(encoded)))
            writer.write(encoded[: len(encoded) // 2])
            await writer.drain()
            return False
        elif fault.kind == "stream_stall":
            writer.write(self._head(200, {"content-type": "application/json"}, len(encoded)))
            writer.write(encoded[: len(encoded) // 2])
            await writer.drain()
            await self._sleep(fault.hang_s)
            return False
        elif fault.kind == "stream_hold":  # held before the body: a body begun must not pause
            writer.write(self._head(200, {"content-type": "application/json"}, len(encoded)))
            await self._hold(writer)
            writer.write(encoded)
            await writer.drain()
        else:
            await self._send(writer, 200, encoded, {**limit_headers, **fault.headers})
        return True

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        route: Route,
        status: int,
        fault: Fault,
        retry_script_s: float | None,
    ) -> bool:
        codec = codec_for(route.protocol)
        real_status = codec.error_status(status, fault.overloaded)
        retry_s = None if retry_script_s is None else retry_script_s * self.time_scale
        headers: dict[str, str] = {}
        if retry_s is not None:
            headers.update(codec.retry_after_headers(retry_s, fault.retry_after_format))
        headers.update(fault.headers)
        await self._send(
            writer,
            real_status,
            codec.error_body(
                real_status,
                quota=fault.quota,
                retry_after_s=retry_s,
                overloaded=fault.overloaded,
            ),
            headers,
        )
        return True

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        route: Route,
        frames: list[bytes],
        fault: Fault,
        headers: Mapping[str, str],
    ) -> bool:
        """Send ``frames`` with chunked transfer encoding, one chunk each, the fault applied
        after half of them (a hold waits there for :meth:`release_held`); False when the
        connection must close (cut, stall)."""
        lines = [
            "HTTP/1.1 200 OK",
            f"content-type: {codec_for(route.protocol).stream_content_type}",
            "transfer-encoding: chunked",
            "cache-control: no-cache",
            "connection: keep-alive",
        ] + [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        half = max(1, len(frames) // 2)
        for index, frame in enumerate(frames):
            if index == half and fault.kind in (
                "stream_cut",
                "stream_stall",
                "stream_malformed",
                "stream_hold",
            ):
                if fault.kind == "stream_malformed":
                    frame = codec_for(route.protocol).malformed_frame()
                elif fault.kind == "stream_hold":
                    await self._hold(writer)
                else:
                    await writer.drain()
                    if fault.kind == "stream_stall":
                        await self._sleep(fault.hang_s)
                    return False
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            await writer.drain()
            if fault.kind == "slow_body":
                await asyncio.sleep(fault.duration_s * self.time_scale / len(frames))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _trickle(
        self,
        writer: asyncio.StreamWriter,
        payload: bytes,
        headers: Mapping[str, str],
        duration: float,
    ) -> None:
        writer.write(self._head(200, {"content-type": "application/json", **headers}, len(payload)))
        await writer.drain()
        chunks = 10
        size = max(1, len(payload) // chunks + 1)
        for offset in range(0, len(payload), size):
            await asyncio.sleep(duration / chunks)
            writer.write(payload[offset : offset + size])
            await writer.drain()

    # --- scripted rate limits ----------------------------------------------------------------------------------

    def _take_limits(
        self, state: ProviderState, route: Route, raw: bytes
    ) -> tuple[dict[str, str], float | None]:
        """Enforce the provider's rpm/tpm over a (scaled) one-minute window; headers or a retry delay."""
        limits = state.script.limits
        if limits is None:
            return {}, None
        now = time.monotonic()
        window = 60.0 * self.time_scale
        while state.window and state.window[0][0] <= now - window:
            state.window.popleft()
        used_requests = len(state.window)
        used_tokens = sum(tokens for _, tokens in state.window)
        needed = prompt_tokens(raw)
        over_rpm = limits.rpm is not None and used_requests >= limits.rpm
        over_tpm = limits.tpm is not None and used_tokens + needed > limits.tpm
        reset = (state.window[0][0] + window - now) if state.window else 0.0
        if over_rpm or over_tpm:
            exhausted = codec_for(route.protocol).rate_limit_headers(
                RateWindow(
                    rpm=limits.rpm,
                    rpm_left=0 if over_rpm else (limits.rpm or 0) - used_requests,
                    tpm=limits.tpm,
                    tpm_left=0 if over_tpm else max(0, (limits.tpm or 0) - used_tokens),
                    reset_requests_s=max(reset, 0.001),
                    reset_tokens_s=max(reset, 0.001),
                )
            )
            return exhausted, max(0.001, reset)
        state.window.append((now, 0))
        headers = codec_for(route.protocol).rate_limit_headers(
            RateWindow(
                rpm=limits.rpm,
                rpm_left=max(0, (limits.rpm or 0) - used_requests - 1),
                tpm=limits.tpm,
                tpm_left=max(0, (limits.tpm or 0) - used_tokens - needed),
                reset_requests_s=max(reset, 0.001),
                reset_tokens_s=max(reset, 0.001),
            )
        )
        return headers, None

    def _settle_tokens(self, state: ProviderState, tokens: int) -> None:
        if state.script.limits is not None and state.window:
            at, _ = state.window[-1]
            state.window[-1] = (at, tokens)


def _set_message(payload: dict[str, Any], message: str) -> None:
    """Put a refusal's reason where the protocol's error body keeps its message."""
    error = payload.get("error")
    if isinstance(error, dict):
        error["message"] = message
    else:
        payload["error"] = message
