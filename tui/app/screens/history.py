"""Run history: every stored run; Enter opens it for replay (and resume, when paused)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from tui.app.messages import OpenRun
from tui.app.screens.home import age, status_text

if TYPE_CHECKING:
    from tui.launch.workbench import Workbench

HISTORY_LIMIT = 500


class HistoryScreen(Screen[None]):
    CSS_PATH = "history.tcss"
    HELP = """
## Run history

Every run in the workspace, newest first. **Enter** opens one: its timeline
replays it event by event, and a paused run can be resumed there.
"""
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="history.back")]

    def __init__(self, workbench: Workbench) -> None:
        super().__init__()
        self.workbench = workbench

    def compose(self) -> ComposeResult:
        yield Static(" run history", id="history-title")
        yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("run", "workflow", "status", "engine", "reason", "when")
        now = self.workbench.clock()
        for run in self.workbench.store().list_runs(HISTORY_LIMIT):
            table.add_row(
                run.run_id,
                run.workflow,
                status_text(run),
                run.engine,
                run.reason[:40],
                age(now - run.created_ts),
                key=run.run_id,
            )
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(OpenRun(event.row_key.value))
