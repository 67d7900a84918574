"""The app attached to a real `workbench server` process (``workbench --server URL``), through
Pilot: a run started through the API and driven by a real worker is shown live, its prompt
answered in the app; the server is restarted while the app follows the run, and the app
resumes the stream from its last event — every event shown once, in order."""

from __future__ import annotations

from pathlib import Path

import httpx

from engine.events import RunFinished
from engine.store.postgres import PostgresRunStore
from tests.server.serving import ServerProcess
from tests.tui.pilot_wait import prompt_ready, until
from tests.worker.workers import PATIENT, workers
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.app.widgets.prompts import ApprovalPrompt
from tui.client.http import ServerClient
from tui.launch.workbench import Workbench
from workflows import WORKFLOWS_DIR

SIZE = (150, 46)
ROUNDS = 30_000
"""Rounds of the app's loop a step may take (a worker process and a server restart share two
busy cores): a bound, never a timed assertion."""


async def test_the_app_follows_a_server_run_across_a_restart_and_answers_its_prompt(
    server: ServerProcess, api: httpx.Client, pg_database: str, tmp_path: Path
) -> None:
    workbench = Workbench(
        workspace=tmp_path / "app-home",
        server=ServerClient(server.url, environ={"WORKBENCH_TOKEN": server.token}),
        shipped_dir=tmp_path / "no-shipped",
    )
    assert workbench.runs_location == f"the server at {server.url}"
    with workers(pg_database, tmp_path, 1, *PATIENT):
        run_id = api.post("/v1/runs", json={"workflow": "approval"}).json()["run_id"]
        app = WorkbenchApp(workbench)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.open_run(run_id)
            assert isinstance(screen, RunScreen)
            await until(pilot, lambda: prompt_ready(app, ApprovalPrompt), rounds=ROUNDS)

            server.restart()  # the app's stream drops; it reconnects from its last event
            await pilot.press("f2")
            await until(pilot, lambda: screen.view.status == "COMPLETED", rounds=ROUNDS)
            shown = [event.seq for event in screen.events]
        workbench.close()
    with PostgresRunStore(pg_database) as store:
        stored = store.events(run_id)
        [asked] = store.interrupts(run_id)
    assert shown == [event.seq for event in stored]
    assert [e.status.value for e in stored if isinstance(e, RunFinished)] == [
        "WAITING",
        "COMPLETED",
    ]
    assert asked.answer is not None and asked.answer.action == "approve"


async def test_a_run_started_in_the_app_attached_to_a_server_runs_on_its_worker(
    server: ServerProcess, pg_database: str, tmp_path: Path
) -> None:
    workbench = Workbench(
        workspace=tmp_path / "app-home",
        server=ServerClient(server.url, environ={"WORKBENCH_TOKEN": server.token}),
    )
    job = workbench.new_run_job(WORKFLOWS_DIR / "fan_out.yaml", {}, run_id="from-the-app")
    with workers(pg_database, tmp_path, 1, *PATIENT):
        app = WorkbenchApp(workbench, run_job=job)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunScreen), rounds=ROUNDS)
            screen = app.screen
            assert isinstance(screen, RunScreen)
            await until(pilot, lambda: screen.view.status == "COMPLETED", rounds=ROUNDS)
            shown = [event.seq for event in screen.events]
        workbench.close()
    with PostgresRunStore(pg_database) as store:
        record = store.get_run("from-the-app")
        stored = [event.seq for event in store.events("from-the-app")]
    assert (record.workflow, record.status.value) == ("fan_out", "COMPLETED")
    assert shown == stored
