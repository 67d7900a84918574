"""The ADR-007 classification matrix: rounds R1–R4 × five dimensions.

Each cell shows a dimension's tier and score; below them the CI, the recent
sources against their floor, critical contradictions, the gate result and the
supervisor's decision. The round coalesce selected is starred.
"""

from __future__ import annotations

from functools import partial

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from engine.headless import console_style
from research.events import RoundScoredPayload
from research.matrix import DIMENSIONS, Dimension
from tui.app.run_state import RunView
from tui.app.status_style import STATUS_CLASSES, StatusStyler, on_theme_change, status_style

ROUND_COLUMNS = 4
DIMENSION_TITLES = {
    "coverage": "coverage",
    "source_quality": "source quality",
    "agreement": "agreement",
    "verification": "verification",
    "recency": "recency",
}


def _cell(round_view: RoundScoredPayload | None, dimension: Dimension, style: StatusStyler) -> Text:
    if round_view is None:
        return Text("·", style="dim")
    cell = round_view.dimensions.get(dimension)
    if cell is None:
        return Text("–", style="dim")
    return Text(f"{cell.tier} {cell.score:.2f}", style=style(cell.tier))


def _number(value: float | None, fmt: str = "{:.2f}") -> str:
    return fmt.format(value) if value is not None else "–"


def _recent(round_view: RoundScoredPayload, style: StatusStyler) -> Text:
    """Recent sources against the floor (``12/10``), styled as below the floor when it is."""
    count, floor = round_view.recent_sources, round_view.recent_floor
    return Text(f"{count}/{floor}", style=style("BELOW_FLOOR") if count < floor else "")


def _gate(round_view: RoundScoredPayload, style: StatusStyler) -> Text:
    result = "PASS" if round_view.gate_passed else "FAIL"
    return Text(result.lower(), style=style(result))


def matrix_table(view: RunView, style: StatusStyler = console_style) -> Table:
    """The matrix, statuses styled by ``style`` (the widget's theme in the app)."""
    selected = view.selected_round
    count = max([ROUND_COLUMNS, *view.rounds]) if view.rounds else ROUND_COLUMNS
    table = Table(expand=True, box=None, pad_edge=False, header_style="bold")
    table.add_column("dimension", no_wrap=True)
    for number in range(1, count + 1):
        title = f"R{number}" + (" ★" if number == selected else "")
        table.add_column(title, no_wrap=True, style="on grey15" if number == selected else "")
    rounds = [view.rounds.get(n) for n in range(1, count + 1)]
    for dimension in DIMENSIONS:
        table.add_row(DIMENSION_TITLES[dimension], *[_cell(r, dimension, style) for r in rounds])
    table.add_row("CI", *[_number(r.ci) if r else "·" for r in rounds])
    table.add_row("recent", *[_recent(r, style) if r else "·" for r in rounds])
    table.add_row(
        "contradictions",
        *[
            Text(
                str(r.critical_contradictions),
                style=style("VETO") if r.critical_contradictions else "",
            )
            if r
            else "·"
            for r in rounds
        ],
    )
    table.add_row("gate", *[_gate(r, style) if r else "·" for r in rounds])
    table.add_row("decision", *[r.decision if r else "·" for r in rounds])
    return table


def coalesce_line(view: RunView) -> str:
    c = view.coalesced
    if c is None:
        return ""
    return (
        f"coalesce: R{c.selected_round} · confidence {c.confidence_level}"
        f" · best CI {c.best_ci:.2f} · stop: {c.stop_reason or '–'}"
    )


class RoundsMatrix(Static, can_focus=True):
    """Quality of each research round, dimension by dimension."""

    HELP = """
## Rounds matrix

Columns are research rounds R1–R4, rows the five ADR-007 dimensions with tier
(Elite/High/Medium/Low) and score; then the round's CI, recent sources against
the floor, critical contradictions (a veto), the stop gate and the supervisor's
decision. ★ marks the round coalesce selected for the report.
"""

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()

    def on_mount(self) -> None:
        on_theme_change(self, lambda: self.show(self._view))

    def show(self, view: RunView) -> None:
        self._view = view
        table = matrix_table(view, partial(status_style, self))
        line = coalesce_line(view)
        if line:
            table.caption = line
        self.update(table)
