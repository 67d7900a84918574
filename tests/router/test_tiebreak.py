"""The ADR-004 tie-breaker: valid targets only, validated answers, a 30 s timeout on the router's clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from router.clock import ManualClock
from router.config import DEFAULT_CHARS_PER_TOKEN
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import ChatRequest, ContextLimit
from router.tiebreak import FALLBACK_NOTE, TIE_BREAK_TASK, choose_target, tie_break_request
from router.truncation import TRUNCATED_GROWTH
from router.wire import prompt_tokens_in_window, request_chars

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


def output_limits(server: FaultServer) -> list[int | None]:
    """The output-token limit each chat request named (None: the server's own)."""
    return [r.json.get("max_tokens") for r in server.requests_for("openai", "chat")]


async def test_a_cut_answer_is_asked_again_once_with_more_room(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("publish", 0.9)
    fault_server.set_script({"providers": {"openai": {"sequence": ["truncated"], "then": "ok"}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    asked = router.policy.default_output_tokens

    result = await choose(router)

    assert output_limits(fault_server) == [None, asked * TRUNCATED_GROWTH]
    assert (result.target, result.confidence, result.outcome) == ("publish", 0.9, "model")


async def test_a_second_cut_answer_takes_the_default_edge(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("publish", 0.9)
    script = {"sequence": ["truncated", "truncated"], "then": "ok"}
    fault_server.set_script({"providers": {"openai": script}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    asked = router.policy.default_output_tokens

    result = await choose(router)

    assert output_limits(fault_server) == [None, asked * TRUNCATED_GROWTH], "asked again once"
    assert (result.target, result.confidence, result.outcome) == (
        "implement",
        0.0,
        "invalid_answer",
    )
    assert "cut at its output limit" in result.reasoning
    snap = next(s for s in router.snapshot() if s.name == "openai")
    assert snap.failures_total == 0, "a cut answer is not the provider's failure"


async def test_no_second_ask_when_the_context_window_has_no_more_room(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("publish", 0.9)
    fault_server.set_script({"providers": {"openai": {"sequence": ["truncated"], "then": "ok"}}})
    request = tie_break_request(
        step_id="review",
        valid_targets=TARGETS,
        hint="publish when verified",
        context="status VERIFIED",
    )
    estimate = ContextLimit(model="openai-model", tokens=1, chars_per_token=DEFAULT_CHARS_PER_TOKEN)
    prompt = prompt_tokens_in_window(estimate, request, request_chars(request))
    asked = make_config([]).policy.default_output_tokens
    window = {"openai-model": prompt + asked}  # exactly the room the first ask had
    router = make_router(
        make_config([provider_entry(fault_server, "openai", context_windows=window)])
    )

    result = await choose(router)

    assert output_limits(fault_server) == [None]
    assert (result.target, result.outcome) == ("implement", "invalid_answer")


async def test_a_failed_second_ask_keeps_the_cut_answer(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = answer("publish", 0.9)
    fault_server.set_script({"providers": {"openai": {"sequence": ["truncated", 500]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))

    result = await choose(router)  # no built-in tie_break handler: the second ask fails

    assert len(output_limits(fault_server)) == 2
    assert (result.target, result.outcome) == ("implement", "invalid_answer")
    assert "cut at its output limit" in result.reasoning


async def test_a_choice_of_the_builtin_fallback_says_so(
    fault_server: FaultServer,
    make_router: RouterFactory,
    registry: TaskHandlerRegistry,
    keys: dict,
) -> None:
    registry.register(
        TIE_BREAK_TASK,
        lambda req: {"target": "publish", "confidence": 0.4, "reasoning": "first valid target"},
    )
    fault_server.set_script({"providers": {"openai": {"sequence": [500]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))

    result = await choose(router)

    assert (result.target, result.outcome, result.provider) == ("publish", "model", "builtin")
    assert result.reasoning == FALLBACK_NOTE + "first valid target"
