"""The LangGraph engine's own mechanics: compilation, checkpoints, interrupts, bounds."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine import demo_steps  # noqa: F401 - registers the demo steps
from engine.context import InterruptAnswer, InterruptRequest, StepContext
from engine.events import InterruptRaised, InterruptResolved, StepStarted
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.langgraph_compile import START_NODE, build_state_graph
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow_text
from engine.protocol import RunContext
from engine.spec import WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.steps import REGISTRY, AnyInput, AnyOutput
from engine.store import InMemoryRunStore, RunStore
from tests.engine.kahn_helpers import answering


def workflow(steps: list[dict[str, Any]], **extra: Any) -> WorkflowDefinition:
    return load_workflow_text(
        json.dumps({"name": "lg_test", "steps": steps, **extra}), source="lg_test.yaml"
    )


CALLS: Counter[str] = Counter()


async def counted_ask(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A journaled model call, then a question (``config.asks`` of them)."""

    async def call() -> str:
        CALLS[f"{ctx.run_id}:{ctx.step_id}"] += 1
        return "model says yes"

    model, _ = await ctx.journaled("llm", call)
    answers = []
    for index in range(int(ctx.config.get("asks", 1))):
        answer = await ctx.interrupt(InterruptRequest(prompt=f"{ctx.step_id} question {index}"))
        answers.append(answer.action)
    return AnyOutput(model=model, answers=answers)


if "test.lg_counted_ask" not in REGISTRY:
    REGISTRY.register("test.lg_counted_ask", counted_ask)


# -- compilation -----------------------------------------------------------------------------


