"""Sends an adapter's calls over the shared ``httpx.AsyncClient`` and classifies what comes back.

No SDK and no hidden retries: one call is one HTTP request (the transport is
built with ``retries=0``); retrying is the router's decision. The API key is
read from its environment variable at call time and exists only in the
outgoing request's headers: it is never stored, logged or put in an error
(httpx exceptions, which name the URL, are reduced to their class name).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any

import httpx

from router.classify import classify_status, classify_transport_error, status_detail
from router.clock import Clock
from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.providers.anthropic import AnthropicAdapter
from router.providers.base import CallSpec, HttpCall, ProviderAdapter, ProviderReply
from router.providers.gemini import GeminiAdapter
from router.providers.ollama import OllamaNativeAdapter
from router.providers.openai_compat import OpenAICompatAdapter
from router.ratelimit_headers import RateLimitInfo
from router.wire import TASK_HEADER

USER_AGENT = "research-workbench-router/0.1"


def make_adapter(kind: str) -> ProviderAdapter:
    if kind in ("openai", "azure", "github", "ollama"):
        return OpenAICompatAdapter(kind)
    if kind == "anthropic":
        return AnthropicAdapter()
    if kind == "gemini":
        return GeminiAdapter()
    if kind == "ollama_native":
        return OllamaNativeAdapter()
    raise ValueError(f"unknown provider kind {kind!r}")


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


class HttpProvider:
    def __init__(
        self,
        cfg: ProviderConfig,
        client: httpx.AsyncClient,
        clock: Clock,
        environ: Mapping[str, str] | None = None,
        adapter: ProviderAdapter | None = None,
    ) -> None:
        self.cfg = cfg
        self.name: str = cfg.name
        self.kind: str = cfg.kind
        self.adapter = adapter or make_adapter(cfg.kind)
        self._client = client
        self._clock = clock
        self._environ = environ if environ is not None else os.environ

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

    def build_chat_call(self, spec: CallSpec) -> HttpCall:
        return self.adapter.chat_call(self.cfg, spec, self._api_key())

    async def _send(self, call: HttpCall, timeout_s: float, task: str | None) -> httpx.Response:
        headers = {"User-Agent": USER_AGENT, **call.headers}
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
            request = self._client.build_request(
                call.method, call.url, headers=headers, json=call.json, timeout=timeouts
            )
        except httpx.InvalidURL:
            raise ProviderCallError(
                ErrorClass.CONNECTION, "the base_url is not a usable URL — correct it"
            ) from None
        try:
            async with asyncio.timeout(timeout_s):  # the whole exchange, slow bodies included
                return await self._client.send(request)
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

    def _failure(self, response: httpx.Response) -> ProviderCallError:
        body = _json_or_none(response.content)
        limits = self.adapter.rate_limits(response.headers, body, self._clock.wall())
        error_class = classify_status(self.kind, response.status_code, body, limits)
        return ProviderCallError(
            error_class,
            status_detail(response.status_code, body),
            status=response.status_code,
            rate_limits=limits,
        )

    async def chat(self, spec: CallSpec, timeout_s: float) -> ProviderReply:
        response = await self._send(self.build_chat_call(spec), timeout_s, spec.task)
        if response.status_code >= 300:
            raise self._failure(response)
        limits = self.adapter.rate_limits(response.headers, None, self._clock.wall())
        body = _json_or_none(response.content)
        if body is None:
            raise ProviderCallError(
                ErrorClass.BAD_RESPONSE,
                f"HTTP {response.status_code} with a body that is not JSON",
                status=response.status_code,
                rate_limits=limits,
            )
        try:
            content, usage = self.adapter.parse_chat(body)
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
        return ProviderReply(content, usage, limits, response.status_code)

    async def health(self, timeout_s: float) -> RateLimitInfo:
        call = self.adapter.health_call(self.cfg, self._api_key())
        if call is None:
            return RateLimitInfo()
        response = await self._send(call, timeout_s, None)
        if response.status_code >= 300:
            raise self._failure(response)
        return self.adapter.rate_limits(response.headers, None, self._clock.wall())
