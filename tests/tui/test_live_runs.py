"""Live runs on the real engines, driven from the app: prompts reach the waiting step.

The approval and tie-breaker tests run on both engines (forced through
``Workbench.new_run_job``'s engine override). Their workflows are the shipped
ones plus a side branch that does not depend on the asking step: on Kahn only
the asking step waits and the side branch runs while the prompt is open; on
LangGraph the pause holds its superstep, so the side branch is ready but held —
named in ``InterruptRaised.held_steps`` and drawn ◷ until the answer comes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.widgets import Static

from engine.events import InterruptRaised, InterruptResolved, StepFinished
from engine.protocol import TieBreakAnswer, TieBreakRequest
from engine.states import RunStatus, StepStatus
from engine.store import RunStore
from tests.tui.pilot_wait import highlighted, press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.app.widgets.dag_outline import DagOutline
from tui.app.widgets.dag_view import HELD_GLYPH, DagView
from tui.app.widgets.prompts import ApprovalPrompt, TieBreakPrompt
from tui.launch.parts import RunParts
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench

SIZE = (150, 46)
ENGINES = ["kahn", "langgraph"]


async def unsure_tie_breaker(request: TieBreakRequest) -> TieBreakAnswer:
    """A model that leans to the last valid target with confidence under every threshold."""
    return TieBreakAnswer(
        target=request.valid_targets[-1], confidence=0.4, reasoning="two claims are thin"
    )


def live_workbench(tmp_path: Path) -> Workbench:
    return Workbench(
        workspace=tmp_path,
        shipped_dir=tmp_path / "none",
        parts=RunParts(tie_breaker=unsure_tie_breaker),
    )


def with_side_branch(shipped: Path, folder: Path, after: str, length: int) -> Path:
    """The shipped workflow plus a chain ``side_1 → … → side_<length>`` hanging off ``after`` only.

    ``after`` is a step of the asking step's superstep (or before it), so on LangGraph
    the last side step is ready when that superstep ends — exactly what a pause holds.
    """
    data = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    previous = after
    for index in range(1, length + 1):
        step_id = f"side_{index}"
        data["steps"].append(
            {
                "id": step_id,
                "uses": "demo.echo",
                "depends_on": [previous],
                "config": {"set": {"side": index}},
            }
        )
        previous = step_id
    path = folder / shipped.name
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def start_on(app: WorkbenchApp, path: Path, inputs: dict[str, Any], engine: str) -> RunScreen:
    """Start a run on ``engine`` as ``workbench run --engine ENGINE`` does (the user override)."""
    return app.start_job(app.workbench.new_run_job(path, inputs, engine=engine))


def dag_lines(screen: RunScreen) -> list[str]:
    """The graph as drawn: the DagView's lines through its line API."""
    dag = screen.query_one(DagView)
    return [dag.render_line(y).text for y in range(dag.size.height)]


def outline_label(screen: RunScreen, step_id: str) -> str:
    """The outline view's line for ``step_id`` (its tree node's label)."""
    nodes = list(screen.query_one(DagOutline).root.children)
    while nodes:
        node = nodes.pop()
        if node.data == step_id:
            return str(node.label)
        nodes.extend(node.children)
    raise AssertionError(f"{step_id} is not in the outline")


def shown_glyph(screen: RunScreen, step_id: str) -> str:
    """The state glyph the graph draws in front of ``step_id``; the outline must agree."""
    lines = [line + " " for line in dag_lines(screen)]
    glyphs = {line[line.index(f" {step_id} ") - 1] for line in lines if f" {step_id} " in line}
    assert len(glyphs) == 1, (step_id, dag_lines(screen))
    glyph = glyphs.pop()
    assert outline_label(screen, step_id).startswith(f"{glyph} {step_id}"), outline_label(
        screen, step_id
    )
    return glyph


def assert_held_while_waiting(
    screen: RunScreen, prompt: Any, engine: str, asking: str, side: str
) -> None:
    """Kahn holds only the asking step; LangGraph holds its superstep, and the screen says so."""
    event: InterruptRaised = prompt.event
    assert event.step_id == asking
    assert shown_glyph(screen, asking) == "‖"
    if engine == "kahn":
        assert event.held_steps == [asking]
        assert not prompt.query("#prompt-held"), "Kahn holds nothing besides the asking step"
        return
    assert event.held_steps == [asking, side]
    step = screen.view.steps[side]
    assert step.status is StepStatus.PENDING and step.held_by == event.interrupt_id
    assert shown_glyph(screen, side) == HELD_GLYPH
    assert (
        str(prompt.query_one("#prompt-held", Static).render())
        == f"also held while this waits: {side}"
    )


