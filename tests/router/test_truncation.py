"""A truncated answer is a flagged result, not a provider failure: each API's own stop signal
(scripted by the loopback fault server) comes back as ``truncated=True``, streamed or not, and a
structured answer cut mid-JSON reaches the caller unparsed instead of failing over."""

from __future__ import annotations

from typing import Any

import pytest

from router.fault.server import FaultServer
from router.models import BreakerState, ChatResponse, ContextLimit, Usage
from router.truncation import more_room
from router.wire import prompt_tokens_in_window, request_chars

from .conftest import RouterFactory, make_config, request
from .test_streaming import KINDS, entry

pytestmark = pytest.mark.timeout(60)


async def answer(router: Any, streamed: bool, **kwargs: Any) -> Any:
    if streamed:
        return await router.stream(request(**kwargs), lambda event: None)
    return await router.complete(request(**kwargs))


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_cut_answer_is_flagged_and_kept_off_the_health_record(
    kind: str, streamed: bool, fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {kind: {"sequence": ["truncated"]}}})
    router = make_router(make_config([entry(fault_server, kind, kind)]))

    cut = await answer(router, streamed, max_tokens=64)
    whole = await answer(router, streamed, max_tokens=128)

    assert cut.provider == kind and cut.truncated and cut.parsed is None
    assert whole.provider == kind and not whole.truncated and whole.parsed is not None
    assert len(cut.content) < len(whole.content)
    snap = next(s for s in router.snapshot() if s.name == kind)
    assert snap.state is BreakerState.CLOSED and snap.failures_total == 0


async def test_a_cut_answer_without_a_schema_is_returned_as_text(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": ["truncated"]}}})
    router = make_router(make_config([entry(fault_server, "openai", "openai")]))

    cut = await router.complete(request(schema=None))

    assert cut.truncated and cut.provider == "openai" and cut.content


def cut(output_tokens: int = 10, truncated: bool = True) -> ChatResponse:
    return ChatResponse(
        content='{"verdict": "rem',
        provider="openai",
        model="openai-model",
        usage=Usage(input_tokens=20, output_tokens=output_tokens),
        truncated=truncated,
    )


def test_more_room_doubles_the_room_the_cut_answer_had() -> None:
    asked = request(max_tokens=300)

    assert more_room(asked, cut(truncated=False), None, 512) is None
    assert more_room(asked, cut(), None, 512) == asked.model_copy(update={"max_tokens": 600})
    # no limit named: the router's default was the room, or what the answer reports using
    assert more_room(request(), cut(), None, 512) == request(max_tokens=1024)
    assert more_room(request(), cut(output_tokens=2048), None, 512) == request(max_tokens=4096)


def test_more_room_stays_inside_the_context_window() -> None:
    asked = request(max_tokens=300)
    estimate = ContextLimit(model="openai-model", tokens=1, chars_per_token=2.0)
    prompt = prompt_tokens_in_window(estimate, asked, request_chars(asked))
    window = estimate.model_copy(update={"tokens": prompt + 450})

    assert more_room(asked, cut(), window, 512) == request(max_tokens=450), "450 < 600"
    small = window.model_copy(update={"tokens": prompt + 300})
    assert more_room(asked, cut(), small, 512) is None, "no more room than it had"
