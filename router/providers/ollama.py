"""Ollama's native chat API: ``POST {host}/api/chat`` with ``stream: false``.

Structured output passes the JSON schema as ``format``; temperature and the
output budget go in ``options`` (``num_predict``). Usage comes from
``prompt_eval_count`` and ``eval_count``. Health: ``GET {host}/api/tags``.
``format: "json"`` is the plain JSON mode; ``done_reason: length`` marks a truncated answer.

Streaming (``stream: true``): newline-delimited JSON objects, each with the next piece of
``message.content``; the last has ``done: true``, the done reason and the counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.providers.base import (
    CallSpec,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    plain_messages,
    usage_of,
)
from router.ratelimit_headers import RateLimitInfo, parse_generic
from router.wire import json_schema


class OllamaNativeAdapter(ProviderAdapter):
    kind = "ollama_native"
    framing = "ndjson"

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def chat_call(
        self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": plain_messages(spec.messages),
            "stream": stream,
        }
        options: dict[str, Any] = {}
        if spec.temperature is not None:
            options["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            options["num_predict"] = spec.max_tokens
        if options:
            body["options"] = options
        if spec.response_schema is not None and spec.structured == "schema":
            body["format"] = json_schema(spec.response_schema)
        elif spec.response_schema is not None and spec.structured == "json_object":
            body["format"] = "json"
        return HttpCall("POST", f"{cfg.resolved_base_url}/api/chat", self._headers(api_key), body)

    def parse_chat(self, body: Any) -> ParsedChat:
        content = body["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not text")
        return ParsedChat(
            content,
            usage_of(body.get("prompt_eval_count"), body.get("eval_count")),
            body.get("done_reason") == "length",
        )

    def stream_decoder(self) -> StreamDecoder:
        return OllamaStreamDecoder()

    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", f"{cfg.resolved_base_url}/api/tags", self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_generic(headers, now_wall)


class OllamaStreamDecoder(StreamDecoder):
    """NDJSON chat chunks until the one with ``done: true``."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._last: dict[str, Any] | None = None

    def feed(self, event: str, data: str) -> str:
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise TypeError("a stream line is not an object")
        if "error" in chunk:
            raise ProviderCallError(ErrorClass.SERVER, "the stream carried an error line")
        text = (chunk.get("message") or {}).get("content") or ""
        if not isinstance(text, str):
            raise TypeError("content is not text")
        self._parts.append(text)
        if chunk.get("done"):
            self._last = chunk
        return text

    def result(self) -> ParsedChat:
        last = self._last
        if last is None:
            raise StreamEndedEarly("the stream ended before its done line")
        return ParsedChat(
            "".join(self._parts),
            usage_of(last.get("prompt_eval_count"), last.get("eval_count")),
            last.get("done_reason") == "length",
        )
