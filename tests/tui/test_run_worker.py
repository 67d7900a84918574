"""The engine loop of a live run is hosted by a Textual thread worker of its run screen: a run
whose job raises ends that worker in the ERROR state, and the screen learns it from
``Worker.StateChanged`` — no field polled."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from textual.worker import WorkerState

from engine.errors import WorkflowLoadError
from engine.store import RunStore
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
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
