"""The run's event log with wall-clock times, filtered by event kind, level, step or whole words."""

from __future__ import annotations

import re
import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from tui.app.run_state import LogLine, RunView

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "debug": "dim", "info": ""}
PREFIX_CELLS = 8 + 1 + 5 + 1 + 18 + 1
"""The cells before an event's text: its time, seq and kind (see :func:`format_line`)."""


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


class LogLines(ScrollView, can_focus=True):
    """The log's lines, newest at the bottom, each formatted only when it is drawn.

    Textual's RichLog renders every line it is given up front; a stored run's replay step
    or a filter change replaces the whole log, and rendering thousands of lines then took
    seconds. Here a replacement is a list assignment; a frame formats the rows on screen.
    """

    DEFAULT_CSS = """
    LogLines {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        overflow-x: auto;
        &:focus { background-tint: $foreground 5%; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[LogLine] = []
        self._widest = 0
        self._strips: dict[int, Strip] = {}

    def replace(self, lines: list[LogLine]) -> None:
        """Show ``lines`` instead of what is shown, scrolled to the newest."""
        self.lines = list(lines)
        self._strips.clear()
        self._widest = 0
        self._grew(self.lines)
        self.refresh()

    def extend(self, lines: list[LogLine]) -> None:
        """Add ``lines`` at the bottom; the view follows the newest line."""
        self.lines.extend(lines)
        self._grew(lines)

    def _grew(self, added: list[LogLine]) -> None:
        if added:
            self._widest = max(self._widest, PREFIX_CELLS + max(len(line.text) for line in added))
        self.virtual_size = Size(self._widest, len(self.lines))
        self.scroll_end(animate=False, immediate=False, x_axis=False)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        index = scroll_y + y
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        strip = self._strips.get(index)
        if strip is None:
            strip = Strip(format_line(self.lines[index]).render(self.app.console))
            self._strips[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_style(
            self.rich_style
        )


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
    EventLog > LogLines { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()
        self._written = 0
        self._query = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: words, kind:…, level:…, step:…", id="log-filter")
        yield LogLines(id="log-lines")

    def show(self, view: RunView) -> None:
        lines = view.log
        if view is not self._view or len(lines) < self._written:
            self._view = view
            self._rewrite()
            return
        self.query_one(LogLines).extend(self._matching(lines[self._written :]))
        self._written = len(lines)

    def _matching(self, lines: list[LogLine]) -> list[LogLine]:
        return [line for line in lines if matches(line, self._query)] if self._query else lines

    def _rewrite(self) -> None:
        self.query_one(LogLines).replace(self._matching(self._view.log))
        self._written = len(self._view.log)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._query = event.value
        self._rewrite()
