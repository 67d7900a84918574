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

Rate limits: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers, resets as Go-style
durations (``6m0s``, ``12ms``, ``1.5s``); Azure is known to send ``-1`` and ``0`` that mean
nothing, so for Azure those are unknown. GitHub Models signals its secondary rate limits with a
403 (or 401) carrying a Retry-After or no requests remaining.

One class per kind: :class:`OpenAICompatAdapter` is the shared wire format, each kind's class
says where it departs from it (headers, URLs, the output-limit field, its error hook).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from router.errors import ErrorClass, ProviderCallError
from router.fault.codecs.openai import AzureCodec, OpenAICodec
from router.models import Usage
from router.providers.base import (
    CallSpec,
    Endpoint,
    HttpCall,
    ParsedChat,
    ProviderAdapter,
    StreamDecoder,
    StreamEndedEarly,
    is_reasoning_model,
    is_set,
    plain_messages,
    usage_of,
)
from router.ratelimit_headers import (
    LimitReading,
    RateLimitInfo,
    lower_keys,
    parse_count,
    parse_go_duration,
    retry_after,
)
from router.wire import is_strict_compatible, json_schema, schema_name

GITHUB_API_VERSION = "2022-11-28"
OPENAI_API_HOST = "api.openai.com"


def parse_openai_headers(
    headers: Mapping[str, str], now_wall: float, *, azure: bool = False
) -> RateLimitInfo:
    h = lower_keys(headers)

    def reading(dimension: str) -> LimitReading:
        return LimitReading(
            limit=parse_count(h.get(f"x-ratelimit-limit-{dimension}"), ignore_non_positive=azure),
            remaining=parse_count(
                h.get(f"x-ratelimit-remaining-{dimension}"), ignore_non_positive=azure
            ),
            reset_s=parse_go_duration(h.get(f"x-ratelimit-reset-{dimension}")),
        )

    return RateLimitInfo(
        retry_after_s=retry_after(h, now_wall),
        requests=reading("requests"),
        tokens=reading("tokens"),
    )


