"""The research rounds' quality matrix: rounds R1–R4 × five dimensions.

Each cell shows a dimension's tier and score; below them the CI, the recent
sources against their floor, critical contradictions, the gate result and the
supervisor's decision. The round coalesce selected is starred.

When the full matrix is wider than the panel (four rounds beside a graph on a
180-column screen, or more rounds than four), it switches to a compact form:
tier initials, scores without the leading zero, short row titles and a legend —
every round's column stays on screen.
"""

from __future__ import annotations

from functools import partial

from rich.measure import Measurement
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events
from textual.widgets import Static

from research.events import RoundScoredPayload
from research.matrix import DIMENSIONS, Dimension
from tui.app.run_state import RunView
from tui.app.status_style import STATUS_CLASSES, StatusStyler, on_theme_change, status_style
from tui.present.headless import console_style

ROUND_COLUMNS = 4
DIMENSION_TITLES = {
    "coverage": "coverage",
    "source_quality": "source quality",
    "agreement": "agreement",
    "verification": "verification",
    "recency": "recency",
}
SHORT_TITLES = {
    "coverage": "cover",
    "source_quality": "source",
    "agreement": "agree",
    "verification": "verify",
    "recency": "recency",
    "contradictions": "contra",
}
COMPACT_LEGEND = "E elite · H high · M medium · L low"
DECISION_WIDTH = 6
"""Characters of a decision the compact form keeps."""


def _score(value: float, compact: bool) -> str:
    text = f"{value:.2f}"
    return text[1:] if compact and text.startswith("0.") else text


def _cell(
    round_view: RoundScoredPayload | None, dimension: Dimension, style: StatusStyler, compact: bool
) -> Text:
    if round_view is None:
        return Text("·", style="dim")
    cell = round_view.dimensions.get(dimension)
    if cell is None:
        return Text("–", style="dim")
    tier = cell.tier[:1].upper() if compact else cell.tier
    return Text(f"{tier} {_score(cell.score, compact)}", style=style(cell.tier))


def _number(value: float | None, compact: bool) -> str:
    return _score(value, compact) if value is not None else "–"


def _decision(text: str, compact: bool) -> str:
    if not text:
        return "–"
    if compact and len(text) > DECISION_WIDTH:
        return text[: DECISION_WIDTH - 1] + "…"
    return text


def _recent(round_view: RoundScoredPayload, style: StatusStyler) -> Text:
    """Recent sources against the floor (``12/10``), styled as below the floor when it is;
    a dash when recency is not asked for (no floor)."""
    count, floor = round_view.recent_sources, round_view.recent_floor
    if not floor:
        return Text(f"{count}" if count else "–", style="dim")
    return Text(f"{count}/{floor}", style=style("BELOW_FLOOR") if count < floor else "")


def _gate(round_view: RoundScoredPayload, style: StatusStyler) -> Text:
    result = "PASS" if round_view.gate_passed else "FAIL"
    return Text(result.lower(), style=style(result))


def matrix_table(
    view: RunView,
    style: StatusStyler = console_style,
    compact: bool = False,
    selected_style: Style | str = "reverse",
) -> Table:
    """The matrix, statuses styled by ``style`` (the widget's theme in the app), the selected
    round's column by ``selected_style``; ``compact`` trades words for width (see the module's
    docstring)."""
    selected = view.selected_round
    count = max([ROUND_COLUMNS, *view.rounds]) if view.rounds else ROUND_COLUMNS
    table = Table(
        expand=True,
        box=None,
        pad_edge=False,
        header_style="bold",
        collapse_padding=compact,
    )
    table.add_column("dim" if compact else "dimension", no_wrap=True)
    for number in range(1, count + 1):
        title = f"R{number}" + (("★" if compact else " ★") if number == selected else "")
        table.add_column(title, no_wrap=True, style=selected_style if number == selected else "")
    rounds = [view.rounds.get(n) for n in range(1, count + 1)]
    titles = SHORT_TITLES if compact else DIMENSION_TITLES
    for dimension in DIMENSIONS:
        table.add_row(titles[dimension], *[_cell(r, dimension, style, compact) for r in rounds])
    table.add_row("CI", *[_number(r.ci, compact) if r else "·" for r in rounds])
    table.add_row(
        "recent" if compact else "recent sources",
        *[_recent(r, style) if r else "·" for r in rounds],
    )
    table.add_row(
        SHORT_TITLES["contradictions"] if compact else "contradictions",
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
    table.add_row(
        "gate" if compact else "quality gate", *[_gate(r, style) if r else "·" for r in rounds]
    )
    table.add_row(
        "decide" if compact else "decision",
        *[_decision(r.decision, compact) if r else "·" for r in rounds],
    )
    return table


def coalesce_line(view: RunView) -> str:
    c = view.coalesced
    if c is None:
        return ""
    return (
        f"★ the report uses round R{c.selected_round} (the best round) · confidence"
        f" {c.confidence_level} · its CI {c.best_ci:.2f} · stopped: {c.stop_reason or '–'}"
    )


class RoundsMatrix(Static, can_focus=True):
    """Quality of each research round, dimension by dimension."""

    HELP = """
## Rounds matrix

How good each research round's evidence was. Columns are the rounds R1–R4;
rows the five quality dimensions (ADR-007's classification) with a tier
(Elite/High/Medium/Low) and a score; then the round's **CI** (the weighted
confidence index of the five scores), its **recent sources** against the
floor the question needs, critical **contradictions** (any one vetoes the
round), the **quality gate** (the stop gate: pass when every dimension is High
or better and the recent sources reach the floor) and the supervisor's
**decision** (continue or stop). **★** marks the **best round**: the one
coalesce picked for the report.
"""

    COMPONENT_CLASSES = {*STATUS_CLASSES, "rounds-matrix--selected"}
    DEFAULT_CSS = """
    RoundsMatrix > .rounds-matrix--selected { background: $foreground 8%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()

    def on_mount(self) -> None:
        on_theme_change(self, self._draw)

    def show(self, view: RunView) -> None:
        self._view = view
        self._draw()

    def _draw(self) -> None:
        style = partial(status_style, self)
        selected = self.get_component_rich_style("rounds-matrix--selected", partial=True)
        table = matrix_table(self._view, style, selected_style=selected)
        room = self.content_size.width
        if room and self._width_of(table) > room:
            table = matrix_table(self._view, style, compact=True, selected_style=selected)
            table.caption = COMPACT_LEGEND
        line = coalesce_line(self._view)
        if line:
            table.caption = f"{line}\n{table.caption}" if table.caption else line
        self.update(table)

    def _width_of(self, table: Table) -> int:
        console = self.app.console
        return Measurement.get(console, console.options.update_width(10_000), table).minimum

    def on_resize(self, event: events.Resize) -> None:
        self._draw()
