"""The run's event log with wall-clock times, filtered by event kind, level, step or whole words."""

from __future__ import annotations

import re
import time

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from tui.app.run_state import LogLine, RunView

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "debug": "dim", "info": ""}


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
        overflow-x: hidden;
        &:focus { background-tint: $foreground 5%; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[LogLine] = []
        self._strips: dict[int, Strip] = {}
        """Each drawn line's row, ready for the screen at ``_drawn_for``'s width and style."""
        self._style: Style | None = None
        self._drawn_for: tuple[int, Style | None] = (0, None)

    def replace(self, lines: list[LogLine]) -> None:
        """Show ``lines`` instead of what is shown, scrolled to the newest."""
        self.lines = list(lines)
        self._strips.clear()
        self._grew()
        self.refresh()

    def extend(self, lines: list[LogLine]) -> None:
        """Add ``lines`` at the bottom; the view follows the newest line."""
        self.lines.extend(lines)
        self._grew()

    def cut(self, dropped: int) -> None:
        """Drop the last ``dropped`` lines (a replay stepping back)."""
        keep = len(self.lines) - dropped
        if dropped > 0:
            del self.lines[keep:]
            for index in [i for i in self._strips if i >= keep]:
                del self._strips[index]
            self._grew()

    def _grew(self) -> None:
        """Lines longer than the log is wide are cut at its edge, as a terminal log's are.

        Only the scrollable height changes, never the log's box: setting ``virtual_size`` the
        usual way would lay the whole screen out again for every batch of a live run (the cause
        of key presses waiting tens of ms at 1,000 events/s), so the scrollbar is told directly.
        """
        size = Size(0, len(self.lines))
        if size != self.virtual_size:
            self.set_reactive(LogLines.virtual_size, size)
            if self.show_vertical_scrollbar:
                self.vertical_scrollbar.window_virtual_size = size.height
            self.refresh()
        self.scroll_end(animate=False, immediate=False, x_axis=False)

    def notify_style_update(self) -> None:
        self._style = None
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        """Row ``y``, formatted, cut to the width and styled once per line (the log has no
        horizontal scroll: lines are cut at its edge)."""
        width = self.scrollable_content_region.width
        if self._style is None:
            self._style = self.rich_style  # walks the DOM: once per style change, not per row
        if (width, self._style) != self._drawn_for:
            self._drawn_for = (width, self._style)
            self._strips.clear()
        index = self.scroll_offset.y + y
        if index >= len(self.lines):
            return Strip.blank(width, self._style)
        strip = self._strips.get(index)
        if strip is None:
            strip = Strip(format_line(self.lines[index]).render(self.app.console))
            strip = strip.crop_extend(0, width, self._style).apply_style(self._style)
            self._strips[index] = strip
        return strip


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
        """Show ``view``'s log: only the lines it adds to (or drops from) what is shown when it
        is the shown view grown, or another fold of the same run's events (a replay step)."""
        kept = self._common_prefix(view)
        if kept is None:
            self._view = view
            self._rewrite()
            return
        log = self.query_one(LogLines)
        log.cut(len(self._matching(self._view.log[kept : self._written])))
        self._view = view
        log.extend(self._matching(view.log[kept:]))
        self._written = len(view.log)

    def _common_prefix(self, view: RunView) -> int | None:
        """How many of the lines shown ``view`` shares (None: it is another run's log).

        Two folds of one run's events log the same line for each event in the same place, so a
        shared last line means a shared prefix."""
        if view is self._view:
            return self._written if len(view.log) >= self._written else None
        if view.run_id != self._view.run_id:
            return None
        kept = min(self._written, len(view.log))
        if kept and view.log[kept - 1] != self._view.log[kept - 1]:
            return None
        return kept

    def _matching(self, lines: list[LogLine]) -> list[LogLine]:
        return [line for line in lines if matches(line, self._query)] if self._query else lines

    def _rewrite(self) -> None:
        self.query_one(LogLines).replace(self._matching(self._view.log))
        self._written = len(self._view.log)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._query = event.value
        self._rewrite()
