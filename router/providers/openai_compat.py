"""OpenAI-compatible chat completions: OpenAI, Azure OpenAI, GitHub Models and Ollama's /v1.

* OpenAI: ``POST {base}/chat/completions`` with ``Authorization: Bearer``; health ``GET {base}/models``.
* Azure: ``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`` with an
  ``api-key`` header (the tier's "model" is the deployment name); health ``GET {endpoint}/openai/models``.
* GitHub Models: ``POST https://models.github.ai/inference/chat/completions`` with the GitHub token as
  a bearer and the GitHub API headers; health ``GET https://models.github.ai/catalog/models``.
* Ollama /v1: ``POST {host}/v1/chat/completions``; health ``GET {host}/api/tags``.

Structured output uses ``response_format: {type: json_schema, json_schema: {name, schema, strict}}``,
strict only when the schema meets strict mode's rules (every object closed, every key required).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from router.config import ProviderConfig
from router.models import Usage
from router.providers.base import CallSpec, HttpCall, ProviderAdapter, plain_messages, usage_of
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

    def chat_call(self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None) -> HttpCall:
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
        if spec.temperature is not None:
            body["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            body["max_completion_tokens" if self.kind == "openai" else "max_tokens"] = (
                spec.max_tokens
            )
        if spec.response_schema is not None:
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

    def parse_chat(self, body: Any) -> tuple[str, Usage]:
        message = body["choices"][0]["message"]
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise TypeError("content is not text")
        usage = body.get("usage") or {}
        return content, usage_of(usage.get("prompt_tokens"), usage.get("completion_tokens"))

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
