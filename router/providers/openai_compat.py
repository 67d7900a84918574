"""OpenAI-compatible chat completions: OpenAI, Azure OpenAI, GitHub Models and Ollama's /v1.

* OpenAI: ``POST {base}/chat/completions`` with ``Authorization: Bearer``; health ``GET {base}/models``.
* Azure: ``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`` with an
  ``api-key`` header (the tier's "model" is the deployment name); health ``GET {endpoint}/openai/models``.
* GitHub Models: ``POST https://models.github.ai/inference/chat/completions`` with the GitHub token as
  a bearer and the GitHub API headers; health ``GET https://models.github.ai/catalog/models``.
* Ollama /v1: ``POST {host}/v1/chat/completions``; health ``GET {host}/api/tags``.

Structured output uses ``response_format: {type: json_schema, json_schema: {name, schema, strict}}``,
strict only when the schema meets strict mode's rules (every object closed, every key required);
servers that refuse it (llama.cpp, LM Studio, older vLLM) get ``{type: json_object}`` or no
``response_format`` (the schema then travels in the prompt). Reasoning models get
``max_completion_tokens`` and no ``temperature``, the only parameters their API accepts.

Streaming: ``stream: true`` with ``stream_options: {include_usage: true}``; server-sent events of
``chat.completion.chunk`` objects whose ``choices[0].delta.content`` carries the text, a last chunk
with empty ``choices`` and the ``usage``, then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.models import Usage
from router.providers.base import (
    CallSpec,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    is_reasoning_model,
    plain_messages,
    usage_of,
)
from router.ratelimit_headers import RateLimitInfo, parse_openai_headers
from router.wire import is_strict_compatible, json_schema, schema_name

GITHUB_API_VERSION = "2022-11-28"


class OpenAICompatAdapter(ProviderAdapter):
    def __init__(self, kind: str) -> None:
        if kind not in ("openai", "azure", "github", "ollama"):
            raise ValueError(f"not an OpenAI-compatible kind: {kind}")
        self.kind = kind

    def _headers(self, api_key: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.kind == "azure":
            if api_key:
                headers["api-key"] = api_key
        elif api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        if self.kind == "github":
            headers["Accept"] = "application/vnd.github+json"
            headers["X-GitHub-Api-Version"] = GITHUB_API_VERSION
        return headers

    def chat_call(
        self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        base = cfg.resolved_base_url
        body: dict[str, Any] = {"messages": plain_messages(spec.messages)}
        if self.kind == "azure":
            url = (
                f"{base}/openai/deployments/{quote(spec.model, safe='')}/chat/completions"
                f"?api-version={quote(cfg.resolved_api_version, safe='')}"
            )
        else:
            url = f"{base}/chat/completions"
            body["model"] = spec.model
        reasoning = is_reasoning_model(cfg, spec.model)
        if spec.temperature is not None and not reasoning:
            body["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            body[_max_tokens_field(self.kind, base, reasoning)] = spec.max_tokens
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if spec.response_schema is not None and spec.structured == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif spec.response_schema is not None and spec.structured == "schema":
            schema = json_schema(spec.response_schema)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(spec.response_schema),
                    "schema": schema,
                    "strict": is_strict_compatible(schema),
                },
            }
        return HttpCall("POST", url, self._headers(api_key), body)

    def parse_chat(self, body: Any) -> ParsedChat:
        choice = body["choices"][0]
        content = choice["message"].get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise TypeError("content is not text")
        return ParsedChat(
            content, _usage(body.get("usage")), choice.get("finish_reason") == "length"
        )

    def stream_decoder(self) -> StreamDecoder:
        return OpenAIStreamDecoder()

    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None:
        base = cfg.resolved_base_url
        if self.kind == "azure":
            url = f"{base}/openai/models?api-version={quote(cfg.resolved_api_version, safe='')}"
        elif self.kind == "github":
            url = base.removesuffix("/inference") + "/catalog/models"
        elif self.kind == "ollama":
            url = base.removesuffix("/v1") + "/api/tags"
        else:
            url = f"{base}/models"
        return HttpCall("GET", url, self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_openai_headers(headers, now_wall, azure=self.kind == "azure")


def _usage(usage: Any) -> Usage:
    usage = usage or {}
    return usage_of(usage.get("prompt_tokens"), usage.get("completion_tokens"))


class OpenAIStreamDecoder(StreamDecoder):
    """``chat.completion.chunk`` events up to ``[DONE]``; usage from the chunk that carries it."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._finish: str | None = None
        self._done = False

    def feed(self, event: str, data: str) -> str:
        if data.strip() == "[DONE]":
            self._done = True
            return ""
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise TypeError("a stream chunk is not an object")
        if "error" in chunk:
            raise ProviderCallError(ErrorClass.SERVER, "the stream carried an error event")
        if chunk.get("usage"):
            self._usage = _usage(chunk["usage"])
        text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            piece = (choice.get("delta") or {}).get("content")
            if isinstance(piece, str):
                text += piece
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        self._parts.append(text)
        return text

    def result(self) -> ParsedChat:
        if not self._done and self._finish is None:
            raise StreamEndedEarly("the stream ended before its finish_reason and [DONE]")
        return ParsedChat("".join(self._parts), self._usage, self._finish == "length")


OPENAI_API_HOST = "api.openai.com"


def _max_tokens_field(kind: str, base_url: str, reasoning: bool) -> str:
    """OpenAI's own API and reasoning models take ``max_completion_tokens``; every other
    OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama's /v1, Azure, GitHub Models)
    reads ``max_tokens`` — llama-cpp-python ignores the newer name, so its answers had no
    length limit at all and ran into the read timeout."""
    if reasoning or (kind == "openai" and urlsplit(base_url).hostname == OPENAI_API_HOST):
        return "max_completion_tokens"
    return "max_tokens"
