"""Routing through the Kahn engine: the shipped demo workflows, tie-breaks, determinism."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.canonical import canonical_run, compare
from engine.context import InterruptAnswer
from engine.kahn import KahnEngine
from engine.loader import load_workflow
from engine.protocol import RunContext, TieBreakAnswer, TieBreakRequest
from engine.states import RunStatus, StepStatus
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import (
    TEST_REGISTRY,
    answering,
    approve_all,
    kinds_of,
    run,
    step,
    workflow,
)
from workflows import WORKFLOWS_DIR

DEMOS = ["fan_out", "conditional", "value_branch", "microloop", "detour", "terminate", "approval"]


def demo(name: str) -> Path:
    return WORKFLOWS_DIR / f"{name}.yaml"


@pytest.mark.parametrize("name", DEMOS)
async def test_every_demo_workflow_runs_with_no_input(name: str) -> None:
    wf = load_workflow(demo(name))
    result, _ = await run(wf, responder=approve_all)
    assert result.status == RunStatus.COMPLETED, result.reason


async def test_microloop_keeps_history_and_exits_on_the_cel_condition() -> None:
    store = InMemoryRunStore()
    result, events = await run(load_workflow(demo("microloop")), store=store)
    critic = store.step_results(result.run_id)["critic"]
    assert critic.iteration == 2
    assert [h.outputs["status"] for h in critic.history] == ["NEEDS_WORK", "NEEDS_WORK", "VERIFIED"]
    routes = [e.signal for e in events if e.kind == "route_decided"]
    assert [(s.decision, s.next_step_id) for s in routes] == [
        ("loop", "author"),
        ("loop", "author"),
        ("advance", "publish"),
    ]
    assert result.outputs["rounds"] == 3
    author_inputs = [e.inputs for e in events if e.kind == "step_started" and e.step_id == "author"]
    assert author_inputs[1]["feedback"] == "tighten section 1", (
        "the author sees the critic's latest outputs"
    )


async def test_a_loop_at_max_iterations_takes_the_default_edge() -> None:
    wf = workflow(
        step("author", "demo.author"),
        step(
            "critic",
            "demo.critic",
            depends_on=["author"],
            config={"converge_at": 99},
            routing={
                "kind": "loop",
                "next": "publish",
                "loop": {"target": "author", "max_iterations": 2},
            },
        ),
        step("publish"),
    )
    result, events = await run(wf)
    assert result.status == RunStatus.COMPLETED
    routes = [e.signal.route for e in events if e.kind == "route_decided"]
    assert routes == ["loop", "loop", "loop_exhausted"]
    assert kinds_of(events, "publish") == ["step_started", "step_finished"]


async def test_detour_runs_its_target_and_returns_to_the_declaring_step() -> None:
    result, events = await run(load_workflow(demo("detour")))
    review = [
        e for e in events if getattr(e, "step_id", None) == "review" and e.kind == "step_started"
    ]
    assert [e.iteration for e in review] == [0, 1]
    order = [(e.kind, e.step_id) for e in events if e.kind in ("step_started", "step_finished")]
    assert order.index(("step_finished", "gather_context")) < order.index(
        ("step_started", "publish")
    )
    assert order.index(("step_started", "gather_context")) > order.index(
        ("step_finished", "review")
    )
    routes = [(e.step_id, e.signal.route) for e in events if e.kind == "route_decided"]
    assert routes == [("review", "detour"), ("gather_context", "detour_return"), ("review", "next")]
    assert result.step_statuses["publish"] == StepStatus.SUCCEEDED


async def test_a_branch_skips_the_targets_not_chosen_and_skips_propagate() -> None:
    wf = workflow(
        step(
            "classify",
            "demo.classify",
            config={"status": "BLOCKED"},
            routing={
                "kind": "branch",
                "branches": {"VERIFIED": "ship", "BLOCKED": "escalate"},
                "next": "ship",
            },
        ),
        step("ship"),
        step("announce", depends_on=["ship"]),
        step("escalate"),
    )
    result, events = await run(wf)
    assert result.step_statuses["ship"] == StepStatus.SKIPPED
    assert result.step_statuses["announce"] == StepStatus.SKIPPED
    assert result.step_statuses["escalate"] == StepStatus.SUCCEEDED
    skipped = {e.step_id: e.reason for e in events if e.kind == "step_skipped"}
    assert skipped == {
        "ship": "not routed (by classify)",
        "announce": "every dependency was skipped",
    }


async def test_terminate_completes_the_run_and_skips_the_rest() -> None:
    result, events = await run(load_workflow(demo("terminate")))
    assert result.status == RunStatus.COMPLETED
    assert result.step_statuses == {
        "quick_check": StepStatus.SUCCEEDED,
        "deep_check": StepStatus.SKIPPED,
        "report": StepStatus.SKIPPED,
    }
    assert "deep_check" not in [e.step_id for e in events if e.kind == "step_started"]


def _tie_workflow() -> object:
    return workflow(
        step(
            "judge",
            "demo.classify",
            routing={
                "kind": "conditional",
                "next": "publish",
                "conditions": [{"expr": "outputs.status == 'NEVER'", "target": "rework"}],
                "tie_breaker": {
                    "enabled": True,
                    "valid_targets": ["publish", "rework"],
                    "confidence_threshold": 0.7,
                },
            },
        ),
        step("publish"),
        step("rework"),
    )


async def test_a_confident_tie_breaker_chooses_among_graph_targets() -> None:
    asked: list[TieBreakRequest] = []

    async def model(request: TieBreakRequest) -> TieBreakAnswer:
        asked.append(request)
        return TieBreakAnswer(target="rework", confidence=0.9, reasoning="weak")

    result, events = await run(_tie_workflow(), tie_breaker=model)  # type: ignore[arg-type]
    assert asked[0].valid_targets == ["publish", "rework"] and asked[0].default_target == "publish"
    signal = next(e.signal for e in events if e.kind == "route_decided")
    assert (signal.next_step_id, signal.tie_breaker_used, signal.needs_human) == (
        "rework",
        True,
        False,
    )
    assert result.step_statuses["publish"] == StepStatus.SKIPPED


async def test_an_invalid_tie_breaker_answer_falls_back_to_the_default_edge() -> None:
    async def model(request: TieBreakRequest) -> TieBreakAnswer:
        return TieBreakAnswer(target="somewhere_else", confidence=0.99)

    result, events = await run(_tie_workflow(), tie_breaker=model)  # type: ignore[arg-type]
    signal = next(e.signal for e in events if e.kind == "route_decided")
    assert (signal.next_step_id, signal.needs_human) == ("publish", True)
    assert result.step_statuses["rework"] == StepStatus.SKIPPED


async def test_an_unsure_tie_breaker_asks_a_person_and_default_answers_take_the_default_edge() -> (
    None
):
    async def model(request: TieBreakRequest) -> TieBreakAnswer:
        return TieBreakAnswer(target="rework", confidence=0.3)

    result, events = await run(_tie_workflow(), tie_breaker=model, responder=approve_all)  # type: ignore[arg-type]
    raised = next(e for e in events if e.kind == "interrupt_raised")
    assert raised.interrupt_kind == "tie_breaker" and raised.options == ["publish", "rework"]
    resolved = next(e for e in events if e.kind == "interrupt_resolved")
    assert resolved.automatic and resolved.answer["value"] == "publish"
    signal = next(e.signal for e in events if e.kind == "route_decided")
    assert (signal.next_step_id, signal.needs_human) == ("publish", True)
    assert result.step_statuses["rework"] == StepStatus.SKIPPED


async def test_an_unsure_tie_breaker_with_nobody_there_leaves_the_run_waiting_then_a_person_chooses() -> (
    None
):
    async def model(request: TieBreakRequest) -> TieBreakAnswer:
        return TieBreakAnswer(target="rework", confidence=0.3)

    store = InMemoryRunStore()
    waiting, _ = await run(_tie_workflow(), store=store, tie_breaker=model)  # type: ignore[arg-type]
    assert waiting.status == RunStatus.WAITING
    assert waiting.step_statuses["judge"] == StepStatus.WAITING_HUMAN
    calls: list[TieBreakRequest] = []

    async def must_not_be_called(request: TieBreakRequest) -> TieBreakAnswer:
        calls.append(request)
        return TieBreakAnswer(target="publish", confidence=1.0)

    resumed = await KahnEngine(registry=TEST_REGISTRY).resume(
        waiting.run_id,
        RunContext(
            store=store,
            tie_breaker=must_not_be_called,
            responder=answering({"judge": InterruptAnswer(action="choose", value="rework")}),
        ),
    )
    assert resumed.status == RunStatus.COMPLETED
    assert calls == [], "the tie-breaker's answer was journaled and replays"
    assert resumed.step_statuses["rework"] == StepStatus.SUCCEEDED
    signal = [e.signal for e in store.events(waiting.run_id) if e.kind == "route_decided"][-1]
    assert signal.reason.startswith("a person chose rework")


async def test_the_same_definition_gives_the_same_canonical_run() -> None:
    wf = load_workflow(demo("fan_out"))
    first, first_events = await run(wf)
    second, second_events = await run(wf)
    assert compare(canonical_run(first_events), canonical_run(second_events)) == []
