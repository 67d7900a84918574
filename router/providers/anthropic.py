"""Anthropic Messages API: ``POST {base}/v1/messages``.

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01``; system prompts go
in the top-level ``system`` field; ``max_tokens`` is required. Structured
output forces a single tool whose ``input_schema`` is the response schema
(``tool_choice: {type: tool}``), the documented way to get JSON that follows a
schema; the tool call's ``input`` is the answer. Health: ``GET {base}/v1/models``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.models import Usage
from router.providers.base import (
    CallSpec,
    HttpCall,
    ProviderAdapter,
    plain_messages,
    split_system,
    usage_of,
)
from router.ratelimit_headers import RateLimitInfo, parse_anthropic_headers
from router.wire import json_schema, schema_name

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicAdapter(ProviderAdapter):
    kind = "anthropic"

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def chat_call(self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None) -> HttpCall:
        system, rest = split_system(spec.messages)
        body: dict[str, Any] = {
            "model": spec.model,
            "max_tokens": spec.max_tokens or spec.default_max_tokens,
            "messages": plain_messages(rest),
        }
        if system is not None:
            body["system"] = system
        if spec.temperature is not None:
            body["temperature"] = min(spec.temperature, 1.0)  # Anthropic's range is 0..1
        if spec.response_schema is not None:
            name = schema_name(spec.response_schema)
            body["tools"] = [
                {
                    "name": name,
                    "description": "Give the answer as structured data.",
                    "input_schema": json_schema(spec.response_schema),
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": name}
        return HttpCall(
            "POST", f"{cfg.resolved_base_url}/v1/messages", self._headers(api_key), body
        )

    def parse_chat(self, body: Any) -> tuple[str, Usage]:
        blocks = body["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")
        usage = body.get("usage") or {}
        tokens = usage_of(usage.get("input_tokens"), usage.get("output_tokens"))
        for block in blocks:
            if block.get("type") == "tool_use":
                return json.dumps(block["input"]), tokens
        text = "".join(b["text"] for b in blocks if b.get("type") == "text")
        if not text and body.get("stop_reason") == "refusal":
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the model refused")
        return text, tokens

    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/v1/models", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_anthropic_headers(headers, now_wall)
