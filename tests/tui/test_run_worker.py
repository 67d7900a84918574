"""The app's thread workers: the engine loop of a live run is hosted by a worker of its run
screen — a run whose job raises ends that worker in the ERROR state, and the screen learns it from
``Worker.StateChanged``, no field polled; Home's workflow list is loaded by a worker after the
first frame."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label, OptionList, Static
from textual.worker import WorkerState

from engine.errors import WorkflowLoadError
from engine.store import RunStore
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RUN_WORKERS
from tui.launch.workbench import Workbench

SIZE = (120, 40)
ECHO = "name: echo_once\nsteps:\n  - id: say\n    uses: demo.echo\n    config: {set: {said: 1}}\n"


async def test_a_run_whose_job_fails_is_reported_through_its_workers_state(
    tmp_path: Path,
) -> None:
    workflow = tmp_path / "echo_once.yaml"
    workflow.write_text(ECHO, encoding="utf-8")
    workbench = Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none")
    job = workbench.new_run_job(workflow, {})
    workflow.write_text("name: echo_once\nsteps: [\n", encoding="utf-8")  # broken before it runs
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.start_job(job)
        await until(pilot, lambda: screen.failure is not None and not screen.live)
        worker = screen.worker

        assert worker is not None and worker.group == RUN_WORKERS
        assert worker.state is WorkerState.ERROR
        assert isinstance(screen.failure, WorkflowLoadError)
        assert screen.failure is worker.error
        assert "echo_once.yaml" in str(screen.failure)
        toasts = [n.message for n in app._notifications]
        assert any(m.startswith("the run stopped: ") and "echo_once.yaml" in m for m in toasts)
        status = str(screen.query_one("#run-status", Static).render())
        assert " · stopped: " in status
        assert app.screen is screen  # the app keeps running; the person can go back
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.list_runs(10) == []


async def test_a_run_that_succeeds_ends_its_worker_without_a_failure(tmp_path: Path) -> None:
    workflow = tmp_path / "echo_once.yaml"
    workflow.write_text(ECHO, encoding="utf-8")
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.start_run(workflow, {})
        await until(pilot, lambda: not screen.live)
        worker = screen.worker
        assert worker is not None and worker.state is WorkerState.SUCCESS
        assert screen.failure is None
        assert screen.view.status == "COMPLETED"
        assert not [n for n in app._notifications if n.message.startswith("the run stopped")]


async def test_home_lists_the_workflows_from_its_worker_and_f5_reloads_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "echo_once.yaml").write_text(ECHO, encoding="utf-8")
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        home = app.screen
        assert isinstance(home, HomeScreen)
        assert [entry.name for entry in home.entries] == ["echo_once"]
        assert home.query_one("#form-title", Label).render().plain == "New run · echo_once"

        (tmp_path / "workflows" / "later.yaml").write_text(
            ECHO.replace("echo_once", "later"), encoding="utf-8"
        )
        await pilot.press("f5")
        await until(pilot, lambda: len(home.entries) == 2)
        assert [entry.name for entry in home.entries] == ["echo_once", "later"]
        options = home.query_one("#workflows", OptionList)
        assert options.option_count == 2
