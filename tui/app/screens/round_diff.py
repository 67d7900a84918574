"""The diff between two research rounds (opened with d on the run screen)."""

from __future__ import annotations

from functools import partial

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from research.events import DimensionCell
from tui.app.plain_values import MISSING, label
from tui.app.round_diff import RoundDiff, diff_rounds, score_delta
from tui.app.run_state import RunView
from tui.app.status_style import STATUS_CLASSES, StatusStyler, status_style
from tui.app.widgets.key_footer import KeyFooter
from tui.present.headless import console_style


def _cell(cell: DimensionCell | None) -> str:
    return MISSING if cell is None else f"{cell.score:.2f} {cell.tier}"


def _delta(delta: float | None, style: StatusStyler) -> Text:
    if delta is None:
        return Text(MISSING, style="dim")
    if abs(delta) < 0.005:
        return Text("=", style="dim")
    return Text(f"{delta:+.2f}", style=style("PASS" if delta > 0 else "FAIL"))


def dimensions_table(diff: RoundDiff, style: StatusStyler = console_style) -> Table:
    """Each dimension's score in both rounds and the change, rises and falls coloured by
    ``style`` (the screen's theme in the app)."""
    table = Table(box=None, expand=True, pad_edge=False)
    table.add_column("dimension", no_wrap=True)
    table.add_column(f"round {diff.before}", no_wrap=True)
    table.add_column(f"round {diff.after}", no_wrap=True)
    table.add_column("change", no_wrap=True)
    for change in diff.dimensions:
        table.add_row(
            label(change.name),
            _cell(change.before),
            _cell(change.after),
            _delta(change.delta, style),
        )
    before, after = diff.ci
    table.add_row(
        Text("CI", style="bold"),
        MISSING if before is None else f"{before:.2f}",
        MISSING if after is None else f"{after:.2f}",
        _delta(score_delta(before, after), style),
    )
    return table


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _listing(items: list[str], mark: str, style: Style | str, empty: str) -> Text:
    if not items:
        return Text(empty, style="dim")
    return Text("\n").join(Text(f"{mark} {item}", style=style) for item in items)


class RoundDiffScreen(ModalScreen[None]):
    COMPONENT_CLASSES = set(STATUS_CLASSES)
    CSS_PATH = "round_diff.tcss"
    HELP = """
## Round diff

What one research round changed against the round before: the sources and
passages it added, the claims added and dropped, and each dimension's score.
**←/→** choose the pair of rounds, **Escape** closes.
"""
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close", id="diff.close"),
        # priority: the focused scroll area would take the arrows (and hide them from the footer)
        Binding("left", "pair(-1)", "Earlier rounds", id="diff.earlier", priority=True),
        Binding("right", "pair(1)", "Later rounds", id="diff.later", priority=True),
    ]

    def __init__(self, view: RunView) -> None:
        super().__init__()
        self.view = view
        self.numbers = sorted(view.rounds)
        self.after_index = len(self.numbers) - 1
        """The later round of the pair shown, as an index into ``numbers``."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diff-box"):
            yield Static(id="diff-title")
            yield Static("Dimensions", classes="diff-heading")
            yield Static(id="diff-dimensions")
            yield Static("New evidence", classes="diff-heading")
            yield Static(id="diff-evidence")
            yield Static("Claims added", classes="diff-heading")
            yield Static(id="diff-added")
            yield Static("Claims dropped", classes="diff-heading")
            yield Static(id="diff-dropped")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#diff-box").focus()

    @property
    def diff(self) -> RoundDiff:
        return diff_rounds(
            self.view, self.numbers[self.after_index - 1], self.numbers[self.after_index]
        )

    def show(self) -> None:
        diff = self.diff
        title = Text(f"round {diff.before} → round {diff.after}", style="bold")
        title.append(f"   ({len(self.numbers)} rounds; ←/→ for another pair)", style="dim")
        self.query_one("#diff-title", Static).update(title)
        self.query_one("#diff-dimensions", Static).update(
            dimensions_table(diff, partial(status_style, self))
        )
        if not diff.evidence_known:
            unknown = Text("the run kept no research state for one of these rounds", style="dim")
            for part in ("#diff-evidence", "#diff-added", "#diff-dropped"):
                self.query_one(part, Static).update(unknown)
            return
        evidence = Text(
            f"{_count(len(diff.new_sources), 'new source')} · "
            f"{_count(diff.new_passages, 'new passage')}\n",
            style="bold",
        )
        added, dropped = status_style(self, "PASS"), status_style(self, "FAIL")
        evidence.append_text(_listing(diff.new_sources, "+", added, "no new source"))
        self.query_one("#diff-evidence", Static).update(evidence)
        self.query_one("#diff-added", Static).update(
            _listing(diff.claims_added, "+", added, "no claim added")
        )
        self.query_one("#diff-dropped", Static).update(
            _listing(diff.claims_dropped, "−", dropped, "no claim dropped")
        )

    def action_pair(self, delta: int) -> None:
        wanted = max(1, min(len(self.numbers) - 1, self.after_index + delta))
        if wanted != self.after_index:
            self.after_index = wanted
            self.show()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