class OpenAICompatAdapter(ProviderAdapter):
    """The chat-completions wire format every OpenAI-compatible kind shares."""

    codec = OpenAICodec

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _chat_url(self, base: str, cfg: Endpoint, model: str) -> str | None:
        """The chat URL when the model travels in the body; otherwise the URL naming it."""
        return None

    def _wants_max_completion_tokens(self, base_url: str) -> bool:
        """Whether this server reads ``max_completion_tokens`` (reasoning models always do).

        Every OpenAI-compatible server but OpenAI's own (llama.cpp, vLLM, LM Studio, Ollama's
        /v1, Azure, GitHub Models) reads ``max_tokens`` — llama-cpp-python ignores the newer
        name, so its answers had no length limit at all and ran into the read timeout."""
        return False

    def chat_call(
        self, cfg: Endpoint, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        base = cfg.resolved_base_url
        body: dict[str, Any] = {"messages": plain_messages(spec.messages)}
        url = self._chat_url(base, cfg, spec.model)
        if url is None:
            url = f"{base}/chat/completions"
            body["model"] = spec.model
        reasoning = is_reasoning_model(cfg, spec.model)
        if spec.temperature is not None and not reasoning:
            body["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            wants_new = reasoning or self._wants_max_completion_tokens(base)
            body["max_completion_tokens" if wants_new else "max_tokens"] = spec.max_tokens
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

    def _health_url(self, cfg: Endpoint) -> str:
        return f"{cfg.resolved_base_url}/models"

    def health_call(self, cfg: Endpoint, api_key: str | None) -> HttpCall | None:
        return HttpCall("GET", self._health_url(cfg), self._headers(api_key))

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_openai_headers(headers, now_wall)


class OpenAIAdapter(OpenAICompatAdapter):
    """OpenAI's own API (or any server configured as ``kind: openai``)."""

    kind = "openai"
    listed_at = 1
    default_base_url = "https://api.openai.com/v1"
    key_env = "OPENAI_API_KEY"
    env_models = {1: "gpt-4.1-mini", 2: "gpt-4.1", 3: "gpt-4.1"}
    env_bulkhead = 20

    def _wants_max_completion_tokens(self, base_url: str) -> bool:
        return urlsplit(base_url).hostname == OPENAI_API_HOST


class AzureAdapter(OpenAICompatAdapter):
    """Azure OpenAI: a deployment per model, the key in ``api-key``, an API version."""

    kind = "azure"
    listed_at = 4
    codec = AzureCodec
    base_url_example = "https://<resource>.openai.azure.com"
    key_env = "AZURE_OPENAI_API_KEY"
    default_api_version = "2024-10-21"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> dict[str, Any] | None:
        """``AZURE_OPENAI_API_KEY`` with ``AZURE_OPENAI_ENDPOINT``; ``AZURE_OPENAI_DEPLOYMENT``
        (default gpt-4.1-mini) and ``AZURE_OPENAI_API_VERSION`` optional."""
        if not (
            is_set(environ, "AZURE_OPENAI_API_KEY") and is_set(environ, "AZURE_OPENAI_ENDPOINT")
        ):
            return None
        deployment = environ.get("AZURE_OPENAI_DEPLOYMENT", "").strip() or "gpt-4.1-mini"
        return {
            "name": "azure",
            "kind": cls.kind,
            "api_key_env": "AZURE_OPENAI_API_KEY",
            "base_url": environ["AZURE_OPENAI_ENDPOINT"].strip(),
            "api_version": environ.get("AZURE_OPENAI_API_VERSION", "").strip() or None,
            "models": {1: deployment, 2: deployment, 3: deployment},
            "bulkhead": 10,
        }

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"api-key": api_key} if api_key else {}

    def _chat_url(self, base: str, cfg: Endpoint, model: str) -> str | None:
        return (
            f"{base}/openai/deployments/{quote(model, safe='')}/chat/completions"
            f"?api-version={quote(cfg.resolved_api_version, safe='')}"
        )

    def _health_url(self, cfg: Endpoint) -> str:
        version = quote(cfg.resolved_api_version, safe="")
        return f"{cfg.resolved_base_url}/openai/models?api-version={version}"

    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        return parse_openai_headers(headers, now_wall, azure=True)


class GitHubModelsAdapter(OpenAICompatAdapter):
    """GitHub Models: the GitHub token as a bearer, the GitHub API headers, its model catalog."""

    kind = "github"
    listed_at = 5
    default_base_url = "https://models.github.ai/inference"
    key_env = "GITHUB_TOKEN"
    env_models = {1: "openai/gpt-4.1-mini", 2: "openai/gpt-4.1", 3: "openai/gpt-4.1"}
    env_bulkhead = 5

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {
            **super()._headers(api_key),
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": GITHUB_API_VERSION,
        }

    def _health_url(self, cfg: Endpoint) -> str:
        return cfg.resolved_base_url.removesuffix("/inference") + "/catalog/models"

    def classify_error(
        self, status: int, body: Any, rate_limits: RateLimitInfo
    ) -> ErrorClass | None:
        """GitHub signals secondary rate limits with 403 (or 401)."""
        if status in (401, 403) and (
            rate_limits.retry_after_s is not None or rate_limits.requests.remaining == 0
        ):
            return ErrorClass.RATE_LIMIT
        return None


class OllamaV1Adapter(OpenAICompatAdapter):
    """Ollama's OpenAI-compatible ``/v1`` (its native API is ``ollama_native``)."""

    kind = "ollama"
    listed_at = 6
    default_base_url = "http://127.0.0.1:11434/v1"
    demo_prefix = "ollama_v1"

    def _health_url(self, cfg: Endpoint) -> str:
        return cfg.resolved_base_url.removesuffix("/v1") + "/api/tags"


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
