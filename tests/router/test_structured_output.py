"""Structured output degrades by what the server accepts, learnt once per provider and model.

The fault server plays servers that refuse ``response_format: json_schema`` the way llama.cpp's
server does (a 500 naming ``response_format``), or every ``response_format``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from router.fault_server import FaultServer
from router.models import BreakerState

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request

pytestmark = pytest.mark.timeout(60)


def llama_like(formats: list[str]) -> dict[str, Any]:
    return {"providers": {"local": {"response_formats": formats, "format_refusal_status": 500}}}


def chat_bodies(server: FaultServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests_for("local", "chat")]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


async def test_a_server_refusing_json_schema_is_asked_with_json_object_from_then_on(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script(llama_like(["text", "json_object"]))
    router = make_router(make_config([provider_entry(fault_server, "local")]))

    first = await router.complete(request())

    assert first.provider == "local" and first.parsed == Verdict(verdict="remote:verify", score=0.9)
    refused, accepted = chat_bodies(fault_server)
    assert refused["response_format"]["type"] == "json_schema"
    assert accepted["response_format"] == {"type": "json_object"}
    assert '"verdict"' in system_text(accepted), "the schema travels in the prompt"
    snap = next(s for s in router.snapshot() if s.name == "local")
    assert snap.structured_output == {"local-model": "json_object"}
    assert snap.state is BreakerState.CLOSED and snap.failures_total == 0

    fault_server.clear_requests()
    second = await router.complete(request())

    assert second.parsed == first.parsed
    assert [b["response_format"] for b in chat_bodies(fault_server)] == [{"type": "json_object"}]


async def test_a_server_with_no_structured_output_gets_the_schema_in_the_prompt(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script(llama_like(["text"]))
    router = make_router(make_config([provider_entry(fault_server, "local")]))

    response = await router.stream(request(), lambda event: None)

    assert response.provider == "local" and response.parsed is not None
    bodies = chat_bodies(fault_server)
    assert [b.get("response_format", {}).get("type") for b in bodies] == [
        "json_schema",
        "json_object",
        None,
    ]
    assert "JSON schema" in system_text(bodies[-1])
    snap = next(s for s in router.snapshot() if s.name == "local")
    assert snap.structured_output == {"local-model": "prompt"}


async def test_what_was_learnt_is_remembered_by_the_next_process(
    tmp_path: Path, fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script(llama_like(["text", "json_object"]))
    config = make_config([provider_entry(fault_server, "local")])
    first = make_router(config, stats_path=tmp_path)
    await first.complete(request())
    await first.aclose()
    fault_server.clear_requests()

    second = make_router(config, stats_path=tmp_path)
    await second.complete(request())

    assert [b["response_format"] for b in chat_bodies(fault_server)] == [{"type": "json_object"}]
    snap = next(s for s in second.snapshot() if s.name == "local")
    assert snap.structured_output == {"local-model": "json_object"}


async def test_an_unrelated_failure_is_not_taken_for_a_refusal(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"local": {"sequence": [400, 400]}}})
    router = make_router(make_config([provider_entry(fault_server, "local")]))

    for _ in range(2):
        response = await router.complete(request())
        assert response.provider == "builtin"

    bodies = chat_bodies(fault_server)
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_schema"]
    snap = next(s for s in router.snapshot() if s.name == "local")
    assert snap.structured_output == {}


async def test_prose_around_the_json_is_tolerated_in_prompt_mode(
    make_router: RouterFactory, keys: dict
) -> None:
    def chatty(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> str:
        return "Sure! Here is the answer:\n" + json.dumps({"verdict": "ok", "score": 1}) + "\nBye."

    async with FaultServer(responder=chatty, script=llama_like([])) as server:
        router = make_router(make_config([provider_entry(server, "local")]))
        response = await router.complete(request())

    assert response.provider == "local"
    assert response.parsed == Verdict(verdict="ok", score=1.0)
