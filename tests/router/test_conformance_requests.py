"""Every adapter's request, checked against the official SDKs' request types (openai,
anthropic, google-genai) — not against our own fault server.

Each request the adapters can build (every structured-output mode, streamed or not, with and
without temperature and an output limit, reasoning models) must use only fields the SDK's
request type defines, with values the type accepts. The fault server's list of fields it
accepts is checked against the same types, so it refuses what the real API refuses.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from anthropic.types import message_create_params as anthropic_params
from google.genai import types as genai
from openai.types.chat import completion_create_params as openai_params
from pydantic import BaseModel, TypeAdapter

from router.config import ProviderConfig
from router.fault.protocols import KNOWN_FIELDS
from router.models import ChatMessage
from router.providers.base import CallSpec
from router.providers.registry import make_adapter

pytestmark = pytest.mark.timeout(60)


class Verdict(BaseModel):
    verdict: str
    score: float


MESSAGES = [
    ChatMessage(role="system", content="Be terse."),
    ChatMessage(role="user", content="Claim?"),
    ChatMessage(role="assistant", content="Which claim?"),
    ChatMessage(role="user", content="Water is wet."),
]
OPENAI_KINDS = ["openai", "azure", "github", "ollama"]


def keys_of(typed_dict: Any) -> set[str]:
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)


def materialise(value: Any) -> Any:
    """Run pydantic's lazy iterable validators to the end, so every item is validated."""
    if isinstance(value, Mapping):
        return {k: materialise(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return [materialise(v) for v in value]
    return value


def specs(model: str) -> list[CallSpec]:
    out = []
    for mode, temperature, max_tokens in itertools.product(
        ("schema", "json_object", "prompt"), (None, 0.3), (None, 300)
    ):
        out.append(
            CallSpec(
                task="verify",
                model=model,
                messages=MESSAGES,
                response_schema=Verdict,
                temperature=temperature,
                max_tokens=max_tokens,
                default_max_tokens=512,
                structured=mode,  # type: ignore[arg-type]
            )
        )
    out.append(
        CallSpec("chat", model, MESSAGES, None, None, None, 512)
    )  # plain text, nothing optional
    return out


def cfg(kind: str, **extra: Any) -> ProviderConfig:
    return ProviderConfig.model_validate(
        {"name": kind, "kind": kind, "base_url": "http://127.0.0.1:9/x", "model": "m", **extra}
    )


@pytest.mark.parametrize("kind", OPENAI_KINDS)
@pytest.mark.parametrize("model", ["gpt-4.1-mini", "o4-mini"])
@pytest.mark.parametrize("stream", [False, True])
def test_openai_compatible_requests_match_the_openai_sdk(
    kind: str, model: str, stream: bool
) -> None:
    adapter = make_adapter(kind)
    params = (
        openai_params.CompletionCreateParamsStreaming
        if stream
        else openai_params.CompletionCreateParamsNonStreaming
    )
    validator = TypeAdapter(params)
    for spec in specs(model):
        body = dict(adapter.chat_call(cfg(kind), spec, "key", stream=stream).json or {})
        if kind == "azure":  # the deployment in the URL stands for the model
            assert "model" not in body
            body["model"] = model
        assert set(body) <= keys_of(params), set(body) - keys_of(params)
        materialise(validator.validate_python(body))
        if model.startswith("o"):
            assert "temperature" not in body and "max_tokens" not in body
        if stream:
            assert body["stream_options"] == {"include_usage": True}


def test_a_listed_reasoning_deployment_gets_reasoning_parameters() -> None:
    spec = specs("my-deployment")[-2]  # prompt mode, temperature and max_tokens set
    body = (
        make_adapter("azure")
        .chat_call(cfg("azure", reasoning_models=["my-deployment"]), spec, "k")
        .json
    )
    assert body is not None
    assert "temperature" not in body and body["max_completion_tokens"] == 300


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_requests_match_the_anthropic_sdk(stream: bool) -> None:
    adapter = make_adapter("anthropic")
    params = (
        anthropic_params.MessageCreateParamsStreaming
        if stream
        else anthropic_params.MessageCreateParamsNonStreaming
    )
    validator = TypeAdapter(params)
    for spec in specs("claude-sonnet-4-5"):
        body = adapter.chat_call(cfg("anthropic"), spec, "key", stream=stream).json or {}
        assert set(body) <= keys_of(params), set(body) - keys_of(params)
        materialise(validator.validate_python(body))


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_requests_match_the_google_genai_types(stream: bool) -> None:
    adapter = make_adapter("gemini")
    documented = {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig"}
    for spec in specs("gemini-2.5-flash"):
        call = adapter.chat_call(cfg("gemini"), spec, "key", stream=stream)
        body = call.json or {}
        assert set(body) <= documented
        for content in body["contents"]:
            genai.Content.model_validate(content)
        if "systemInstruction" in body:
            genai.Content.model_validate(body["systemInstruction"])
        if "generationConfig" in body:  # extra="forbid": an unknown field fails here
            config = genai.GenerationConfig.model_validate(body["generationConfig"])
            if spec.response_schema is not None and spec.structured == "schema":
                assert config.response_json_schema is not None
        assert call.url.endswith(":streamGenerateContent?alt=sse" if stream else ":generateContent")


def test_the_fault_server_accepts_no_field_the_sdks_do_not_define() -> None:
    openai = keys_of(openai_params.CompletionCreateParamsStreaming)
    anthropic = keys_of(anthropic_params.MessageCreateParamsStreaming)
    assert KNOWN_FIELDS["openai"] <= openai, KNOWN_FIELDS["openai"] - openai
    assert KNOWN_FIELDS["anthropic"] <= anthropic, KNOWN_FIELDS["anthropic"] - anthropic


@pytest.mark.parametrize(
    ("base_url", "model", "field"),
    [
        (None, "gpt-4.1-mini", "max_completion_tokens"),  # OpenAI's own API
        ("https://api.openai.com/v1", "gpt-4.1-mini", "max_completion_tokens"),
        ("http://127.0.0.1:8080/v1", "smollm2", "max_tokens"),  # llama.cpp, vLLM, LM Studio
        ("http://127.0.0.1:8080/v1", "o4-mini", "max_completion_tokens"),  # a reasoning model
    ],
)
def test_the_output_limit_goes_in_the_field_the_server_reads(
    base_url: str | None, model: str, field: str
) -> None:
    config = ProviderConfig.model_validate(
        {"name": "p", "kind": "openai", "base_url": base_url, "model": model}
    )
    spec = specs(model)[1]  # schema mode, max_tokens 300
    body = make_adapter("openai").chat_call(config, spec, "key").json

    assert body is not None and body[field] == 300
    assert ({"max_tokens", "max_completion_tokens"} - {field}).isdisjoint(body), "only one"
