"""Sends an adapter's calls over the shared ``httpx.AsyncClient`` and classifies what comes back.

No SDK and no hidden retries: one call is one HTTP request (the transport is
built with ``retries=0``); retrying is the router's decision. The API key is
read from its environment variable at call time and exists only in the
outgoing request's headers: it is never stored, logged or put in an error
(httpx exceptions, which name the URL, are reduced to their class name).

The one exception to "one call, one request" is learning a server's structured-output
capability: when a server refuses the schema mode (an error whose body names the structured-output
fields), the same call is asked again at once in the next mode of the
adapter's ladder (``json_schema`` → ``json_object`` + schema in the prompt → the schema in the
prompt alone). The mode that works is remembered per provider and model
(:mod:`router.capabilities`), so this happens once, not per request.

A call made while a stream sink is active (:mod:`router.streaming`) asks for the API's
streamed answer and hands each piece of text to the sink as it arrives.

Every body is read within the provider's bounds (:mod:`router.bounded_read`): inflated at most
so far, its lines and its whole at most so long, trickling cut; an answer past them fails the
call (OVERSIZED, or a TIMEOUT for trickling), so a provider that sends one is faulty, never
healthy.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx
import httpx_sse

from router.bounded_read import ACCEPT_ENCODING, BoundedBody, ReadLimits, oversized
from router.capabilities import Capability, StructuredCapabilities
from router.classify import classify_answer, classify_transport_error, status_detail
from router.clock import Clock
from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.providers.base import (
    CallSpec,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    ProviderReply,
    StreamEndedEarly,
    StructuredMode,
)
from router.providers.registry import make_adapter
from router.ratelimit_headers import RateLimitInfo
from router.streaming import StreamEvent, StreamSink, active_sink, stream_events
from router.wire import TASK_HEADER, with_schema_instruction

log = logging.getLogger(__name__)

USER_AGENT = "research-workbench-router/0.1"


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        return None


class HttpProvider:
    def __init__(
        self,
        cfg: ProviderConfig,
        client: httpx.AsyncClient,
        clock: Clock,
        environ: Mapping[str, str] | None = None,
        adapter: ProviderAdapter | None = None,
        capabilities: StructuredCapabilities | None = None,
    ) -> None:
        self.cfg = cfg
        self.name: str = cfg.name
        self.kind: str = cfg.kind
        self.adapter = adapter or make_adapter(cfg.kind)
        self._client = client
        self._clock = clock
        self._environ = environ if environ is not None else os.environ
        self.capabilities = capabilities or StructuredCapabilities()
        self._limits = ReadLimits.of(cfg)

    @property
    def has_health_probe(self) -> bool:
        return self.cfg.probe == "health" and self.adapter.health_call(self.cfg, None) is not None

    def _api_key(self) -> str | None:
        if self.cfg.api_key_env is None:
            return None
        value = self._environ.get(self.cfg.api_key_env, "").strip()
        return value or None

    def key_problem(self) -> str | None:
        if self.cfg.api_key_env is not None and self._api_key() is None:
            return f"environment variable {self.cfg.api_key_env} is not set"
        return None

    def build_chat_call(self, spec: CallSpec, *, stream: bool = False) -> HttpCall:
        return self.adapter.chat_call(self.cfg, spec, self._api_key(), stream=stream)

    def structured_modes(self) -> dict[str, StructuredMode]:
        """The structured-output mode learnt for each model that refused the schema mode."""
        return self.capabilities.modes(self.name)

    def _request(self, call: HttpCall, timeout_s: float, task: str | None) -> httpx.Request:
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **call.headers}
        if task is not None:
            headers[TASK_HEADER] = task
        cfg = self.cfg
        timeouts = httpx.Timeout(  # each phase its own limit, none beyond the whole call's
            connect=min(cfg.connect_timeout_s, timeout_s),
            read=min(cfg.read_timeout_s, timeout_s),
            write=min(cfg.write_timeout_s, timeout_s),
            pool=min(cfg.pool_timeout_s, timeout_s),
        )
        try:
            return self._client.build_request(
                call.method, call.url, headers=headers, json=call.json, timeout=timeouts
            )
        except httpx.InvalidURL:
            raise ProviderCallError(
                ErrorClass.CONNECTION, "the base_url is not a usable URL — correct it"
            ) from None

    async def _send(
        self, call: HttpCall, timeout_s: float, task: str | None
    ) -> tuple[httpx.Response, bytes]:
        """The answer to ``call`` and its whole body, read within the provider's bounds."""
        request = self._request(call, timeout_s, task)
        try:
            async with asyncio.timeout(timeout_s):  # the whole exchange, slow bodies included
                response = await self._client.send(request, stream=True)
                try:
                    return response, await self._read_whole(response)
                finally:
                    await response.aclose()
        except ProviderCallError:
            raise
        except TimeoutError:
            raise ProviderCallError(
                ErrorClass.TIMEOUT, f"no complete answer within {timeout_s:.1f}s"
            ) from None
        except httpx.HTTPError as exc:
            error_class, detail = classify_transport_error(exc)
            raise ProviderCallError(error_class, detail) from None
        except Exception as exc:  # e.g. an ExceptionGroup from the connect of an unusable address
            raise ProviderCallError(
                ErrorClass.CONNECTION, f"cannot connect ({type(exc).__name__}): check the base_url"
            ) from None

    async def _read_whole(self, response: httpx.Response) -> bytes:
        """``response``'s whole body, read within the provider's bounds."""
        try:
            return await BoundedBody(response, self._limits, self._clock).read()
        except ProviderCallError as exc:
            raise self._with_status(exc, response) from None

    def _with_status(self, exc: ProviderCallError, response: httpx.Response) -> ProviderCallError:
        limits = self.adapter.rate_limits(response.headers, None, self._clock.wall())
        return ProviderCallError(
            exc.error_class,
            f"HTTP {response.status_code}: {exc.detail}",
            status=response.status_code,
            rate_limits=limits,
        )

    def _failure(self, response: httpx.Response, content: bytes) -> ProviderCallError:
        body = _json_or_none(content)
        limits = self.adapter.rate_limits(response.headers, body, self._clock.wall())
        error_class = classify_answer(self.adapter, response.status_code, body, limits)
        return ProviderCallError(
            error_class,
            status_detail(response.status_code, body),
            status=response.status_code,
            rate_limits=limits,
        )

    async def chat(self, spec: CallSpec, timeout_s: float) -> ProviderReply:
        if spec.response_schema is None:
            return await self._chat_once(spec, timeout_s)
        ladder = self.adapter.structured_modes
        known = self.capabilities.get(self.name, spec.model)
        mode = known.mode if known is not None and known.mode in ladder else ladder[0]
        deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            return await self._chat_once(self._in_mode(spec, mode), timeout_s)
        except _StructureRefused as refused:
            if known is not None and known.settled:
                raise refused.error from None
            first = refused.error
        for lower in ladder[ladder.index(mode) + 1 :]:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            try:
                reply = await self._chat_once(self._in_mode(spec, lower), left)
            except _StructureRefused:
                continue
            except ProviderCallError:
                # Not refused: the server took this mode and failed at something else (a slow
                # generation timing out, an overloaded server). The schema mode's refusal was
                # about the schema after all, so this mode is learnt; the call still failed.
                self._learn(spec.model, mode, lower)
                raise
            self._learn(spec.model, mode, lower)
            return reply
        # every lower mode was refused as well: the refusal was not about the schema
        self.capabilities.remember(self.name, spec.model, Capability(mode, settled=True))
        raise first

    def _learn(self, model: str, refused: StructuredMode, accepted: StructuredMode) -> None:
        log.info(
            "provider %s refused %s output for %s; it is asked in %s mode from now on",
            self.name,
            refused,
            model,
            accepted,
        )
        self.capabilities.remember(self.name, model, Capability(accepted))

    @staticmethod
    def _in_mode(spec: CallSpec, mode: StructuredMode) -> CallSpec:
        if mode == "schema" or spec.response_schema is None:
            return spec
        messages = with_schema_instruction(spec.messages, spec.response_schema)
        return replace(spec, structured=mode, messages=messages)

    def _refusal(
        self, spec: CallSpec, response: httpx.Response, content: bytes
    ) -> ProviderCallError:
        """The failure of a non-2xx answer, marked when it may be a refusal of the schema mode."""
        error = self._failure(response, content)
        if spec.response_schema is not None and _refuses_structure(response.status_code, content):
            return _StructureRefused(error)
        return error

    async def _chat_once(self, spec: CallSpec, timeout_s: float) -> ProviderReply:
        sink = active_sink()
        if sink is not None:
            return await self._chat_streamed(spec, timeout_s, sink)
        response, content = await self._send(self.build_chat_call(spec), timeout_s, spec.task)
        if response.status_code >= 300:
            raise self._refusal(spec, response, content)
        limits = self.adapter.rate_limits(response.headers, None, self._clock.wall())
        body = _json_or_none(content)
        if body is None:
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"HTTP {response.status_code} with a body that is not JSON",
                status=response.status_code,
                rate_limits=limits,
            )
        try:
            parsed = self.adapter.parse_chat(body)
        except ProviderCallError as exc:
            raise ProviderCallError(
                exc.error_class, exc.detail, status=response.status_code, rate_limits=limits
            ) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"HTTP {response.status_code} with an unexpected {self.kind} response shape",
                status=response.status_code,
                rate_limits=limits,
            ) from None
        if len(parsed.content) > self._limits.answer_chars:
            raise self._with_status(self._long_answer(), response)
        return _reply(parsed, limits, response.status_code)

    def _long_answer(self) -> ProviderCallError:
        return oversized(
            f"the answer passed max_answer_chars ({self._limits.answer_chars:,} characters)"
        )

    async def _chat_streamed(
        self, spec: CallSpec, timeout_s: float, sink: StreamSink
    ) -> ProviderReply:
        request = self._request(self.build_chat_call(spec, stream=True), timeout_s, spec.task)
        tap = _Tap(sink, self.name, spec.model)
        try:
            async with asyncio.timeout(timeout_s):
                response = await self._client.send(request, stream=True)
                try:
                    if response.status_code >= 300:
                        raise self._refusal(spec, response, await self._read_whole(response))
                    limits = self.adapter.rate_limits(response.headers, None, self._clock.wall())
                    parsed = await self._read_stream(response, tap, limits)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise tap.abort(
                ProviderCallError(ErrorClass.TIMEOUT, f"no complete answer within {timeout_s:.1f}s")
            ) from None
        except httpx.HTTPError as exc:
            error_class, detail = classify_transport_error(exc)
            raise tap.abort(ProviderCallError(error_class, detail)) from None
        except ProviderCallError as exc:
            raise tap.abort(exc) from None
        return _reply(parsed, limits, response.status_code)

    async def _read_stream(
        self, response: httpx.Response, tap: _Tap, limits: RateLimitInfo
    ) -> ParsedChat:
        decoder = self.adapter.stream_decoder()
        status = response.status_code
        chars = 0
        try:
            body = BoundedBody(response, self._limits, self._clock).as_stream()
            async for event, data in stream_events(
                body, self.adapter.framing, self.cfg.stream_first_byte_s, self.cfg.stream_idle_s
            ):
                piece = decoder.feed(event, data)
                chars += len(piece)
                if chars > self._limits.answer_chars:
                    raise self._long_answer()
                tap.text(piece)
            return decoder.result()
        except ProviderCallError as exc:
            raise ProviderCallError(
                exc.error_class, exc.detail, status=status, rate_limits=limits
            ) from None
        except httpx_sse.SSEError:
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"HTTP {status} streamed as {response.headers.get('content-type', '?')}, not SSE",
                status=status,
                rate_limits=limits,
            ) from None
        except StreamEndedEarly as exc:
            raise ProviderCallError(
                ErrorClass.CONNECTION, str(exc), status=status, rate_limits=limits
            ) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"HTTP {status} with a malformed {self.kind} stream chunk",
                status=status,
                rate_limits=limits,
            ) from None

    async def health(self, timeout_s: float) -> RateLimitInfo:
        call = self.adapter.health_call(self.cfg, self._api_key())
        if call is None:
            return RateLimitInfo()
        response, content = await self._send(call, timeout_s, None)
        if response.status_code >= 300:
            raise self._failure(response, content)
        return self.adapter.rate_limits(response.headers, None, self._clock.wall())


