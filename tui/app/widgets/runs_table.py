"""A table of runs in which one click selects a row and Enter (or a double click) opens it.

Textual's DataTable opens the row under a click when that row is the highlighted one, and its
first row is highlighted before anyone chose it, so one click on a fresh table opened a run."""

from __future__ import annotations

from textual import events
from textual.widgets import DataTable


class RunsTable(DataTable[object]):
    """Rows keyed by run id, the cursor a whole row."""

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    async def _on_click(self, event: events.Click) -> None:
        row = event.style.meta.get("row")
        if event.chain > 1 or not isinstance(row, int) or row < 0:
            return  # a double click or the header: the table's own handling
        event.prevent_default()
        event.stop()
        self.move_cursor(row=row)
