"""Ollama's native chat API: ``POST {host}/api/chat`` with ``stream: false``.

Structured output passes the JSON schema as ``format``; temperature and the
output budget go in ``options`` (``num_predict``). Usage comes from
``prompt_eval_count`` and ``eval_count``. Health: ``GET {host}/api/tags``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from router.config import ProviderConfig
from router.models import Usage
from router.providers.base import CallSpec, HttpCall, ProviderAdapter, plain_messages, usage_of
from router.ratelimit_headers import RateLimitInfo, parse_generic
from router.wire import json_schema


class OllamaNativeAdapter(ProviderAdapter):
    kind = "ollama_native"

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def chat_call(self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None) -> HttpCall:
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": plain_messages(spec.messages),
            "stream": False,
        }
        options: dict[str, Any] = {}
        if spec.temperature is not None:
            options["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            options["num_predict"] = spec.max_tokens
        if options:
            body["options"] = options
        if spec.response_schema is not None:
            body["format"] = json_schema(spec.response_schema)
        return HttpCall("POST", f"{cfg.resolved_base_url}/api/chat", self._headers(api_key), body)

    def parse_chat(self, body: Any) -> tuple[str, Usage]:
        content = body["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not text")
        return content, usage_of(body.get("prompt_eval_count"), body.get("eval_count"))

    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/api/tags", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_generic(headers, now_wall)