class _StructureRefused(ProviderCallError):
    """A non-2xx answer that may refuse the structured-output mode; ``error`` is the failure."""

    def __init__(self, error: ProviderCallError) -> None:
        super().__init__(
            error.error_class, error.detail, status=error.status, rate_limits=error.rate_limits
        )
        self.error = error


_STRUCTURE_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "responsejsonschema",
    "responsemimetype",
    "tool_choice",
    "schema",
)


def _refuses_structure(status: int, content: bytes) -> bool:
    """Whether a failed answer may be a refusal of the structured-output request: a 4xx or 5xx
    whose body names the structured-output fields. Servers word it in many ways and statuses
    (llama.cpp's server answers ``json_schema`` with a 500 saying "Input should be 'text' or
    'json_object'" at ``response_format.type``), so the body, not the status, decides; a
    refusal is confirmed only when a lower mode then succeeds.
    """
    if status < 400 or status in (401, 403, 404, 408, 429):
        return False
    text = content[:8192].decode("utf-8", "replace").lower()
    return any(word in text for word in _STRUCTURE_WORDS)


def _reply(parsed: ParsedChat, limits: RateLimitInfo, status: int) -> ProviderReply:
    return ProviderReply(parsed.content, parsed.usage, limits, status, parsed.truncated)


