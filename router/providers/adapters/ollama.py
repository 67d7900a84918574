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
from urllib.parse import urlsplit

from router.errors import ErrorClass, ProviderCallError
from router.fault.codecs.ollama import OllamaCodec
from router.providers.base import (
    CallSpec,
    Endpoint,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    is_set,
    plain_messages,
    usage_of,
)
from router.ratelimit_headers import RateLimitInfo, parse_generic
from router.wire import json_schema


def ollama_base(host: str) -> str:
    """OLLAMA_HOST as Ollama itself reads it: ``host``, ``host:port`` or a URL; 0.0.0.0 means this machine."""
    text = host.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::", ""):
        hostname = "127.0.0.1"
    port = parts.port or 11434
    host_part = f"[{hostname}]" if ":" in hostname else hostname
    return f"{parts.scheme}://{host_part}:{port}{parts.path.rstrip('/')}"


class OllamaNativeAdapter(ProviderAdapter):
    kind = "ollama_native"
    listed_at = 7
    codec = OllamaCodec
    default_base_url = "http://127.0.0.1:11434"
    demo_prefix = "ollama"
    framing = "ndjson"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> dict[str, Any] | None:
        """``OLLAMA_HOST`` (as Ollama reads it) and ``OLLAMA_MODEL`` (default llama3.2)."""
        if not is_set(environ, "OLLAMA_HOST"):
            return None
        model = environ.get("OLLAMA_MODEL", "").strip() or "llama3.2"
        return {
            "name": "ollama",
            "kind": cls.kind,
            "api_key_env": None,
            "base_url": ollama_base(environ["OLLAMA_HOST"]),
            "models": {1: model, 2: model, 3: model},
            "bulkhead": 4,
        }

    @staticmethod
    def _headers(api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def chat_call(
        self, cfg: Endpoint, spec: CallSpec, api_key: str | None, *, stream: bool = False
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

    def health_call(self, cfg: Endpoint, api_key: str | None) -> HttpCall | None:
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
