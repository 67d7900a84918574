"""The provider detail and the chaos demo's story say why a breaker opened in the router's own
words: the reason its breaker recorded, carried by the snapshot the app receives.

Real parts: the workbench's router over HTTP to the loopback fault server, on the router's
injected clock; the snapshot as the app stores it (``model_dump(mode="json")``).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from research.tasks import ScopeAnswer
from router.clock import ManualClock
from router.config import load_router_config
from router.fault.server import FaultServer
from router.models import BreakerState, ChatMessage, ChatRequest
from router.router import SmartModelRouter
from tui.app.screens.provider_detail import trip_reason
from tui.launch.wiring import build_workbench_router
from tui.present.breaker_story import why

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    script = {"providers": {"openai": {"fault": {"status": 500}, "health": "ok"}}}
    async with FaultServer(script) as fault_server:
        yield fault_server


def stored_snapshot(router: SmartModelRouter) -> dict[str, Any]:
    [openai] = [s for s in router.snapshot() if s.name == "openai"]
    return openai.model_dump(mode="json")


async def test_the_drill_down_and_the_story_name_the_breakers_reason(
    server: FaultServer,
) -> None:
    config = load_router_config(
        {
            "providers": [
                {
                    "name": "openai",
                    "kind": "openai",
                    "base_url": f"{server.url('openai')}/v1",
                    "model": "gpt-test",
                    "api_key_env": "OPENAI_API_KEY",
                }
            ]
        },
        "test",
    )
    clock = ManualClock()
    router = build_workbench_router(  # a fixed draw: the throttle skips some calls at random
        None,
        config=config,
        environ={"OPENAI_API_KEY": "sk-test"},
        clock=clock,
        rng=random.Random(7),
    )
    ask = ChatRequest(
        task="research.scope",
        messages=[ChatMessage(role="user", content="Plan: what is asyncio?")],
        inputs={"query": "What is asyncio?"},
        response_schema=ScopeAnswer,
    )
    try:
        for _ in range(20):
            if stored_snapshot(router)["state"] == BreakerState.OPEN.value:
                break
            await router.complete(ask)
        snapshot = stored_snapshot(router)
        assert snapshot["state"] == "OPEN"
        assert snapshot["open_reason"] == "5 consecutive failures"
        expected = "tripped by 5 consecutive failures (last error server, HTTP 500)"
        assert why(snapshot) == expected
        assert trip_reason(snapshot) == expected
    finally:
        await router.aclose()
