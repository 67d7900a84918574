"""Gemini ``generateContent``: ``POST {base}/v1beta/models/{model}:generateContent``.

The key goes in the ``x-goog-api-key`` header (never the ``?key=`` query, which
would put it in URLs and logs). Roles are ``user``/``model``; system prompts go
in ``systemInstruction``. Structured output: ``generationConfig.responseMimeType:
application/json`` with ``responseJsonSchema``. Rate-limit signals come in the
error body (``RetryInfo``, ``QuotaFailure``). Health: ``GET {base}/v1beta/models``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.models import Usage
from router.providers.base import CallSpec, HttpCall, ProviderAdapter, split_system, usage_of
from router.ratelimit_headers import RateLimitInfo, parse_gemini
from router.wire import json_schema


class GeminiAdapter(ProviderAdapter):
    kind = "gemini"

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def chat_call(self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None) -> HttpCall:
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
        if spec.response_schema is not None:
            generation["responseMimeType"] = "application/json"
            generation["responseJsonSchema"] = json_schema(spec.response_schema)
        if generation:
            body["generationConfig"] = generation
        model = quote(spec.model.removeprefix("models/"), safe="-._")
        url = f"{cfg.resolved_base_url}/v1beta/models/{model}:generateContent"
        return HttpCall("POST", url, self._headers(api_key), body)

    def parse_chat(self, body: Any) -> tuple[str, Usage]:
        usage = body.get("usageMetadata") or {}
        output = (usage.get("candidatesTokenCount") or 0) + (usage.get("thoughtsTokenCount") or 0)
        tokens = usage_of(usage.get("promptTokenCount"), output)
        candidates = body.get("candidates")
        if not candidates:
            feedback = body.get("promptFeedback") or {}
            if "blockReason" in feedback:
                raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the prompt was blocked")
            raise KeyError("candidates")
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
        if not text and candidate.get("finishReason") not in (None, "STOP", "MAX_TOKENS"):
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "no answer (finish reason not STOP)")
        return text, tokens

    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/v1beta/models", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_gemini(headers, body, now_wall)
