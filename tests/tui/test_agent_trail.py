"""An advisory run in the app: the DAG grows a node per invoked agent, and step detail shows
each node's trail and the orchestrator's decisions with their reasoning."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from engine.states import StepStatus
from engine.store import RunStore
from tests.agents.agent_helpers import (
    ADVISORY_WORKFLOW,
    ScriptedModel,
    load,
    make_registry,
    run_workflow,
    steps_for,
)
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.run_state import RunView
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.dag_view import DagView
from tui.launch.workbench import Workbench


async def _advisory_run(workspace: Path) -> str:
    steps = steps_for(make_registry())
    with RunStore(workspace / "runs.sqlite") as store:
        result, _ = await run_workflow(
            load(ADVISORY_WORKFLOW, steps), steps, store, ScriptedModel(), inputs={"topic": "owls"}
        )
    return result.run_id


async def test_the_dag_grows_as_the_orchestrator_decides(tmp_path: Path) -> None:
    run_id = await _advisory_run(tmp_path)
    with RunStore(tmp_path / "runs.sqlite") as store:
        events = store.events(run_id)
    view = RunView()
    orders = []
    for event in events:
        view.apply(event)
        orders.append(len(view.order))
    assert view.order == ["orchestrator", "alpha#1", "gamma#1", "beta#1"]
    assert len(set(orders)) == 4, "one node appears with each decision, not all at once"
    assert [(e.source, e.target) for e in view.edges] == [
        ("orchestrator", "alpha#1"),
        ("alpha#1", "gamma#1"),
        ("gamma#1", "beta#1"),
    ]
    assert all(view.steps[n].status is StepStatus.SUCCEEDED for n in view.order)
    decisions = [line for line in view.steps["orchestrator"].trail if line.startswith("decision")]
    assert decisions[0] == (
        "decision 1: invoke alpha — Following the suggested sequence: alpha runs next."
    )
    alpha = view.steps["alpha#1"].trail
    assert alpha[0] == decisions[0], "a grown node shows the decision that made it"
    assert alpha[1].startswith("alpha 1. thought: I will use lookup. → lookup(topic='owls')")
    assert alpha[2].startswith("alpha 1. observed: ")
    assert alpha[-1] == "alpha completed after 4 turn(s): final answer"


async def test_step_detail_shows_an_agent_nodes_trail(tmp_path: Path) -> None:
    run_id = await _advisory_run(tmp_path)
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=(150, 46)) as pilot:
        await pilot.pause()
        screen = app.open_run(run_id)
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and bool(screen.view.order))
        assert isinstance(screen, RunScreen)
        dag = screen.query_one(DagView)
        dag.focus()
        dag.selected = "gamma#1"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, StepDetailScreen))
        detail = app.screen
        assert isinstance(detail, StepDetailScreen) and detail.step.id == "gamma#1"
        trail = str(detail.query_one("#detail-trail", Static).render())
        assert "gamma 1. thought: I have what I need. → final" in trail
        assert "gamma completed after 1 turn(s)" in trail
