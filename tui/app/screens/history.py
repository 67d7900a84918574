"""Run history: every stored run; Enter opens it for replay (and resume, when paused)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from tui.app.messages import OpenRun
from tui.app.screens.home import age, status_text
from tui.app.status_style import STATUS_CLASSES, on_theme_change, status_style

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
    COMPONENT_CLASSES = set(STATUS_CLASSES)

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
        self.fill()
        table.focus()
        on_theme_change(self, self.fill)

    def fill(self) -> None:
        """Every stored run, newest first (the cursor stays where it was)."""
        table = self.query_one(DataTable)
        cursor = table.cursor_coordinate
        table.clear()
        now = self.workbench.clock()
        for run in self.workbench.store().list_runs(HISTORY_LIMIT):
            table.add_row(
                run.run_id,
                run.workflow,
                status_text(run, partial(status_style, self)),
                run.engine,
                run.reason[:40],
                age(now - run.created_ts),
                key=run.run_id,
            )
        table.cursor_coordinate = cursor

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(OpenRun(event.row_key.value))
