"""A research step fits its prompt to the context window of the models it may reach: inputs
are trimmed until the request fits, or the call is refused with the reason before it is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from research.extractive import scope
from research.pipeline import ModelPipeline, ModelStage
from research.tasks import ScopeAnswer
from router.build import build_router
from router.config import RouterConfig
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer
from tests.research.test_steps import make_context
from tui.launch.agents_wiring import AgentAwareModelCaller
from tui.launch.wiring import RouterModelCaller, extractive_handlers

pytestmark = pytest.mark.timeout(60)

OUTPUT_TOKENS = 300
NOTES = [f"note {i}: " + "evidence " * 25 for i in range(40)]
STAGE = ModelStage(
    task="research.scope",
    schema=ScopeAnswer,
    build_inputs=lambda _c, _r: {"query": "coroutines", "max_sub_questions": 2, "notes": NOTES},
    trim="notes",
    output_tokens=OUTPUT_TOKENS,
)
ANSWER = scope({"query": "coroutines", "max_sub_questions": 2}).model_dump()


def run_stage(window: int, *, as_the_app: bool = False) -> tuple[Any, list[dict], list[dict]]:
    """``as_the_app``: through the model caller the composition root gives a run (the agents'
    wrapper around the router's), not the router's caller alone."""

    async def scenario() -> tuple[Any, list[dict], list[dict]]:
        async with FaultServer(responder=lambda *_: ANSWER) as server:
            section = demo_router_config(server.base_url, ["openai"])
            section["providers"][0]["context_windows"] = {"fault-model": window}
            router = build_router(
                RouterConfig.model_validate(section),
                stats_path=None,
                task_handlers=extractive_handlers(),
            )
            try:
                model: Any = RouterModelCaller(router)
                if as_the_app:
                    model = AgentAwareModelCaller(model, router, lambda _config: router)
                ctx, emitted = make_context("intake_scope", "research.intake_scope", model=model)
                result = await ModelPipeline(ctx).run(STAGE)
            finally:
                await router.aclose()
            bodies = [r.json for r in server.requests_for("openai", "chat")]
        stages = [payload for name, payload in emitted if name == "research.stage"]
        return result, bodies, stages

    return asyncio.run(scenario())


@pytest.mark.parametrize("as_the_app", [False, True])
def test_inputs_are_trimmed_until_the_request_fits_the_window(as_the_app: bool) -> None:
    window = 4000
    result, bodies, stages = run_stage(window, as_the_app=as_the_app)

    assert result.refusal is None and result.provider == "openai"
    (body,) = bodies
    sent = sum(len(m["content"]) for m in body["messages"])
    assert sent <= (window - OUTPUT_TOKENS) * 2, "two characters a token, conservatively"
    built = next(s for s in stages if s["stage"] == "prompt_build")
    assert (
        "items trimmed" in built["detail"]
        and "fault-model's context window 4000" in built["detail"]
    )
    assert 1 <= len(body["messages"][-1]["content"].split("note ")) - 1 < len(NOTES) * 2


def test_a_window_too_small_for_any_prompt_refuses_before_the_call() -> None:
    result, bodies, stages = run_stage(400)

    assert result.refusal == "CONTEXT_TOO_SMALL" and bodies == []
    assert "exceed fault-model's context window of 400" in result.detail
    refused = next(s for s in stages if s["stage"] == "prompt_build")
    assert refused["status"] == "refused" and refused["refusal"] == "CONTEXT_TOO_SMALL"