@pytest.mark.parametrize("engine", ENGINES)
async def test_answering_an_approval_reaches_the_step(tmp_path: Path, engine: str) -> None:
    workflow = with_side_branch(
        SHIPPED_WORKFLOWS / "approval.yaml", tmp_path, after="warm_cache", length=1
    )
    app = WorkbenchApp(live_workbench(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = start_on(app, workflow, {"topic": "launch"}, engine)
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        prompt = app.screen
        await until(pilot, lambda: prompt.event.interrupt_id in screen.view.pending)
        await until(pilot, lambda: screen.view.steps["warm_cache"].status is StepStatus.SUCCEEDED)
        if (
            engine == "kahn"
        ):  # only the asking step waits: the side branch goes on while the prompt is open
            await until(pilot, lambda: screen.view.steps["side_1"].status is StepStatus.SUCCEEDED)
        assert screen.view.engine == engine
        assert screen.view.steps["plan"].status is StepStatus.WAITING_HUMAN
        assert screen.view.steps["execute"].status is StepStatus.PENDING
        assert_held_while_waiting(screen, prompt, engine, asking="plan", side="side_1")
        await pilot.press("f2")
        await until(pilot, lambda: screen.view.status == "COMPLETED")
        assert isinstance(app.screen, RunScreen)
        assert all(step.held_by is None for step in screen.view.steps.values())
        assert shown_glyph(screen, "side_1") == "✔"
        run_id = screen.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    assert store.get_run(run_id).engine == engine
    resolved = [e for e in store.events(run_id) if isinstance(e, InterruptResolved)]
    assert len(resolved) == 1 and resolved[0].step_id == "plan"
    assert resolved[0].answer["action"] == "approve" and not resolved[0].automatic
    results = store.step_results(run_id)
    assert results["plan"].outputs == {"topic": "launch", "steps": 3}
    assert results["execute"].status is StepStatus.SUCCEEDED
    assert results["execute"].outputs["sources"] == ["plan", "warm_cache"]
    store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_choosing_a_tie_breaker_target_routes_the_run(tmp_path: Path, engine: str) -> None:
    workflow = with_side_branch(
        SHIPPED_WORKFLOWS / "demo_tiebreak.yaml", tmp_path, after="draft", length=2
    )
    app = WorkbenchApp(live_workbench(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = start_on(app, workflow, {}, engine)
        await until(pilot, lambda: prompt_ready(app, TieBreakPrompt))
        prompt = app.screen
        assert prompt.valid == ["publish", "revise"]
        assert prompt.event.payload["suggestion"] == "revise"
        await until(pilot, lambda: prompt.event.interrupt_id in screen.view.pending)
        if engine == "kahn":
            await until(pilot, lambda: screen.view.steps["side_2"].status is StepStatus.SUCCEEDED)
        else:  # side_1 shares the asking step's superstep; side_2 comes after it, so the pause holds it
            await until(pilot, lambda: screen.view.steps["side_1"].status is StepStatus.SUCCEEDED)
        assert screen.view.engine == engine
        assert screen.view.steps["review"].status is StepStatus.WAITING_HUMAN
        assert_held_while_waiting(screen, prompt, engine, asking="review", side="side_2")
        targets = prompt.query_one("#prompt-targets")
        await press(pilot, "up", lambda: highlighted(targets) == "publish")
        await press(pilot, "enter", lambda: screen.view.status == "COMPLETED")
        steps = screen.view.steps
        assert steps["publish"].status is StepStatus.SUCCEEDED
        assert steps["revise"].status is StepStatus.SKIPPED
        assert steps["side_2"].status is StepStatus.SUCCEEDED and steps["side_2"].held_by is None
        assert steps["review"].route is not None and steps["review"].route.next_step_id == "publish"
        run_id = screen.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).engine == engine
    resolved = [e for e in store.events(run_id) if isinstance(e, InterruptResolved)]
    assert [(e.step_id, e.answer["action"], e.answer["value"]) for e in resolved] == [
        ("review", "choose", "publish")
    ]
    store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_run_left_waiting_is_answered_and_resumed_later(
    tmp_path: Path, engine: str
) -> None:
    workbench = live_workbench(tmp_path)
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = start_on(app, SHIPPED_WORKFLOWS / "approval.yaml", {}, engine)
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        run_id = screen.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).status is RunStatus.WAITING
    assert store.get_run(run_id).engine == engine
    assert [r.step_id for r in store.pending_interrupts(run_id)] == ["plan"]
    store.close()

    app = WorkbenchApp(live_workbench(tmp_path), open_run_id=run_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        await pilot.press("f2")
        screen = app.screen_stack[-1]
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: screen.view.status == "COMPLETED")
        finished = {e.step_id for e in screen.events if isinstance(e, StepFinished)}
        assert {"plan", "warm_cache", "execute"} <= finished
