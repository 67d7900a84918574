"""The run's event log with wall-clock times, filtered by event kind, level, step or whole words."""

from __future__ import annotations

import re
import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, RichLog

from tui.app.run_state import LogLine, RunView

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "debug": "dim", "info": ""}
MAX_LINES = 2000


KIND_PARTS = re.compile(r"[._]")


def _plain_term_matches(line: LogLine, term: str) -> bool:
    """A plain word names an event kind (or one part of it: ``breaker`` in ``breaker_state``) or
    is a whole word of the text: ``open`` finds a breaker going OPEN, never ``openai``."""
    if term == line.kind or term in KIND_PARTS.split(line.kind):
        return True
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", line.text.lower()) is not None


def matches(line: LogLine, query: str) -> bool:
    """Every whitespace-separated term must match: ``kind:x``, ``level:x``, ``step:x`` or a word."""
    for term in query.lower().split():
        key, sep, value = term.partition(":")
        if sep and key == "kind":
            ok = line.kind.startswith(value)
        elif sep and key == "level":
            ok = line.level == value
        elif sep and key == "step":
            ok = (line.step_id or "").startswith(value)
        else:
            ok = _plain_term_matches(line, term)
        if not ok:
            return False
    return True


def clock_time(ts: float) -> str:
    """An event's wall time as the person's local HH:MM:SS (blank for events stored without one)."""
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else " " * 8


def format_line(line: LogLine) -> Text:
    text = Text(f"{clock_time(line.ts)} ", style="dim")
    text.append(f"{line.seq:>5} ", style="dim")
    text.append(f"{line.kind:<18} ", style="cyan")
    text.append(line.text, style=LEVEL_STYLE.get(line.level, ""))
    return text


class EventLog(Vertical):
    """Every event of the run, newest at the bottom, with a filter box."""

    HELP = """
## Event log

Every event of the run, in order, with its local time. **/** jumps to the
filter box: a plain word matches an event kind (`step_failed`, or a part of
it such as `breaker`) or a whole word of the text (`open` finds a breaker
going OPEN, not `openai`); `kind:step_`, `level:error` or `step:review`
match those fields. All terms must match.
"""

    DEFAULT_CSS = """
    EventLog { height: 1fr; }
    EventLog > Input { height: 3; }
    EventLog > RichLog { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()
        self._written = 0
        self._query = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: words, kind:…, level:…, step:…", id="log-filter")
        yield RichLog(
            id="log-lines", wrap=False, markup=False, max_lines=MAX_LINES, auto_scroll=True
        )

    def show(self, view: RunView) -> None:
        lines = view.log
        if view is not self._view or len(lines) < self._written:
            self._view = view
            self._rewrite()
            return
        self._append(lines[self._written :])

    def _append(self, lines: list[LogLine]) -> None:
        kept = [line for line in lines if matches(line, self._query)][-MAX_LINES:]
        shown = [format_line(line) for line in kept]
        if shown:
            self.query_one("#log-lines", RichLog).write(Text("\n").join(shown))
        self._written += len(lines)

    def _rewrite(self) -> None:
        self.query_one("#log-lines", RichLog).clear()
        self._written = 0
        self._append(self._view.log[-MAX_LINES * 4 :])
        self._written = len(self._view.log)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._query = event.value
        self._rewrite()
