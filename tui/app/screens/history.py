"""Run history: every stored run, searched and filtered; Enter opens one for replay (and resume).

The search box takes the event log's query style: ``workflow:NAME`` and
``status:NAME`` keep the runs whose workflow or status starts with NAME, and
every other word must appear in the run's question, run id or reason. All
terms must match; case does not matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from engine.store import RunSummary
from tui.app.live_runs import LiveRuns
from tui.app.messages import OpenRun
from tui.app.screens.home import (
    QUESTION_WIDTH,
    RUN_COLUMNS,
    full_question,
    run_cells,
    status_text,
)
from tui.app.status_style import STATUS_CLASSES, on_theme_change, status_style
from tui.app.widgets.key_footer import KeyFooter
from tui.present.untrusted import for_display

if TYPE_CHECKING:
    from tui.launch.workbench import Workbench

HISTORY_LIMIT = 500


@dataclass(frozen=True)
class HistoryRow:
    """One stored run as the history searches it."""

    summary: RunSummary
    question: str

    @property
    def haystack(self) -> str:
        run = self.summary
        return f"{self.question} {run.run_id} {run.reason}".lower()


def row_matches(row: HistoryRow, query: str) -> bool:
    """Every whitespace-separated term matches: ``workflow:x``, ``status:x`` or a word of the text."""
    run = row.summary
    for term in query.lower().split():
        key, sep, value = term.partition(":")
        if sep and key == "workflow":
            ok = run.workflow.lower().startswith(value)
        elif sep and key == "status":
            ok = run.status.value.lower().startswith(value)
        else:
            ok = term in row.haystack
        if not ok:
            return False
    return True


class HistoryScreen(Screen[None]):
    CSS_PATH = "history.tcss"
    HELP = """
## Run history

Every run in the workspace, newest first. **/** jumps to the search box:
`workflow:deep` and `status:failed` keep the runs whose workflow or status
starts with that; other words must appear in the question, run id or reason.
**Enter** in the box (or **Down**) goes back to the table; **Enter** there
opens the run: its timeline replays it event by event, and a paused run can
be resumed there.
"""
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="history.back"),
        Binding("slash", "search", "Search", id="history.search"),
        Binding("down", "to_table", "To the list", show=False, id="history.to_table"),
    ]
    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, workbench: Workbench, live_runs: LiveRuns) -> None:
        super().__init__()
        self.workbench = workbench
        self.live_runs = live_runs
        self.rows: list[HistoryRow] = []

    def compose(self) -> ComposeResult:
        yield Static(" run history", id="history-title")
        yield Input(
            placeholder="search: words of the question, workflow:NAME, status:NAME",
            id="history-search",
        )
        yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.rows = self._load()
        table = self.query_one(DataTable)
        table.add_columns(*RUN_COLUMNS)
        self._fill("")
        table.focus()
        on_theme_change(self, self.refill)
        self.live_runs.changed.subscribe(self, lambda _run_id: self.refill())

    def _load(self) -> list[HistoryRow]:
        runs = for_display(self.workbench.store().list_runs_with_inputs(HISTORY_LIMIT))
        return [HistoryRow(run, full_question(run)) for run in runs]

    def refill(self) -> None:
        """Redraw the rows the search shows (after a theme switch), the cursor where it was."""
        table = self.query_one(DataTable)
        cursor = table.cursor_coordinate
        self._fill(self.query_one("#history-search", Input).value)
        table.cursor_coordinate = cursor

    def _fill(self, query: str) -> None:
        table = self.query_one(DataTable)
        table.clear()
        now = self.workbench.clock()
        store = self.workbench.store()
        shown = [row for row in self.rows if row_matches(row, query)]
        for row in shown:
            run = row.summary
            question = row.question
            if len(question) > QUESTION_WIDTH:
                question = question[: QUESTION_WIDTH - 1] + "…"
            status = status_text(
                run, partial(status_style, self), self.live_runs.shown_status(run, store)
            )
            table.add_row(*run_cells(run, status, question, now), key=run.run_id)
        title = f" run history · {len(shown)} of {len(self.rows)} runs"
        if query.strip():
            title += f" matching {query.strip()!r}"
        self.query_one("#history-title", Static).update(title)

    def action_search(self) -> None:
        self.query_one("#history-search", Input).focus()

    @on(Input.Changed, "#history-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(Input.Submitted, "#history-search")
    def _search_done(self) -> None:
        self.action_to_table()

    def action_to_table(self) -> None:
        self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(OpenRun(event.row_key.value))
