"""Every provider adapter against the loopback fault server.

The recorded request (URL, headers, body) must match that API's documented
shape, and success, 429, 5xx, malformed and auth answers must be classified right.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict

from router.clock import ManualClock
from router.config import ProviderConfig
from router.errors import ErrorClass, ProviderCallError
from router.fault.server import FaultServer, RecordedRequest
from router.models import ChatMessage, ChatRequest
from router.providers.base import spec_from_request
from router.providers.http import HttpProvider
from router.wire import INPUTS_FENCE, TASK_HEADER, wire_messages

from .conftest import CANARY_KEYS, Verdict, make_config, provider_entry

KINDS = ["openai", "azure", "github", "ollama", "ollama_native", "anthropic", "gemini"]


class StrictVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: str
    score: float


def chat_request(schema: type[BaseModel] | None = Verdict) -> ChatRequest:
    return ChatRequest(
        task="verify",
        messages=[
            ChatMessage(role="system", content="Be terse."),
            ChatMessage(role="user", content="Claim?"),
            ChatMessage(role="assistant", content="Which claim?"),
            ChatMessage(role="user", content="Water is wet."),
        ],
        inputs={"claim": "water is wet", "n": 3},
        response_schema=schema,
        temperature=0.2,
        max_tokens=300,
    )


def provider_for(
    server: FaultServer, kind: str, client: httpx.AsyncClient, clock: ManualClock
) -> HttpProvider:
    entry = provider_entry(server, kind, kind=kind)
    if kind == "ollama_native":
        entry["base_url"] = server.url(kind)
    cfg: ProviderConfig = make_config([entry]).providers[0]
    return HttpProvider(cfg, client, clock)


async def call(provider: HttpProvider, req: ChatRequest | None = None):
    req = req or chat_request()
    spec = spec_from_request(req, provider.cfg.models[1], wire_messages(req), 512)
    return await provider.chat(spec, 5.0)


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(retries=0)) as c:
        yield c


def only(server: FaultServer, provider: str, route: str = "chat") -> RecordedRequest:
    records = server.requests_for(provider, route)
    assert len(records) == 1, records
    return records[0]


def check_common(record: RecordedRequest) -> None:
    assert record.method == "POST"
    assert record.headers[TASK_HEADER] == "verify"
    assert record.headers["content-type"] == "application/json"
    assert record.task == "verify"
    assert record.inputs == {"claim": "water is wet", "n": 3}  # the JSON block in the last message


async def test_openai_request_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    reply = await call(
        provider_for(fault_server, "openai", client, clock), chat_request(StrictVerdict)
    )
    record = only(fault_server, "openai")
    check_common(record)
    assert record.api_path == "/v1/chat/completions" and record.query == {}
    assert record.headers["authorization"] == f"Bearer {CANARY_KEYS['OPENAI_API_KEY']}"
    body = record.json
    assert body["model"] == "openai-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][-1]["content"].startswith("Water is wet.\n\n```" + INPUTS_FENCE)
    # a server other than api.openai.com reads max_tokens (llama-cpp-python ignores the newer name)
    assert body["temperature"] == 0.2 and body["max_tokens"] == 300
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "StrictVerdict" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["verdict", "score"]
    assert json.loads(reply.content) == {"verdict": "remote:verify", "score": 0.9}
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


async def test_openai_non_strict_schema(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    await call(provider_for(fault_server, "openai", client, clock), chat_request(Verdict))
    assert only(fault_server, "openai").json["response_format"]["json_schema"]["strict"] is False


async def test_azure_request_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    await call(provider_for(fault_server, "azure", client, clock))
    record = only(fault_server, "azure")
    check_common(record)
    assert record.api_path == "/openai/deployments/azure-model/chat/completions"
    assert record.query == {"api-version": "2024-10-21"}
    assert record.headers["api-key"] == CANARY_KEYS["AZURE_OPENAI_API_KEY"]
    assert "authorization" not in record.headers
    assert "model" not in record.json and record.json["max_tokens"] == 300
    assert record.json["response_format"]["type"] == "json_schema"


async def test_github_models_request_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    await call(provider_for(fault_server, "github", client, clock))
    record = only(fault_server, "github")
    check_common(record)
    assert record.api_path == "/inference/chat/completions"
    assert record.headers["authorization"] == f"Bearer {CANARY_KEYS['GITHUB_TOKEN']}"
    assert record.headers["accept"] == "application/vnd.github+json"
    assert record.headers["x-github-api-version"] == "2022-11-28"
    assert record.json["model"] == "github-model" and record.json["max_tokens"] == 300


async def test_ollama_openai_compatible_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await call(provider_for(fault_server, "ollama", client, clock))
    record = only(fault_server, "ollama")
    check_common(record)
    assert record.api_path == "/v1/chat/completions"
    assert "authorization" not in record.headers
    assert record.json["response_format"]["json_schema"]["schema"]["title"] == "Verdict"


async def test_ollama_native_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    reply = await call(provider_for(fault_server, "ollama_native", client, clock))
    record = only(fault_server, "ollama_native")
    check_common(record)
    assert record.api_path == "/api/chat"
    body = record.json
    assert body["stream"] is False and body["model"] == "ollama_native-model"
    assert body["options"] == {"temperature": 0.2, "num_predict": 300}
    assert body["format"]["properties"].keys() == {"verdict", "score"}
    assert reply.usage.input_tokens > 0


async def test_anthropic_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    reply = await call(provider_for(fault_server, "anthropic", client, clock))
    record = only(fault_server, "anthropic")
    check_common(record)
    assert record.api_path == "/v1/messages"
    assert record.headers["x-api-key"] == CANARY_KEYS["ANTHROPIC_API_KEY"]
    assert record.headers["anthropic-version"] == "2023-06-01"
    body = record.json
    assert body["system"] == "Be terse."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 300 and "temperature" not in body  # the API has no such field
    assert (
        body["tools"][0]["name"] == "Verdict"
        and body["tools"][0]["input_schema"]["type"] == "object"
    )
    assert body["tool_choice"] == {"type": "tool", "name": "Verdict"}
    assert json.loads(reply.content) == {
        "verdict": "remote:verify",
        "score": 0.9,
    }  # read from tool_use.input


async def test_anthropic_requires_max_tokens(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    req = ChatRequest(task="chat", messages=[ChatMessage(role="user", content="hi")])
    reply = await call(provider_for(fault_server, "anthropic", client, clock), req)
    body = only(fault_server, "anthropic").json
    assert body["max_tokens"] == 512 and "tools" not in body and "system" not in body
    assert (
        reply.content == '{"verdict": "remote:chat", "score": 0.9}'
    )  # the test responder's answer


async def test_gemini_shape(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    reply = await call(provider_for(fault_server, "gemini", client, clock))
    record = only(fault_server, "gemini")
    check_common(record)
    assert record.api_path == "/v1beta/models/gemini-model:generateContent"
    assert record.query == {}  # the key is never in the URL
    assert record.headers["x-goog-api-key"] == CANARY_KEYS["GEMINI_API_KEY"]
    body = record.json
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    generation = body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"]["title"] == "Verdict"
    assert generation["temperature"] == 0.2 and generation["maxOutputTokens"] == 300
    assert json.loads(reply.content)["score"] == 0.9
    assert reply.usage.output_tokens > 0


HEALTH_PATHS = {
    "openai": ("/v1/models", {}),
    "azure": ("/openai/models", {"api-version": "2024-10-21"}),
    "github": ("/catalog/models", {}),
    "ollama": ("/api/tags", {}),
    "ollama_native": ("/api/tags", {}),
    "anthropic": ("/v1/models", {}),
    "gemini": ("/v1beta/models", {}),
}


@pytest.mark.parametrize("kind", KINDS)
async def test_health_endpoints(
    kind: str, fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    provider = provider_for(fault_server, kind, client, clock)
    assert provider.has_health_probe
    await provider.health(5.0)
    record = only(fault_server, kind, "health")
    assert record.method == "GET"
    assert (record.api_path, record.query) == HEALTH_PATHS[kind]


EXPECTED_5XX = {
    "openai": ErrorClass.SERVER,
    "azure": ErrorClass.SERVER,
    "github": ErrorClass.SERVER,
    "ollama": ErrorClass.SERVER,
    "ollama_native": ErrorClass.SERVER,
    "anthropic": ErrorClass.SERVER,
    "gemini": ErrorClass.SERVER,
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("fault", "expected", "retry_after"),
    [
        ({"status": 429, "retry_after_s": 2}, ErrorClass.RATE_LIMIT, 2.0),
        ({"status": 500}, ErrorClass.SERVER, None),
        ("malformed", ErrorClass.BAD_RESPONSE, None),
        ({"status": 401}, ErrorClass.PERMANENT, None),
        ({"status": 404}, ErrorClass.PERMANENT, None),
        ({"status": 400}, ErrorClass.BAD_REQUEST, None),
        ("down", ErrorClass.CONNECTION, None),
    ],
)
async def test_failures_are_classified(
    kind: str,
    fault: Any,
    expected: ErrorClass,
    retry_after: float | None,
    fault_server: FaultServer,
    client: httpx.AsyncClient,
    keys: dict,
    clock: ManualClock,
) -> None:
    fault_server.set_script({"providers": {kind: {"sequence": [fault]}}})
    with pytest.raises(ProviderCallError) as caught:
        await call(provider_for(fault_server, kind, client, clock))
    assert caught.value.error_class is expected
    assert caught.value.retry_after_s == retry_after
    # and the very next request succeeds: faults were consumed one per request
    await call(provider_for(fault_server, kind, client, clock))


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("anthropic", ErrorClass.OVERLOAD),
        ("gemini", ErrorClass.OVERLOAD),
        ("openai", ErrorClass.SERVER),
    ],
)
async def test_overload(
    kind: str,
    expected: ErrorClass,
    fault_server: FaultServer,
    client: httpx.AsyncClient,
    keys: dict,
    clock: ManualClock,
) -> None:
    fault_server.set_script({"providers": {kind: {"sequence": ["overloaded"]}}})
    with pytest.raises(ProviderCallError) as caught:
        await call(provider_for(fault_server, kind, client, clock))
    assert caught.value.error_class is expected
    assert caught.value.status == (529 if kind == "anthropic" else 503)


@pytest.mark.parametrize(("kind", "quota"), [("openai", "spend"), ("gemini", "daily")])
async def test_quota_exhaustion_is_a_long_cooldown_class(
    kind: str,
    quota: str,
    fault_server: FaultServer,
    client: httpx.AsyncClient,
    keys: dict,
    clock: ManualClock,
) -> None:
    fault_server.set_script({"providers": {kind: {"sequence": [{"status": 429, "quota": quota}]}}})
    with pytest.raises(ProviderCallError) as caught:
        await call(provider_for(fault_server, kind, client, clock))
    assert caught.value.error_class is ErrorClass.QUOTA


async def test_timeout_and_slow_body(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    fault_server.set_script(
        {
            "time_scale": 1.0,
            "providers": {
                "openai": {
                    "sequence": [
                        {"kind": "timeout", "hang_s": 5},
                        {"kind": "slow_body", "duration_s": 5},
                    ]
                }
            },
        }
    )
    provider = provider_for(fault_server, "openai", client, clock)
    spec = spec_from_request(chat_request(), "m", wire_messages(chat_request()), 512)
    for _ in range(2):
        with pytest.raises(ProviderCallError) as caught:
            await provider.chat(spec, 0.2)
        assert caught.value.error_class is ErrorClass.TIMEOUT


async def test_success_headers_are_parsed(
    fault_server: FaultServer, client: httpx.AsyncClient, keys: dict, clock: ManualClock
) -> None:
    fault_server.set_script(
        {
            "providers": {
                "openai": {"limits": {"rpm": 100, "tpm": 50_000}},
                "anthropic": {"limits": {"rpm": 50, "tpm": 20_000}},
            }
        }
    )
    for kind, rpm in (("openai", 100), ("anthropic", 50)):
        reply = await call(provider_for(fault_server, kind, client, clock))
        assert reply.rate_limits.requests.limit == rpm
        assert reply.rate_limits.requests.remaining == reply.rate_limits.requests.limit - 1
        assert reply.rate_limits.tokens.remaining is not None
