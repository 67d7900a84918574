"""The app on the PostgreSQL store (``store:`` in its config), through Pilot: the scripted runs
copied from the SQLite workspace replay the same, and a stored prompt answered in the app is
recorded in the database."""

from __future__ import annotations

from pathlib import Path

from engine.store import RunStore
from engine.store.copy import copy_runs
from engine.store.postgres import PostgresRunStore
from tests.tui.pilot_wait import prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.app.widgets.prompts import ApprovalPrompt
from tui.config import WorkbenchConfig
from tui.launch.workbench import Workbench

SIZE = (150, 46)


async def test_the_app_replays_and_answers_runs_kept_in_postgresql(
    workspace: Path, pg_database: str
) -> None:
    with RunStore(workspace / "runs.sqlite") as local, PostgresRunStore(pg_database) as server:
        assert {c.outcome for c in copy_runs(local, server)} == {"copied"}
        stored = server.events("run-done")
    (workspace / "runs.sqlite").unlink()  # nothing left to read but the database
    workbench = Workbench(
        workspace=workspace,
        config=WorkbenchConfig(store=pg_database),
        shipped_dir=workspace / "shipped",
    )
    assert workbench.runs_location == pg_database
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        replay = app.open_run("run-done")
        await pilot.pause()
        assert isinstance(replay, RunScreen)
        assert (replay.events, replay.view.status) == (stored, "COMPLETED")
        app.pop_screen()
        app.open_run("run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        app.resume_run = lambda screen: None  # type: ignore[method-assign]
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
    workbench.close()
    assert not (workspace / "runs.sqlite").exists()
    with PostgresRunStore(pg_database) as server:
        [record] = server.interrupts("run-ask")
    assert record.answer is not None and record.answer.action == "reject"
