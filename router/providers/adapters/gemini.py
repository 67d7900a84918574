"""Gemini ``generateContent``: ``POST {base}/v1beta/models/{model}:generateContent``.

The key goes in the ``x-goog-api-key`` header (never the ``?key=`` query, which
would put it in URLs and logs). Roles are ``user``/``model``; system prompts go
in ``systemInstruction``. Structured output: ``generationConfig.responseMimeType:
application/json`` with ``responseJsonSchema``. Rate-limit signals come in the
error body (``RetryInfo``, ``QuotaFailure``). Health: ``GET {base}/v1beta/models``.
``finishReason: MAX_TOKENS`` marks a truncated answer.

Rate limits come in the error body, not in headers: ``google.rpc.RetryInfo.retryDelay``
(``"34s"``) says when to retry, and a ``QuotaFailure`` naming a per-day quota is a spent quota,
not a rate limit. A 400 whose ``ErrorInfo`` reason is ``API_KEY_INVALID`` is a bad key.

Streaming: ``POST …:streamGenerateContent?alt=sse``; each server-sent event is a whole
``GenerateContentResponse`` holding the next piece of text; the last carries ``finishReason``
and ``usageMetadata``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from router.errors import ErrorClass, ProviderCallError
from router.fault.codecs.gemini import GeminiCodec
from router.models import Usage
from router.providers.base import (
    CallSpec,
    Endpoint,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    split_system,
    usage_of,
)
from router.ratelimit_headers import RateLimitInfo, lower_keys, parse_seconds, retry_after
from router.wire import json_schema


def gemini_details(body: Any) -> list[dict[str, Any]]:
    """The ``error.details`` entries of a Google-style error body (``[]`` for any other shape)."""
    if not isinstance(body, dict):
        return []
    error = body.get("error")
    if isinstance(error, dict):
        details = error.get("details")
        if isinstance(details, list):
            return [d for d in details if isinstance(d, dict)]
    return []


def parse_gemini_retry_delay(body: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` from a Gemini error body (``"34s"`` or ``{"seconds": 34}``)."""
    for detail in gemini_details(body):
        if not str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str):
            text = delay.strip()
            if text.endswith("s") and not text.endswith(("ms", "us", "ns")):
                return parse_seconds(text[:-1])
            return None
        if isinstance(delay, dict):
            seconds, nanos = delay.get("seconds", 0), delay.get("nanos", 0)
            if isinstance(seconds, (int, float, str)) and isinstance(nanos, (int, float)):
                base = parse_seconds(str(seconds))
                return None if base is None else base + float(nanos) / 1e9
    return None


def gemini_quota_is_daily(body: Any) -> bool:
    """True when a Gemini 429 names a per-day quota (``QuotaFailure`` with a ``...PerDay...`` quota id)."""
    for detail in gemini_details(body):
        if not str(detail.get("@type", "")).endswith("google.rpc.QuotaFailure"):
            continue
        for violation in detail.get("violations") or []:
            if (
                isinstance(violation, dict)
                and "perday" in str(violation.get("quotaId", "")).lower()
            ):
                return True
    return False


def parse_gemini(headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
    retry = parse_gemini_retry_delay(body)
    if retry is None:
        retry = retry_after(lower_keys(headers), now_wall)
    return RateLimitInfo(retry_after_s=retry, quota_exhausted=gemini_quota_is_daily(body))


def _error_reason(body: Any) -> str | None:
    for detail in gemini_details(body):
        if str(detail.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = detail.get("reason")
            return reason if isinstance(reason, str) else None
    return None


def _error_status(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    status = error.get("status") if isinstance(error, dict) else None
    return status if isinstance(status, str) else None


class GeminiAdapter(ProviderAdapter):
    kind = "gemini"
    listed_at = 3
    codec = GeminiCodec
    default_base_url = "https://generativelanguage.googleapis.com"
    key_env = "GEMINI_API_KEY"
    env_models = {1: "gemini-2.5-flash-lite", 2: "gemini-2.5-flash", 3: "gemini-2.5-pro"}

    def classify_error(
        self, status: int, body: Any, rate_limits: RateLimitInfo
    ) -> ErrorClass | None:
        """A spent per-day quota is a QUOTA, not a rate limit; a 400 naming an invalid key is
        a misconfiguration."""
        limited = status == 429 or _error_status(body) == "RESOURCE_EXHAUSTED"
        if limited and (rate_limits.quota_exhausted or gemini_quota_is_daily(body)):
            return ErrorClass.QUOTA
        if status == 400 and _error_reason(body) == "API_KEY_INVALID":
            return ErrorClass.PERMANENT
        return None

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def chat_call(
        self, cfg: Endpoint, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        system, rest = split_system(spec.messages)
        body: dict[str, Any] = {
            "contents": [
                {
                    "role": "model" if m.role == "assistant" else "user",
                    "parts": [{"text": m.content}],
                }
                for m in rest
            ],
        }
        if system is not None:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        generation: dict[str, Any] = {}
        if spec.temperature is not None:
            generation["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            generation["maxOutputTokens"] = spec.max_tokens
        if spec.response_schema is not None and spec.structured != "prompt":
            generation["responseMimeType"] = "application/json"
            if spec.structured == "schema":
                generation["responseJsonSchema"] = json_schema(spec.response_schema)
        if generation:
            body["generationConfig"] = generation
        model = quote(spec.model.removeprefix("models/"), safe="-._")
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = f"{cfg.resolved_base_url}/v1beta/models/{model}:{method}"
        return HttpCall("POST", url, self._headers(api_key), body)

    def parse_chat(self, body: Any) -> ParsedChat:
        tokens = _usage(body)
        candidates = body.get("candidates")
        if not candidates:
            feedback = body.get("promptFeedback") or {}
            if "blockReason" in feedback:
                raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the prompt was blocked")
            raise KeyError("candidates")
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
        finish = candidate.get("finishReason")
        if not text and finish not in (None, "STOP", "MAX_TOKENS"):
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "no answer (finish reason not STOP)")
        return ParsedChat(text, tokens, finish == "MAX_TOKENS")

    def stream_decoder(self) -> StreamDecoder:
        return GeminiStreamDecoder()

    def health_call(self, cfg: Endpoint, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/v1beta/models", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_gemini(headers, body, now_wall)


def _usage(body: Any) -> Usage:
    usage = body.get("usageMetadata") or {}
    output = (usage.get("candidatesTokenCount") or 0) + (usage.get("thoughtsTokenCount") or 0)
    return usage_of(usage.get("promptTokenCount"), output)


class GeminiStreamDecoder(StreamDecoder):
    """``GenerateContentResponse`` events until one carries a ``finishReason``."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._finish: str | None = None

    def feed(self, event: str, data: str) -> str:
        body = json.loads(data)
        if "error" in body:
            raise ProviderCallError(ErrorClass.SERVER, "the stream carried an error event")
        if body.get("usageMetadata"):
            self._usage = _usage(body)
        candidates = body.get("candidates") or []
        if not candidates:
            if "blockReason" in (body.get("promptFeedback") or {}):
                raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the prompt was blocked")
            return ""
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
        self._parts.append(text)
        if candidate.get("finishReason"):
            self._finish = candidate["finishReason"]
        return text

    def result(self) -> ParsedChat:
        if self._finish is None:
            raise StreamEndedEarly("the stream ended before a finishReason")
        text = "".join(self._parts)
        if not text and self._finish not in ("STOP", "MAX_TOKENS"):
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "no answer (finish reason not STOP)")
        return ParsedChat(text, self._usage, self._finish == "MAX_TOKENS")
