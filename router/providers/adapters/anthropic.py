"""Anthropic Messages API: ``POST {base}/v1/messages``.

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01``; system prompts go
in the top-level ``system`` field; ``max_tokens`` is required. Structured
output forces a single tool whose ``input_schema`` is the response schema
(``tool_choice: {type: tool}``), the documented way to get JSON that follows a
schema; the tool call's ``input`` is the answer. Health: ``GET {base}/v1/models``.
A server without tools gets the schema in the prompt. No ``temperature`` is sent: the
Messages API (as its official SDK's request type defines it) has no such field and refuses it. ``stop_reason: max_tokens`` marks a
truncated answer.

Streaming (``stream: true``): server-sent events ``message_start`` (input usage),
``content_block_start``/``content_block_delta`` (``text_delta`` or, for the tool,
``input_json_delta``)/``content_block_stop``, ``message_delta`` (stop reason, output usage),
``message_stop``, with ``ping`` and ``error`` events possible anywhere.

Rate limits: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
headers, resets as RFC 3339 instants; a 503 is an overload, as a 529 is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from router.errors import ErrorClass, ProviderCallError
from router.fault.codecs.anthropic import AnthropicCodec
from router.providers.base import (
    CallSpec,
    Endpoint,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    plain_messages,
    split_system,
    usage_of,
)
from router.ratelimit_headers import (
    LimitReading,
    RateLimitInfo,
    lower_keys,
    parse_count,
    parse_rfc3339_delay,
    retry_after,
)
from router.wire import json_schema, schema_name

ANTHROPIC_VERSION = "2023-06-01"


def parse_anthropic_headers(headers: Mapping[str, str], now_wall: float) -> RateLimitInfo:
    h = lower_keys(headers)

    def reading(dimension: str) -> LimitReading:
        prefix = f"anthropic-ratelimit-{dimension}"
        return LimitReading(
            limit=parse_count(h.get(f"{prefix}-limit")),
            remaining=parse_count(h.get(f"{prefix}-remaining")),
            reset_s=parse_rfc3339_delay(h.get(f"{prefix}-reset"), now_wall),
        )

    tokens = reading("tokens")
    if not tokens.known:  # newer accounts report input and output tokens separately
        tokens = reading("input-tokens")
    return RateLimitInfo(
        retry_after_s=retry_after(h, now_wall), requests=reading("requests"), tokens=tokens
    )


class AnthropicAdapter(ProviderAdapter):
    kind = "anthropic"
    listed_at = 2
    codec = AnthropicCodec
    default_base_url = "https://api.anthropic.com"
    key_env = "ANTHROPIC_API_KEY"
    env_models = {1: "claude-haiku-4-5", 2: "claude-sonnet-4-5", 3: "claude-opus-4-1"}
    structured_modes = ("schema", "prompt")

    def classify_error(
        self, status: int, body: Any, rate_limits: RateLimitInfo
    ) -> ErrorClass | None:
        return ErrorClass.OVERLOAD if status == 503 else None

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def chat_call(
        self, cfg: Endpoint, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        system, rest = split_system(spec.messages)
        body: dict[str, Any] = {
            "model": spec.model,
            "max_tokens": spec.max_tokens or spec.default_max_tokens,
            "messages": plain_messages(rest),
        }
        if system is not None:
            body["system"] = system
        if stream:
            body["stream"] = True
        if spec.response_schema is not None and spec.structured == "schema":
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

    def parse_chat(self, body: Any) -> ParsedChat:
        blocks = body["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")
        usage = body.get("usage") or {}
        tokens = usage_of(usage.get("input_tokens"), usage.get("output_tokens"))
        stop = body.get("stop_reason")
        truncated = stop == "max_tokens"
        for block in blocks:
            if block.get("type") == "tool_use":
                return ParsedChat(json.dumps(block["input"]), tokens, truncated)
        text = "".join(b["text"] for b in blocks if b.get("type") == "text")
        if not text and stop == "refusal":
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the model refused")
        return ParsedChat(text, tokens, truncated)

    def stream_decoder(self) -> StreamDecoder:
        return AnthropicStreamDecoder()

    def health_call(self, cfg: Endpoint, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/v1/models", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_anthropic_headers(headers, now_wall)


class AnthropicStreamDecoder(StreamDecoder):
    """Messages-API stream events up to ``message_stop``; a tool block's JSON is the answer."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._tool_json: list[str] = []
        self._tool = False
        self._input_tokens: Any = None
        self._output_tokens: Any = None
        self._stop: str | None = None
        self._ended = False

    def feed(self, event: str, data: str) -> str:
        payload = json.loads(data)
        kind = payload["type"]
        if kind == "error":
            error_type = (payload.get("error") or {}).get("type")
            error_class = (
                ErrorClass.OVERLOAD if error_type == "overloaded_error" else (ErrorClass.SERVER)
            )
            raise ProviderCallError(
                error_class, f"the stream carried an error event ({error_type})"
            )
        if kind == "message_start":
            usage = payload["message"].get("usage") or {}
            self._input_tokens = usage.get("input_tokens")
            self._output_tokens = usage.get("output_tokens")
        elif kind == "content_block_start":
            if payload["content_block"].get("type") == "tool_use":
                self._tool = True
        elif kind == "content_block_delta":
            delta = payload["delta"]
            if delta.get("type") == "text_delta":
                self._text.append(delta["text"])
                return str(delta["text"])
            if delta.get("type") == "input_json_delta":
                self._tool_json.append(delta["partial_json"])
                return str(delta["partial_json"])
        elif kind == "message_delta":
            self._stop = (payload.get("delta") or {}).get("stop_reason") or self._stop
            usage = payload.get("usage") or {}
            if usage.get("output_tokens") is not None:
                self._output_tokens = usage["output_tokens"]
        elif kind == "message_stop":
            self._ended = True
        return ""

    def result(self) -> ParsedChat:
        if not self._ended:
            raise StreamEndedEarly("the stream ended before message_stop")
        tokens = usage_of(self._input_tokens, self._output_tokens)
        truncated = self._stop == "max_tokens"
        if self._tool:
            return ParsedChat("".join(self._tool_json) or "{}", tokens, truncated)
        text = "".join(self._text)
        if not text and self._stop == "refusal":
            raise ProviderCallError(ErrorClass.INVALID_OUTPUT, "the model refused")
        return ParsedChat(text, tokens, truncated)
