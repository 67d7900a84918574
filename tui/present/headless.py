"""The headless printer: a run's events as live lines on a rich console.

It reads nothing but run events (DESIGN §6), so it prints a live run, a resumed
one, or a stored one replayed from the store, the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from engine.event_lines import DomainDescriber, EventLine, summarize
from engine.events import Domain, RunEvent
from engine.states import StepStatus
from engine.store import StepResult
from tui.present.console import Piece, SafeConsole, piece_markup, print_lines
from tui.present.event_lines import describe
from tui.present.skip_words import skip_words
from tui.present.status_tone import Tone, tone

TONE_STYLES: dict[Tone, str] = {
    "muted": "dim",
    "active": "cyan",
    "attention": "bold yellow",
    "caution": "yellow",
    "good": "green",
    "excellent": "bold cyan",
    "disabled": "dim",
    "critical": "bold red",
    "bad": "red",
    "stopped": "magenta",
    "plain": "default",
}
"""How the console shows each tone of tui/present/status_tone.py."""

LEVEL_STYLES = {"debug": "dim", "warning": "yellow", "error": "red"}
RUN_EVENTS = ("run_started", "run_finished")
"""Printed flush left; a run's other events are indented under them."""
QUIET_EVENTS = ("provider_state", "budget")
"""Shown by the app's panels; on the console they would drown the run's progress."""

GLYPHS = {
    "run_started": "▶",
    "run_finished": "■",
    "step_started": "●",
    "step_finished": "✔",
    "step_skipped": "○",
    "step_failed": "✖",
    "step_retrying": "↻",
    "route_decided": "→",
    "interrupt_raised": "?",
    "interrupt_resolved": "✓",
}


def console_style(status: str) -> str:
    """How the console colours ``status``: its tone's rich style."""
    return TONE_STYLES[tone(status)]


def styled(status: str) -> str:
    """``status`` in console markup, coloured by its tone."""
    return f"[{console_style(status)}]{status}[/]"


class HeadlessPrinter:
    """Call it with batches of events (a store subscriber); each becomes one line.

    ``domain`` describes the domain events of the package that emits them (the
    application passes research's); without it they are shown as name and payload.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_domain: bool = False,
        domain: DomainDescriber | None = None,
    ) -> None:
        self.console = console or SafeConsole()
        self.show_domain = show_domain
        self.domain = domain

    def __call__(self, events: Iterable[RunEvent]) -> None:
        print_lines(self.console, (pieces for event in events if (pieces := self.pieces(event))))

    def line(self, event: RunEvent) -> str | None:
        """The console line for ``event`` in rich markup, or None for events the console does
        not show."""
        pieces = self.pieces(event)
        return piece_markup(pieces) if pieces else None

    def pieces(self, event: RunEvent) -> list[Piece]:
        """The console line for ``event`` as styled pieces; empty for events the console does
        not show."""
        if event.kind in QUIET_EVENTS or (isinstance(event, Domain) and not self.show_domain):
            return []
        return [
            (f"{event.mono:7.2f}s", "dim"),
            (" ", ""),
            *console_pieces(describe(event, self.domain), event),
        ]


def console_pieces(line: EventLine, event: RunEvent) -> list[Piece]:
    """An event line as styled pieces: a glyph for its kind, coloured by its level when that
    is not plain info, else by its status's tone; run lines bold and flush left."""
    text = f"{GLYPHS.get(event.kind, '·')} {line.text}"
    style = _style(line)
    if event.kind in RUN_EVENTS:
        return [(text, f"bold {style}")]
    outputs: list[Piece] = [(" ", ""), (line.outputs, "dim")] if line.outputs else []
    return [("  ", ""), (text, style), *outputs]


def _style(line: EventLine) -> str:
    if line.level != "info" or line.status is None:
        return LEVEL_STYLES.get(line.level, "default")
    return console_style(line.status)


def step_table(results: dict[str, StepResult], order: list[str], title: str = "steps") -> Table:
    """The final table: one row per step with its state and what it produced or why not."""
    table = Table(title=title, show_lines=False)
    table.add_column("step")
    table.add_column("status")
    table.add_column("iter", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("outputs / reason", overflow="fold")
    for step_id in order:
        result = results.get(step_id)
        if result is None:
            table.add_row(step_id, styled("PENDING"), "0", "0", "")
            continue
        detail = (
            summarize(result.outputs, 70)
            if result.status.value == "SUCCEEDED"
            else skip_words(result.reason)
        )
        table.add_row(
            step_id,
            styled(result.status.value),
            str(result.iteration),
            str(result.runs),
            escape(detail),
        )
    return table


FULL_TABLE_STEPS = 40
"""Up to this many steps the end of a run shows every step; above it, what fits a screen."""
ATTENTION_ROWS = 20
"""The most steps that need attention listed at the end of a run of more than FULL_TABLE_STEPS."""
ATTENTION = (
    StepStatus.FAILED,
    StepStatus.UPSTREAM_FAILED,
    StepStatus.WAITING_HUMAN,
    StepStatus.RUNNING,
    StepStatus.PENDING,
    StepStatus.SKIPPED,
)
"""The statuses that need a person's attention, the most urgent first."""


def end_of_run(
    statuses: Mapping[str, StepStatus],
    results: Callable[[], dict[str, StepResult]],
    run_id: str,
) -> list[RenderableType]:
    """What a headless run prints about its steps when it ends, from each step's status (in
    the workflow's order) and, read only for a table that shows them, the step results:
    every step while they fit a screen; above FULL_TABLE_STEPS, the count of steps in each
    status and the first ATTENTION_ROWS steps that did not succeed (most urgent first, then in
    the workflow's order), with where to read the rest — a table of thousands of rows is read
    by nobody and costs more to draw than the run itself (issue 26)."""
    order = list(statuses)
    if len(order) <= FULL_TABLE_STEPS:
        return [step_table(results(), order)]
    counts = Counter(statuses.values())
    by_status = Table(title=f"{len(order)} steps", show_lines=False)
    by_status.add_column("status")
    by_status.add_column("steps", justify="right")
    for status in StepStatus:
        if counts[status]:
            by_status.add_row(styled(status.value), str(counts[status]))
    attention = sorted(
        (step_id for step_id in order if statuses[step_id] in ATTENTION),
        key=lambda step_id: ATTENTION.index(statuses[step_id]),
    )
    shown: list[RenderableType] = [by_status]
    if attention:
        listed = attention[:ATTENTION_ROWS]
        shown.append(
            step_table(
                results(), listed, f"steps that need attention ({len(listed)} of {len(attention)})"
            )
        )
    shown.append(f"[dim]every step: workbench runs show {escape(run_id)}[/]")
    return shown
