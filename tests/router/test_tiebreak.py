"""The ADR-004 tie-breaker: valid targets only, validated answers, a 30 s timeout on the router's clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from router.clock import ManualClock
from router.fault_server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import ChatRequest
from router.tiebreak import TIE_BREAK_TASK, choose_target

from .conftest import RouterFactory, make_config, provider_entry, until

TARGETS = ["publish", "implement"]


def answer(target: str, confidence: float = 0.8) -> Any:
    return lambda task, inputs, raw: {
        "target": target,
        "confidence": confidence,
        "reasoning": "looks done",
    }


async def choose(router: Any, **kwargs: Any):
    params = dict(
        step_id="review",
        valid_targets=TARGETS,
        hint="publish when verified",
        context="status VERIFIED",
        default_target="implement",
    )
    params.update(kwargs)
    return await choose_target(router, **params)


async def test_model_choice(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("publish", 0.9)
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    result = await choose(router)
    assert (result.target, result.confidence, result.outcome) == ("publish", 0.9, "model")
    record = fault_server.requests_for("openai", "chat")[0]
    assert record.task == TIE_BREAK_TASK
    assert record.inputs == {
        "step_id": "review",
        "valid_targets": TARGETS,
        "hint": "publish when verified",
        "context": "status VERIFIED",
    }
    prompt = record.json["messages"][-1]["content"]
    assert "- publish\n- implement" in prompt


async def test_invalid_target_falls_back_to_default(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("deploy_to_prod")
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    result = await choose(router)
    assert (result.target, result.confidence, result.outcome) == (
        "implement",
        0.0,
        "invalid_answer",
    )
    assert "deploy_to_prod" in result.reasoning


async def test_case_and_space_differences_are_accepted(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer(" Publish ")
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    assert (await choose(router)).target == "publish"


async def test_timeout_after_30s_of_router_time(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"latency_s": 5}}})
    router = make_router(make_config([provider_entry(fault_server, "openai", timeout_s=60)]))
    task = asyncio.ensure_future(choose(router))
    await until(lambda: bool(fault_server.requests_for("openai", "chat")), "the call is sent")
    clock.advance(29.9)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(0.1)
    result = await task
    assert (result.target, result.outcome) == ("implement", "timeout")


async def test_router_error_is_reported(make_router: RouterFactory) -> None:
    router = make_router(make_config([]))  # no provider and no tie_break handler
    result = await choose(router)
    assert (result.target, result.outcome) == ("implement", "error")


async def test_builtin_can_answer(
    make_router: RouterFactory, registry: TaskHandlerRegistry
) -> None:
    def builtin(req: ChatRequest) -> dict[str, Any]:
        targets = req.inputs["valid_targets"]
        return {"target": targets[0], "confidence": 0.4, "reasoning": "first valid target"}

    registry.register(TIE_BREAK_TASK, builtin)
    router = make_router(make_config([]))
    result = await choose(router)
    assert (result.target, result.outcome, result.provider) == ("publish", "model", "builtin")


async def test_needs_a_target(make_router: RouterFactory) -> None:
    with pytest.raises(ValueError):
        await choose(make_router(make_config([])), valid_targets=[])
