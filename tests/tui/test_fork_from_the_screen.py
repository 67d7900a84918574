"""Time travel from the screen (issue 25, item 6): a replayed step is forked — its run's inputs
edited — and the fork runs live on its own screen, through the one launcher and the engine's time
travel; step detail shows what the steps before a step gave it. The real app through Pilot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static, TextArea

from engine.states import RunStatus
from engine.store import RunStore
from tests.tui.pilot_wait import press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.fork import ForkScreen
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.prompts import ApprovalPrompt
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench

SIZE = (150, 46)


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
async def test_fork_a_replayed_step_with_an_edited_input_and_watch_it(
    tmp_path: Path, engine: str
) -> None:
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        job = app.workbench.new_run_job(
            SHIPPED_WORKFLOWS / "approval.yaml", {"topic": "launch"}, engine=engine
        )
        screen = app.start_job(job)
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        await press(pilot, "ctrl+a", lambda: app.screen is screen)
        await until(pilot, lambda: not screen.live and screen.view.status == "COMPLETED")
        dag = screen.query_one(DagView)
        dag.focus()
        dag.selected = "execute"
        await until(pilot, lambda: app.focused is dag)

        await press(pilot, "enter", lambda: isinstance(app.screen, StepDetailScreen))
        detail = app.screen
        headings = [str(s.render()) for s in detail.query(".detail-heading").results(Static)]
        assert "What plan gave it" in headings and "What warm_cache gave it" in headings
        await press(pilot, "escape", lambda: app.screen is screen)

        await press(pilot, "t", lambda: isinstance(app.screen, ForkScreen))
        form = app.screen
        edits = form.query_one("#fork-edits", TextArea)
        document = json.loads(edits.text)
        assert document["inputs"]["topic"] == "launch"
        assert set(document["outputs"]) == {"plan", "warm_cache"}
        document["inputs"]["topic"] = "relaunch"
        edits.text = json.dumps(document)
        await press(
            pilot, "ctrl+s", lambda: isinstance(app.screen, RunScreen) and app.screen is not screen
        )
        fork = app.screen
        assert isinstance(fork, RunScreen) and fork.run_id != screen.run_id
        await until(pilot, lambda: not fork.live and fork.view.status == "COMPLETED")
        fork_id = fork.run_id
    with RunStore(tmp_path / "runs.sqlite") as store:
        record = store.get_run(fork_id)
        results = store.step_results(fork_id)
    assert record.parent_run_id == job.run_id and record.forked_at == "execute"
    assert record.status is RunStatus.COMPLETED and record.engine == engine
    assert record.inputs["topic"] == "relaunch"
    assert results["execute"].outputs["sources"] == ["plan", "warm_cache"]


async def test_a_fork_that_cannot_be_made_says_why_in_the_form(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = app.open_run("run-done")
        assert screen is not None
        await until(
            pilot,
            lambda: (
                app.screen is screen
                and bool(screen.query(DagView))
                and screen.query_one(DagView).size.width > 0
            ),
        )
        dag = screen.query_one(DagView)
        dag.focus()
        dag.selected = "source_policy"
        await press(pilot, "t", lambda: isinstance(app.screen, ForkScreen))
        form = app.screen
        edits = form.query_one("#fork-edits", TextArea)
        edits.text = "{not json"
        await press(
            pilot, "ctrl+s", lambda: "fix the JSON" in str(form.query_one("#fork-error").render())
        )
        assert app.screen is form
