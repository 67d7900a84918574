"""The ADR-007 classification matrix: rounds R1–R4 × five dimensions.

Each cell shows a dimension's tier and score; below them the CI, the recent
sources against their floor, critical contradictions, the gate result and the
supervisor's decision. The round coalesce selected is starred.

When the full matrix is wider than the panel (four rounds beside a graph on a
180-column screen, or more rounds than four), it switches to a compact form:
tier initials, scores without the leading zero, short row titles and a legend —
every round's column stays on screen.
"""

from __future__ import annotations

from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual import events
from textual.widgets import Static

from tui.app.run_state import DIMENSIONS, RoundView, RunView

ROUND_COLUMNS = 4
TIER_STYLE = {"elite": "bold cyan", "high": "green", "medium": "yellow", "low": "red"}
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


def _cell(round_view: RoundView | None, dimension: str, compact: bool) -> Text:
    if round_view is None:
        return Text("·", style="dim")
    cell = round_view.dimensions.get(dimension)
    if cell is None:
        return Text("–", style="dim")
    score = f" {_score(cell.score, compact)}" if cell.score is not None else ""
    tier = (cell.tier or "?")[:1] if compact else cell.tier or "?"
    return Text(f"{tier}{score}", style=TIER_STYLE.get(cell.tier.lower(), ""))


def _number(value: float | None, compact: bool) -> str:
    return _score(value, compact) if value is not None else "–"


def _decision(text: str, compact: bool) -> str:
    if not text:
        return "–"
    if compact and len(text) > DECISION_WIDTH:
        return text[: DECISION_WIDTH - 1] + "…"
    return text


def _recent(round_view: RoundView) -> Text:
    """Recent sources against the floor (``12/10``), red when the floor is not met."""
    count = round_view.recent_sources
    if count is None:
        return Text("–")
    if round_view.recent_floor is None:
        return Text(f"{count:g}")
    below = count < round_view.recent_floor
    return Text(f"{count:g}/{round_view.recent_floor:g}", style="red" if below else "")


def matrix_table(view: RunView, compact: bool = False) -> Table:
    """The matrix; ``compact`` trades words for width (see the module's docstring)."""
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
        table.add_column(title, no_wrap=True, style="on grey15" if number == selected else "")
    rounds = [view.rounds.get(n) for n in range(1, count + 1)]
    titles = SHORT_TITLES if compact else DIMENSION_TITLES
    for dimension in DIMENSIONS:
        table.add_row(titles[dimension], *[_cell(r, dimension, compact) for r in rounds])
    table.add_row("CI", *[_number(r.ci, compact) if r else "·" for r in rounds])
    table.add_row("recent", *[_recent(r) if r else "·" for r in rounds])
    table.add_row(
        SHORT_TITLES["contradictions"] if compact else "contradictions",
        *[
            Text(
                str(r.critical_contradictions),
                style="bold red" if r.critical_contradictions else "",
            )
            if r
            else "·"
            for r in rounds
        ],
    )
    table.add_row(
        "gate",
        *[
            (
                Text("pass", style="green")
                if r.gate_passed
                else Text("fail", style="red")
                if r.gate_passed is not None
                else "–"
            )
            if r
            else "·"
            for r in rounds
        ],
    )
    table.add_row(
        "decide" if compact else "decision",
        *[_decision(r.decision, compact) if r else "·" for r in rounds],
    )
    return table


def coalesce_line(view: RunView) -> str:
    if not view.coalesced:
        return ""
    c = view.coalesced
    best = c.get("best_ci")
    best_text = f"{best:.2f}" if isinstance(best, (int, float)) else "–"
    return (
        f"coalesce: R{c.get('selected_round', '?')} · confidence {c.get('confidence_level', '?')}"
        f" · best CI {best_text} · stop: {c.get('stop_reason', '–')}"
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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()

    def show(self, view: RunView) -> None:
        self._view = view
        self._draw()

    def _draw(self) -> None:
        table = matrix_table(self._view)
        room = self.content_size.width
        if room and self._width_of(table) > room:
            table = matrix_table(self._view, compact=True)
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
