"""A prompt is never lost: a run left while it waits shows WAITING everywhere at once, and
reopening it — from Home, the run history or the palette — shows its prompt, and the answer
reaches the waiting step (issue 25, item 1). On both engines, the real app through Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore
from tests.tui.pilot_wait import press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import RUN_COLUMNS, HomeScreen
from tui.app.widgets.prompts import ApprovalPrompt
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench

SIZE = (120, 40)
ENGINES = ["kahn", "langgraph"]


def status_cell(table: DataTable, run_id: str) -> str:
    """The status a runs table shows for ``run_id``."""
    row = table.get_row(run_id)
    return str(row[RUN_COLUMNS.index("status")])


def first_command(commands: CommandList) -> str:
    """The palette's highlighted command, as text ('' while it has none)."""
    if commands.highlighted is None:
        return ""
    return str(commands.get_option_at_index(commands.highlighted).prompt)


async def open_from_table(pilot, table: DataTable, run_id: str) -> None:
    table.focus()
    await until(pilot, lambda: pilot.app.focused is table)
    table.move_cursor(row=table.get_row_index(run_id))
    await pilot.press("enter")


@pytest.mark.parametrize("via", ["home", "history", "palette"])
@pytest.mark.parametrize("engine", ENGINES)
async def test_open_leave_reopen_answer(tmp_path: Path, engine: str, via: str) -> None:
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        job = app.workbench.new_run_job(SHIPPED_WORKFLOWS / "approval.yaml", {}, engine=engine)
        screen = app.start_job(job)
        run_id = job.run_id
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        assert "WAITING" in str(screen.query_one("#run-status").render())
        await press(pilot, "escape", lambda: app.screen is screen)
        await press(pilot, "escape", lambda: isinstance(app.screen, HomeScreen))
        home = app.screen
        table = home.query_one("#runs", DataTable)
        await until(pilot, lambda: run_id in table.rows and status_cell(table, run_id) == "WAITING")
        if via == "home":
            await open_from_table(pilot, table, run_id)
        elif via == "history":
            await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))
            history = app.screen.query_one("#history", DataTable)
            assert status_cell(history, run_id) == "WAITING"
            await open_from_table(pilot, history, run_id)
        else:
            await press(pilot, "ctrl+p", lambda: isinstance(app.screen, CommandPalette))
            await pilot.press(*f"resume run {run_id}")
            commands = app.screen.query_one(CommandList)
            await until(pilot, lambda: first_command(commands).startswith(f"Resume run: {run_id}"))
            await pilot.press("enter")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        assert app.screen_stack[-2] is screen, "the run's own screen, following it live"
        await press(pilot, "ctrl+a", lambda: screen.view.status == "COMPLETED")
        assert "COMPLETED" in str(screen.query_one("#run-status").render())
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    resolved = [e for e in store.events(run_id) if isinstance(e, InterruptResolved)]
    assert [(e.step_id, e.answer["action"]) for e in resolved] == [("plan", "approve")]
    store.close()
