"""The ADR-007 classification matrix: rounds R1–R4 × five dimensions.

Each cell shows a dimension's tier and score; below them the CI, the recent
sources against their floor, critical contradictions, the gate result and the
supervisor's decision. The round coalesce selected is starred.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
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


def _cell(round_view: RoundView | None, dimension: str) -> Text:
    if round_view is None:
        return Text("·", style="dim")
    cell = round_view.dimensions.get(dimension)
    if cell is None:
        return Text("–", style="dim")
    score = f" {cell.score:.2f}" if cell.score is not None else ""
    return Text(f"{cell.tier or '?'}{score}", style=TIER_STYLE.get(cell.tier.lower(), ""))


def _number(value: float | None, fmt: str = "{:.2f}") -> str:
    return fmt.format(value) if value is not None else "–"


def _recent(round_view: RoundView) -> Text:
    """Recent sources against the floor (``12/10``), red when the floor is not met."""
    count = round_view.recent_sources
    if count is None:
        return Text("–")
    if round_view.recent_floor is None:
        return Text(f"{count:g}")
    below = count < round_view.recent_floor
    return Text(f"{count:g}/{round_view.recent_floor:g}", style="red" if below else "")


def matrix_table(view: RunView) -> Table:
    selected = view.selected_round
    count = max([ROUND_COLUMNS, *view.rounds]) if view.rounds else ROUND_COLUMNS
    table = Table(expand=True, box=None, pad_edge=False, header_style="bold")
    table.add_column("dimension", no_wrap=True)
    for number in range(1, count + 1):
        title = f"R{number}" + (" ★" if number == selected else "")
        table.add_column(title, no_wrap=True, style="on grey15" if number == selected else "")
    rounds = [view.rounds.get(n) for n in range(1, count + 1)]
    for dimension in DIMENSIONS:
        table.add_row(DIMENSION_TITLES[dimension], *[_cell(r, dimension) for r in rounds])
    table.add_row("CI", *[_number(r.ci) if r else "·" for r in rounds])
    table.add_row("recent", *[_recent(r) if r else "·" for r in rounds])
    table.add_row(
        "contradictions",
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
    table.add_row("decision", *[(r.decision or "–") if r else "·" for r in rounds])
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

    def show(self, view: RunView) -> None:
        table = matrix_table(view)
        line = coalesce_line(view)
        if line:
            table.caption = line
        self.update(table)
