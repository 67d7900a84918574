"""Structured output degrades by what the server accepts, learnt once per provider and model.

The fault server plays servers that refuse ``response_format: json_schema`` the way llama.cpp's
server does (a 500 naming ``response_format``), or every ``response_format``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.fault.server import FaultServer
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


LLAMA_CPP_PYTHON_ERROR = (
    # as llama-cpp-python's server logged it for a json_schema request in a live run
    "{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)


def llama_cpp_python(**script: Any) -> dict[str, Any]:
    return {"providers": {"local": {"emulate": "llama_cpp_python", **script}}}


async def test_the_fault_server_refuses_json_schema_as_llama_cpp_python_does(
    fault_server: FaultServer, keys: dict
) -> None:
    fault_server.set_script(llama_cpp_python())
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 5,
        "an_unknown_field": True,  # its pydantic request model ignores unknown fields
        "response_format": {"type": "json_schema", "json_schema": {"name": "V", "schema": {}}},
    }
    async with httpx.AsyncClient() as client:
        refused = await client.post(f"{fault_server.url('local')}/v1/chat/completions", json=body)
        body["response_format"] = {"type": "json_object"}
        accepted = await client.post(f"{fault_server.url('local')}/v1/chat/completions", json=body)

    assert refused.status_code == 500
    error = refused.json()["error"]
    assert error["type"] == "internal_server_error"
    assert error["param"] is None and error["code"] is None
    assert error["message"].startswith(
        f"1 validation error:\n  {LLAMA_CPP_PYTHON_ERROR}\n\n  File "
    )
    assert error["message"].endswith("in create_chat_completion\n    POST /v1/chat/completions")
    assert accepted.status_code == 200


async def test_llama_cpp_python_refusal_is_learnt_as_json_object(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script(llama_cpp_python())
    router = make_router(make_config([provider_entry(fault_server, "local")]))

    first = await router.complete(request())
    second = await router.complete(request())

    assert first.provider == second.provider == "local"
    assert [b["response_format"]["type"] for b in chat_bodies(fault_server)] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    snap = next(s for s in router.snapshot() if s.name == "local")
    assert snap.structured_output == {"local-model": "json_object"}


@pytest.mark.parametrize("failure", ["timeout", 503])
async def test_a_lower_mode_that_fails_otherwise_is_still_learnt(
    failure: str | int,
    tmp_path: Path,
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict,
) -> None:
    """The live run's failure: llama-cpp-python refused json_schema at once, then took the
    json_object request and generated past the read timeout. That was not a refusal of
    json_object, so json_object is learnt: later calls no longer start with a refused request."""
    fault_server.set_script(llama_cpp_python(sequence=[failure]))
    config = make_config([provider_entry(fault_server, "local", timeout_s=0.5)], max_attempts=1)
    first = make_router(config, stats_path=tmp_path)

    answer = await first.complete(request())

    assert answer.provider == "builtin"
    assert [b["response_format"]["type"] for b in chat_bodies(fault_server)] == [
        "json_schema",
        "json_object",
    ]
    snap = next(s for s in first.snapshot() if s.name == "local")
    assert snap.structured_output == {"local-model": "json_object"}
    await first.aclose()
    fault_server.clear_requests()

    second = make_router(config, stats_path=tmp_path)
    answer = await second.complete(request())

    assert answer.provider == "local"
    assert [b["response_format"]["type"] for b in chat_bodies(fault_server)] == ["json_object"]
