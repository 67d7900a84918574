"""The headless printer: a run's events as live lines on a rich console.

It reads nothing but run events (DESIGN §6), so it prints a live run, a resumed
one, or a stored one replayed from the store, the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from engine.event_lines import DomainDescriber, EventLine, summarize
from engine.events import Domain, RunEvent
from engine.store import StepResult
from tui.present.console import SafeConsole
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
        for event in events:
            line = self.line(event)
            if line:
                self.console.print(line, highlight=False)

    def line(self, event: RunEvent) -> str | None:
        """The console line for ``event``, or None for events the console does not show."""
        if event.kind in QUIET_EVENTS or (isinstance(event, Domain) and not self.show_domain):
            return None
        return f"[dim]{event.mono:7.2f}s[/] " + console_markup(describe(event, self.domain), event)


def console_markup(line: EventLine, event: RunEvent) -> str:
    """An event line in rich markup: a glyph for its kind, coloured by its level when that
    is not plain info, else by its status's tone; run lines bold and flush left."""
    text = f"{GLYPHS.get(event.kind, '·')} {escape(line.text)}"
    style = _style(line)
    if event.kind in RUN_EVENTS:
        return f"[bold {style}]{text}[/]"
    outputs = f" [dim]{escape(line.outputs)}[/]" if line.outputs else ""
    return f"  [{style}]{text}[/]{outputs}"


def _style(line: EventLine) -> str:
    if line.level != "info" or line.status is None:
        return LEVEL_STYLES.get(line.level, "default")
    return console_style(line.status)


def step_table(results: dict[str, StepResult], order: list[str]) -> Table:
    """The final table: one row per step with its state and what it produced or why not."""
    table = Table(title="steps", show_lines=False)
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