class _Tap:
    """One provider's stream as the sink sees it: ``start`` before its first piece of text,
    and ``abort`` on failure only when something was streamed (a failure before that is an
    ordinary failure: the sink never heard of this provider). A sink that fails is logged once
    and told nothing more of this stream: a broken display must neither fail the provider's call
    nor log a traceback for every piece of a long answer."""

    def __init__(self, sink: StreamSink, provider: str, model: str) -> None:
        self._sink = sink
        self._provider = provider
        self._model = model
        self._began = False
        self._broken = False

    def text(self, piece: str) -> None:
        if not self._began:
            self._began = True
            self._deliver(StreamEvent("start", self._provider, self._model))
        if piece:
            self._deliver(StreamEvent("text", self._provider, self._model, piece))

    def abort(self, error: ProviderCallError) -> ProviderCallError:
        """Void what this provider streamed; returns ``error`` for the caller to raise."""
        if self._began and not isinstance(error, _StructureRefused):
            self._deliver(StreamEvent("abort", self._provider, self._model, error.detail))
        return error

    def _deliver(self, event: StreamEvent) -> None:
        if self._broken:
            return
        try:
            self._sink(event)
        except Exception:  # noqa: BLE001 - a broken display must not fail the provider's call
            self._broken = True
            log.exception(
                "stream sink failed on a %s event; it hears no more of this stream", event.kind
            )