def test_a_join_is_one_list_edge_and_runs_once_whatever_the_branch_lengths() -> None:
    wf = workflow(
        [
            {"id": "a", "uses": "demo.echo"},
            {"id": "long1", "uses": "demo.echo", "depends_on": ["a"]},
            {"id": "long2", "uses": "demo.echo", "depends_on": ["long1"]},
            {"id": "short", "uses": "demo.echo", "depends_on": ["a"]},
            {"id": "join", "uses": "demo.gather", "depends_on": ["long2", "short"]},
        ]
    )
    builder = build_state_graph(
        WorkflowGraph(wf).topological_order(), lambda s: _noop, _noop, lambda s: _nowhere
    )
    assert set(builder.nodes) == {START_NODE, *wf.step_ids}
    assert set(builder.branches) == {START_NODE, *wf.step_ids}  # one dispatch edge per node

    store = InMemoryRunStore()
    result = asyncio.run(LangGraphEngine().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.COMPLETED
    started = Counter(e.step_id for e in store.events(result.run_id) if isinstance(e, StepStarted))
    assert started["join"] == 1
    assert result.outputs == {} and store.step_results(result.run_id)["join"].outputs["count"] == 4


def test_a_skip_is_a_status_so_a_join_behind_a_skipped_branch_still_settles() -> None:
    wf = workflow(
        [
            {"id": "a", "uses": "demo.echo"},
            {"id": "off", "uses": "demo.echo", "depends_on": ["a"], "when": "false"},
            {"id": "off_child", "uses": "demo.echo", "depends_on": ["off"]},
            {
                "id": "join",
                "uses": "demo.gather",
                "depends_on": ["a", "off_child"],
                "trigger": "none_failed",
            },
        ]
    )
    store = InMemoryRunStore()
    result = asyncio.run(LangGraphEngine().execute(wf, RunContext(store=store)))
    statuses = {k: v.value for k, v in result.step_statuses.items()}
    assert statuses == {
        "a": "SUCCEEDED",
        "off": "SKIPPED",
        "off_child": "SKIPPED",
        "join": "SUCCEEDED",
    }


def test_a_loop_body_with_a_dependent_outside_it_runs_the_dependent_once_after_the_last_pass() -> (
    None
):
    wf = workflow(
        [
            {"id": "draft", "uses": "demo.echo"},
            {"id": "body", "uses": "demo.echo", "depends_on": ["draft"]},
            {"id": "outside", "uses": "demo.gather", "depends_on": ["body"]},
            {
                "id": "critic",
                "uses": "demo.critic",
                "depends_on": ["body"],
                "routing": {"kind": "loop", "loop": {"target": "draft", "max_iterations": 2}},
            },
        ]
    )
    store = InMemoryRunStore()
    result = asyncio.run(LangGraphEngine().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.COMPLETED
    started = [e.step_id for e in store.events(result.run_id) if isinstance(e, StepStarted)]
    assert Counter(started) == Counter({"draft": 3, "body": 3, "critic": 3, "outside": 1})
    assert started.index("outside") > max(i for i, s in enumerate(started) if s == "critic")


def test_a_loop_body_step_waits_for_an_outside_dependency_through_a_gate() -> None:
    wf = workflow(
        [
            {"id": "a", "uses": "demo.echo"},
            {"id": "side", "uses": "demo.echo"},
            {"id": "body", "uses": "demo.gather", "depends_on": ["a", "side"]},
            {
                "id": "check",
                "uses": "demo.echo",
                "depends_on": ["body"],
                "routing": {"kind": "loop", "loop": {"target": "a", "max_iterations": 2}},
            },
        ]
    )
    store = InMemoryRunStore()
    result = asyncio.run(LangGraphEngine().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.COMPLETED
    started = Counter(e.step_id for e in store.events(result.run_id) if isinstance(e, StepStarted))
    assert started == Counter({"a": 3, "body": 3, "check": 3, "side": 1})


async def _noop(state: Any) -> dict[str, Any]:
    return {}


# -- bounds ------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine_class", [KahnEngine, LangGraphEngine])
def test_the_step_run_bound_is_ours_and_the_same_on_both_engines(engine_class: type) -> None:
    wf = workflow(
        [
            {"id": "author", "uses": "demo.author"},
            {
                "id": "critic",
                "uses": "demo.critic",
                "depends_on": ["author"],
                "config": {"converge_at": 99},
                "routing": {
                    "kind": "loop",
                    "next": "publish",
                    "loop": {"target": "author", "max_iterations": 50},
                },
            },
            {"id": "publish", "uses": "demo.echo"},
        ],
        limits={"max_step_runs": 7},
    )
    store = InMemoryRunStore()
    result = asyncio.run(engine_class().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.PARTIAL
    assert "max_step_runs 7" in result.reason
    started = [e for e in store.events(result.run_id) if isinstance(e, StepStarted)]
    assert len(started) == 7
    assert result.step_statuses["publish"] == StepStatus.SKIPPED


# -- checkpoints and history -------------------------------------------------------------------


def test_checkpoints_live_in_their_own_file_next_to_the_run_store(tmp_path: Path) -> None:
    wf = workflow(
        [{"id": "a", "uses": "demo.echo"}, {"id": "b", "uses": "demo.echo", "depends_on": ["a"]}]
    )
    engine = LangGraphEngine()
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = asyncio.run(engine.execute(wf, RunContext(store=store)))
        history = asyncio.run(engine.history(result.run_id, store))
    assert engine.checkpoint_file(store) == tmp_path / "checkpoints.sqlite"
    assert (tmp_path / "checkpoints.sqlite").exists()
    assert [entry.changed for entry in history if entry.changed][-2:] == [
        {"a": "SUCCEEDED"},
        {"b": "SUCCEEDED"},
    ]
    assert history[-1].statuses == {"a": "SUCCEEDED", "b": "SUCCEEDED"}
    assert [entry.superstep for entry in history] == sorted(entry.superstep for entry in history)


def test_a_kahn_run_has_its_stored_transitions_as_history(tmp_path: Path) -> None:
    wf = workflow(
        [{"id": "a", "uses": "demo.echo"}, {"id": "b", "uses": "demo.echo", "when": "false"}]
    )
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
        history = asyncio.run(LangGraphEngine().history(result.run_id, store))
    assert sorted((entry.changed for entry in history), key=str) == [
        {"a": "SUCCEEDED"},
        {"b": "SKIPPED"},
    ]
    assert history[-1].checkpoint_id.startswith("seq:")


# -- interrupts --------------------------------------------------------------------------------


def _held_workflow() -> WorkflowDefinition:
    return workflow(
        [
            {"id": "ask", "uses": "test.lg_counted_ask"},
            {"id": "fast", "uses": "demo.echo"},
            {"id": "after_fast", "uses": "demo.echo", "depends_on": ["fast"]},
        ]
    )


def test_an_interrupt_holds_its_superstep_and_says_which_steps_it_holds() -> None:
    store = InMemoryRunStore()
    wf = _held_workflow()
    lang = asyncio.run(LangGraphEngine().execute(wf, RunContext(store=store)))
    kahn = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
    assert lang.status == kahn.status == RunStatus.WAITING
    raised = [e for e in store.events(lang.run_id) if isinstance(e, InterruptRaised)]
    assert [(e.step_id, e.held_steps) for e in raised] == [("ask", ["ask", "after_fast"])]
    assert lang.step_statuses["after_fast"] == StepStatus.PENDING
    assert kahn.step_statuses["after_fast"] == StepStatus.SUCCEEDED
    kahn_raised = [e for e in store.events(kahn.run_id) if isinstance(e, InterruptRaised)]
    assert [e.held_steps for e in kahn_raised] == [["ask"]]


def test_several_pending_interrupts_are_answered_by_id() -> None:
    wf = workflow(
        [
            {"id": "left", "uses": "test.lg_counted_ask"},
            {"id": "right", "uses": "test.lg_counted_ask"},
            {"id": "join", "uses": "demo.gather", "depends_on": ["left", "right"]},
        ]
    )
    store = InMemoryRunStore()
    engine = LangGraphEngine()
    first = asyncio.run(engine.execute(wf, RunContext(store=store)))
    assert first.status == RunStatus.WAITING
    pending = {p.step_id: p.interrupt_id for p in store.pending_interrupts(first.run_id)}
    assert set(pending) == {"left", "right"}
    answers = {
        pending["left"]: InterruptAnswer(action="reject"),
        pending["right"]: InterruptAnswer(action="approve"),
    }
    second = asyncio.run(
        engine.resume(first.run_id, RunContext(store=store, responder=answering(answers)))
    )
    assert second.status == RunStatus.COMPLETED
    results = store.step_results(first.run_id)
    assert results["left"].outputs["answers"] == ["reject"]
    assert results["right"].outputs["answers"] == ["approve"]


def test_a_partly_answered_superstep_lets_the_answered_step_finish() -> None:
    wf = workflow(
        [
            {"id": "left", "uses": "test.lg_counted_ask"},
            {"id": "right", "uses": "test.lg_counted_ask"},
        ]
    )
    store = InMemoryRunStore()
    engine = LangGraphEngine()
    first = asyncio.run(engine.execute(wf, RunContext(store=store)))
    pending = {p.step_id: p.interrupt_id for p in store.pending_interrupts(first.run_id)}
    second = asyncio.run(
        engine.resume(
            first.run_id,
            RunContext(
                store=store,
                responder=answering({pending["left"]: InterruptAnswer(action="approve")}),
            ),
        )
    )
    assert second.status == RunStatus.WAITING
    assert second.step_statuses["left"] == StepStatus.SUCCEEDED
    assert second.step_statuses["right"] == StepStatus.WAITING_HUMAN
    assert second.pending_interrupts == [pending["right"]]


@pytest.mark.parametrize("engine_class", [KahnEngine, LangGraphEngine])
def test_answered_in_process_the_step_starts_once_and_calls_the_model_once(
    engine_class: type,
) -> None:
    wf = workflow([{"id": "ask", "uses": "test.lg_counted_ask", "config": {"asks": 2}}])
    store = InMemoryRunStore()
    asked: list[str] = []

    async def responder(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        asked.append(request.prompt)
        return InterruptAnswer(action="approve" if len(asked) == 1 else "reject")

    result = asyncio.run(engine_class().execute(wf, RunContext(store=store, responder=responder)))
    assert result.status == RunStatus.COMPLETED
    assert asked == ["ask question 0", "ask question 1"]
    assert CALLS[f"{result.run_id}:ask"] == 1
    events = store.events(result.run_id)
    assert [e.kind for e in events if e.kind.startswith(("step_", "interrupt_"))] == [
        "step_started",
        "interrupt_raised",
        "interrupt_resolved",
        "interrupt_raised",
        "interrupt_resolved",
        "step_finished",
    ]
    assert store.step_results(result.run_id)["ask"].outputs["answers"] == ["approve", "reject"]
    assert [e.answer["action"] for e in events if isinstance(e, InterruptResolved)] == [
        "approve",
        "reject",
    ]


@pytest.mark.parametrize("engine_class", [KahnEngine, LangGraphEngine])
def test_cancel_stops_the_running_step_and_skips_the_rest(engine_class: type) -> None:
    wf = workflow(
        [
            {"id": "slow", "uses": "demo.sleep", "config": {"seconds": 30}},
            {"id": "after", "uses": "demo.echo", "depends_on": ["slow"]},
        ]
    )
    store = InMemoryRunStore()
    engine = engine_class()

    async def go() -> Any:
        task = asyncio.create_task(engine.execute(wf, RunContext(store=store, run_id="to-cancel")))
        while not any(isinstance(e, StepStarted) for e in store.events("to-cancel")):
            await asyncio.sleep(0.01)
        engine.cancel("to-cancel")
        return await task

    result = asyncio.run(go())
    assert result.status == RunStatus.CANCELLED
    assert result.step_statuses == {"slow": StepStatus.SKIPPED, "after": StepStatus.SKIPPED}
    assert store.step_results("to-cancel")["slow"].reason == "run stopped: cancelled"


def _nowhere(state: Any) -> list[str]:
    return []
