"""Streaming through the router over real HTTP to the loopback fault server, in each API's format.

A stream that completes hands its text to the sink piece by piece and the response is the whole
answer; a failure before the first event fails over like any failure; a failure mid-stream
(connection cut, stall, malformed chunk) voids what that provider streamed (``abort``) and the
next provider answers from the start.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from router.fault.server import FaultServer
from router.models import ChatResponse
from router.streaming import StreamEvent

from .conftest import RouterFactory, Verdict, fault_answer, make_config, provider_entry, request

pytestmark = pytest.mark.timeout(60)

KINDS = ["openai", "azure", "github", "ollama", "ollama_native", "anthropic", "gemini"]


def entry(server: FaultServer, name: str, kind: str, **extra: Any) -> dict[str, Any]:
    item = provider_entry(server, name, kind=kind, **extra)
    if kind == "ollama_native":
        item["base_url"] = server.url(name)
    return item


async def stream(router: Any, **kwargs: Any) -> tuple[ChatResponse, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = await router.stream(request(**kwargs), events.append)
    return response, events


@pytest.mark.parametrize("kind", KINDS)
async def test_each_api_streams_in_its_own_format(
    kind: str, fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    keyed = not kind.startswith("ollama")
    fault_server.set_script({"providers": {kind: {"auth": "required" if keyed else "none"}}})
    router = make_router(make_config([entry(fault_server, kind, kind)]))

    response, events = await stream(router)

    assert response.provider == kind and not response.degraded
    assert response.parsed == Verdict(verdict="remote:verify", score=0.9)
    assert [e.kind for e in events][0] == "start" and {e.kind for e in events} == {"start", "text"}
    texts = [e.text for e in events if e.kind == "text"]
    assert len(texts) > 1, "the answer arrived in more than one piece"
    assert json.loads("".join(texts)) == {"verdict": "remote:verify", "score": 0.9}
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    (sent,) = fault_server.requests_for(kind, "chat")
    if kind == "gemini":
        assert sent.api_path.endswith(":streamGenerateContent") and sent.query == {"alt": "sse"}
    else:
        assert sent.json["stream"] is True
    if kind in ("openai", "azure", "github", "ollama"):
        assert sent.json["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama_native"])
@pytest.mark.parametrize(
    ("fault", "error_class"),
    [("cut", "connection"), ("stall", "timeout"), ("bad_chunk", "bad_response")],
)
async def test_a_stream_failing_midway_is_voided_and_the_next_provider_answers(
    kind: str,
    fault: str,
    error_class: str,
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict,
) -> None:
    fault_server.set_script(
        {
            "providers": {
                kind: {"sequence": [{"kind": fault, "hang_s": 20}]},
                "spare": {"fault": "ok"},
            }
        }
    )
    first = entry(fault_server, kind, kind, weight=1000.0, stream_idle_s=0.5)
    config = make_config([first, entry(fault_server, "spare", "openai", weight=0.001)])
    router = make_router(config)

    response, events = await stream(router)

    assert response.provider == "spare"
    assert response.parsed == Verdict(verdict="remote:verify", score=0.9)
    kinds = [(e.kind, e.provider) for e in events]
    assert kinds[0] == ("start", kind) and ("abort", kind) in kinds
    restart = kinds.index(("start", "spare"))
    assert restart > kinds.index(("abort", kind))
    after = "".join(e.text for e in events[restart:] if e.kind == "text")
    assert json.loads(after) == {"verdict": "remote:verify", "score": 0.9}
    failed = [a for a in response.attempts if a.provider == kind]
    assert [(a.outcome, a.error_class) for a in failed] == [("failed", error_class)]


async def test_a_failure_before_the_first_event_fails_over_without_a_start(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"first": {"sequence": [500]}, "spare": {"fault": "ok"}}})
    config = make_config(
        [
            entry(fault_server, "first", "anthropic", weight=1000.0),
            entry(fault_server, "spare", "openai", weight=0.001),
        ]
    )
    router = make_router(config)

    response, events = await stream(router)

    assert response.provider == "spare"
    assert {e.provider for e in events} == {"spare"}
    assert [a.error_class for a in response.attempts if a.provider == "first"] == ["server"]


async def test_every_provider_failing_mid_stream_ends_on_the_builtin_answer(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"only": {"fault": "cut"}}})
    router = make_router(make_config([entry(fault_server, "only", "openai")]))

    response, events = await stream(router)

    assert response.provider == "builtin" and response.degraded
    assert response.parsed == Verdict(verdict="builtin:verify", score=0.1)
    assert [e.kind for e in events][-1] == "abort"


async def test_complete_does_not_stream(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(make_config([entry(fault_server, "openai", "openai")]))

    await router.complete(request())

    (sent,) = fault_server.requests_for("openai", "chat")
    assert "stream" not in sent.json and "stream_options" not in sent.json


async def test_a_broken_sink_does_not_fail_the_call(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(make_config([entry(fault_server, "openai", "openai")]))

    def sink(event: StreamEvent) -> None:
        raise RuntimeError("display broke")

    response = await router.stream(request(), sink)

    assert response.provider == "openai"


def test_fault_answer_is_what_the_streams_carry() -> None:
    assert fault_answer("verify", {}, {}) == {"verdict": "remote:verify", "score": 0.9}
