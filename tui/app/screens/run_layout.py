"""How the run screen shares its size: beside the graph, the side panels get the columns the
graph's whole step names leave; down the screen, the graph and the side panels get the rows
they need and the event log the rest (a panel with little to show gives its rows to the log)."""

from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget

from tui.app.widgets.dag_view import DagView
from tui.app.widgets.event_log import EventLog

SIDE_MIN = 56
SIDE_MAX = 76
"""The side panels' columns beside the graph: at 120 columns the graph then shows 18 cells of a name."""
LOG_SHARE = 0.3
"""The log's share of the screen's height when the graph and the side panels cannot show whole
anyway (the graph scrolls)."""
LOG_MIN_ROWS = 8


class PanelSizes(Screen[None]):
    """The run screen's sizes of its graph, side panels and log (see the module's docstring)."""

    def _share_width(self, width: int) -> None:
        """Side by side, the graph gets the columns its whole step names need and the side
        panels the rest, between SIDE_MIN and SIDE_MAX columns (the rounds matrix turns compact
        in a narrow side)."""
        side = self.query_one("#side")
        if self.has_class("-narrow"):
            side.styles.width = None
            return
        wanted = self.query_one(DagView).cols_needed() + 2
        side.styles.width = max(SIDE_MIN, min(SIDE_MAX, width - wanted))

    def _share_height(self, height: int) -> None:
        """The rows the graph spread out and the side panels need when the log keeps its
        share, the rest to the log, which then takes what they leave unused; else the log gets
        its share unless some of those rows (down to LOG_MIN_ROWS) let the graph show whole
        packed; a graph too tall to fit anyway scrolls. A small terminal shows one panel at a
        time instead."""
        log = self.query_one(EventLog)
        if self.has_class("-compact"):
            log.styles.height = None
            return
        chrome = sum(
            w.outer_size.height or 1
            for w in self.query("#run-status, #prompt-queue, #timeline, Footer")
            if w.display
        )
        free = height - chrome
        dag, side = self.query_one(DagView), self._side_rows()
        share = max(LOG_MIN_ROWS, int(free * LOG_SHARE))
        spread = max(dag.rows_needed(packed=False) + 2, side)
        if free - spread >= share:  # the whole graph spread out: the log takes the rest
            log.styles.height = free - spread
            return
        packed = max(dag.rows_needed() + 2, side)
        fits = free - packed >= LOG_MIN_ROWS
        log.styles.height = min(share, free - packed) if fits else share

    def _side_rows(self) -> int:
        """The rows the side panels shown beside the graph take at their width (up to their
        max-height)."""
        side = self.query_one("#side")
        if not side.display or side.styles.width is None:
            return 0
        rows = 0
        for panel in side.query("#providers, #rounds").results(Widget):
            if panel.display:
                gutter = panel.styles.gutter
                content = int(side.styles.width.value) - gutter.width
                most = panel.styles.max_height
                needed = panel.get_content_height(self.size, self.size, content) + gutter.height
                rows += min(needed, int(most.value)) if most and most.is_cells else needed
        return rows
