"""An answer cut short at its output limit is asked again once with more room, over real HTTP:
the loopback fault server scripts a truncated answer (each API's own stop signal), then a full one."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from research.pipeline import ModelPipeline, ModelStage
from research.tasks import ScopeAnswer
from router.build import build_router
from router.config import RouterConfig
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer
from router.truncation import TRUNCATED_GROWTH
from router.wire import encode_json, json_schema
from tests.research.test_steps import make_context
from tui.launch.wiring import RouterModelCaller, extractive_handlers, extractive_responder

pytestmark = pytest.mark.timeout(60)

STAGE = ModelStage(
    task="research.scope",
    schema=ScopeAnswer,
    build_inputs=lambda _c, _r: {"query": "coroutines", "max_sub_questions": 2},
    output_tokens=300,
)


def output_limit(body: dict[str, Any]) -> int:
    """The output-token limit a request asked for, wherever its API keeps it."""
    for found in (
        body.get("max_completion_tokens"),
        body.get("max_tokens"),
        body.get("generationConfig", {}).get("maxOutputTokens"),
        body.get("options", {}).get("num_predict"),
    ):
        if found is not None:
            return int(found)
    raise AssertionError(f"no output limit in {sorted(body)}")


def run_stage(
    prefix: str, sequence: list[str], window: int | None = None
) -> tuple[Any, list[dict], list[dict]]:
    async def scenario() -> tuple[Any, list[dict], list[dict]]:
        script = {"providers": {prefix: {"sequence": sequence, "then": "ok"}}}
        async with FaultServer(script=script, responder=extractive_responder()) as server:
            section = demo_router_config(server.base_url, [prefix])
            if window is not None:
                section["providers"][0]["context_windows"] = {"fault-model": window}
            config = RouterConfig.model_validate(section)
            router = build_router(config, stats_path=None, task_handlers=extractive_handlers())
            try:
                ctx, emitted = make_context(
                    "intake_scope", "research.intake_scope", model=RouterModelCaller(router)
                )
                result = await ModelPipeline(ctx).run(STAGE)
            finally:
                await router.aclose()
            bodies = [r.json for r in server.requests_for(prefix, "chat")]
        stages = [payload for name, payload in emitted if name == "research.stage"]
        return result, bodies, stages

    return asyncio.run(scenario())


@pytest.mark.parametrize("prefix", ["openai", "anthropic", "gemini", "ollama"])
def test_a_truncated_answer_is_asked_again_once_with_more_room(prefix: str) -> None:
    result, bodies, stages = run_stage(prefix, ["truncated"])

    assert [output_limit(b) for b in bodies] == [300, 300 * TRUNCATED_GROWTH]
    assert isinstance(result.answer, ScopeAnswer) and not result.degraded
    assert result.provider == prefix
    calls = [s for s in stages if s["stage"] == "model_call"]
    assert [c["truncated"] for c in calls] == [True, False]
    assert "cut short at its 300-token output limit" in calls[0]["detail"]


def test_a_second_truncated_answer_is_not_asked_again() -> None:
    result, bodies, stages = run_stage("openai", ["truncated", "truncated"])

    # the second cut answer is not valid JSON: the ordinary repair follows, at the first limit
    assert [output_limit(b) for b in bodies] == [300, 600, 300]
    assert isinstance(result.answer, ScopeAnswer) and not result.degraded
    calls = [s for s in stages if s["stage"] == "model_call"]
    assert [c["truncated"] for c in calls] == [True, True, False]


def test_more_room_only_as_far_as_the_context_window_allows() -> None:
    _, (first, _), _ = run_stage("openai", ["truncated"])
    sent = sum(len(m["content"]) for m in first["messages"])
    prompt = math.ceil((sent + len(encode_json(json_schema(ScopeAnswer)))) / 2)
    window = prompt + 450  # room for 450 answer tokens beside the prompt, not for 600

    result, bodies, _ = run_stage("openai", ["truncated"], window=window)

    first_limit, second_limit = (output_limit(b) for b in bodies)
    # the body also carries the inputs block's fence, which the window's estimate leaves out
    assert first_limit == 300 and 450 <= second_limit < 480
    assert result.provider == "openai", "the second call fits the window: it is not skipped"
