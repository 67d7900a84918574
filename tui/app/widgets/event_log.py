"""The run's event log with wall-clock times, filtered by event kind, level, step or whole words."""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Mapping
from dataclasses import replace

from rich.cells import cell_len, chop_cells
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from tui.app.run_state import LogLine, RunView
from tui.app.status_style import STATUS_CLASSES, tone_style
from tui.present.status_tone import Tone

LEVEL_TONES: dict[str, Tone] = {"error": "critical", "warning": "caution", "debug": "muted"}
"""How a line's level colours its text (info: the log's own colour)."""


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


LineStyles = Mapping[str, Style | str]
"""The styles of a log line's kind (``kind``) and of each level's text, from the theme."""
CONSOLE_LINE_STYLES: LineStyles = {"kind": "cyan", "error": "bold red", "warning": "yellow"}


KIND_CELLS = 14
PREFIX_CELLS = len("00:00:00 ") + len("99999 ") + KIND_CELLS + 1
"""A line's time, sequence number and kind, before its text."""
MIN_TEXT_CELLS = 24
"""A narrower log wraps a long line under its prefix, not under its text."""


def kind_label(kind: str) -> str:
    """The kind column's word: a domain event's name without its package (``stage``)."""
    return kind.rpartition(".")[2][:KIND_CELLS]


def _text_style(line: LogLine, styles: LineStyles) -> Style | str:
    return styles.get(line.level, "dim" if line.level == "debug" else "")


def format_line(line: LogLine, styles: LineStyles = CONSOLE_LINE_STYLES) -> Text:
    text = Text(f"{clock_time(line.ts)} ", style="dim")
    text.append(f"{line.seq:>5} ", style="dim")
    text.append(f"{kind_label(line.kind):<{KIND_CELLS}} ", style=styles.get("kind", ""))
    text.append(" ".join(line.text.split()), style=_text_style(line, styles))
    return text


def _indent(width: int) -> int:
    """Where a wrapped line's next rows start: under its text, unless that leaves too little."""
    return PREFIX_CELLS if width - PREFIX_CELLS >= MIN_TEXT_CELLS else min(4, width // 4)


def wrap_words(text: str, first: int, rest: int) -> list[str]:
    """``text`` in rows of ``first`` then ``rest`` cells, broken between words (a word longer
    than a row is cut). Hand-written rather than rich's wrapping, which renders the text: the
    log counts every line's rows on each width change without rendering any."""
    rows: list[str] = []
    row, room = "", first
    for word in text.split():
        while cell_len(word) > room and not row:
            head = chop_cells(word, room)[0]
            rows.append(head)
            word, room = word[len(head) :], rest
        needed = cell_len(word) + (1 if row else 0)
        if row and needed > room:
            rows.append(row)
            row, room = "", rest
            needed = cell_len(word)
            while cell_len(word) > room:
                head = chop_cells(word, room)[0]
                rows.append(head)
                word = word[len(head) :]
                needed = cell_len(word)
        row = f"{row} {word}" if row else word
        room -= needed
    if row or not rows:
        rows.append(row)
    return rows


def rows_needed(line: LogLine, width: int) -> int:
    """How many rows ``line`` takes at ``width`` cells (counted, not rendered)."""
    if width <= PREFIX_CELLS:
        return 1
    return len(wrap_words(line.text, width - PREFIX_CELLS, width - _indent(width)))


def wrapped_line(line: LogLine, width: int, styles: LineStyles) -> list[Text]:
    """``line``'s rows at ``width``: the first with its prefix, the rest indented
    (:func:`rows_needed` of them)."""
    if width <= PREFIX_CELLS:
        return [format_line(line, styles)]
    head, *rest = wrap_words(line.text, width - PREFIX_CELLS, width - _indent(width))
    style = _text_style(line, styles)
    indent = " " * _indent(width)
    return [
        format_line(replace(line, text=head), styles),
        *(Text.assemble(indent, (row, style)) for row in rest),
    ]


class LogLines(ScrollView, can_focus=True):
    """The log's lines, newest at the bottom, each formatted only when it is drawn; a line
    longer than the log is wide wraps onto rows indented under its text.

    Textual's RichLog renders every line it is given up front; a stored run's replay step
    or a filter change replaces the whole log, and rendering thousands of lines then took
    seconds. Here a replacement is a list assignment plus each line's row count (its length in
    cells, no rendering); a frame formats the rows on screen.
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
    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[LogLine] = []
        self._starts: list[int] = [0]
        """The first row of each line, and the row count after the last one."""
        self._width = 0
        """The width the row counts are for."""
        self._rows: dict[int, list[Strip]] = {}
        """Each drawn line's rows, ready for the screen at ``_drawn_for``'s width and style."""
        self._style: Style | None = None
        self._line_styles: LineStyles = CONSOLE_LINE_STYLES
        self._drawn_for: tuple[int, Style | None] = (0, None)

    def replace(self, lines: list[LogLine]) -> None:
        """Show ``lines`` instead of what is shown, scrolled to the newest."""
        self.lines = list(lines)
        self._rows.clear()
        self._count_rows(0)
        self._grew()
        self.refresh()

    def extend(self, lines: list[LogLine]) -> None:
        """Add ``lines`` at the bottom; the view follows the newest line."""
        kept = len(self.lines)
        self.lines.extend(lines)
        self._count_rows(kept)
        self._grew()

    def cut(self, dropped: int) -> None:
        """Drop the last ``dropped`` lines (a replay stepping back)."""
        keep = len(self.lines) - dropped
        if dropped > 0:
            del self.lines[keep:]
            del self._starts[keep + 1 :]
            for index in [i for i in self._rows if i >= keep]:
                del self._rows[index]
            self._grew()

    def _count_rows(self, first: int) -> None:
        """The rows of lines ``first`` onwards at the log's width."""
        del self._starts[first + 1 :]
        row = self._starts[first]
        for line in self.lines[first:]:
            row += rows_needed(line, self._width)
            self._starts.append(row)

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        if width != self._width:
            self._width = width
            self._rows.clear()
            self._count_rows(0)
            self._grew()
            self.refresh()

    def _grew(self) -> None:
        """Only the scrollable height changes, never the log's box: setting ``virtual_size`` the
        usual way would lay the whole screen out again for every batch of a live run (the cause
        of key presses waiting tens of ms at 1,000 events/s), so the scrollbar is told directly.
        """
        size = Size(0, self._starts[-1])
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
        """Row ``y``: a row of the line it belongs to, formatted and styled once per line."""
        width = self.scrollable_content_region.width
        if self._style is None:
            self._style = self.rich_style  # walks the DOM: once per style change, not per row
            self._line_styles = {
                "kind": tone_style(self, "muted"),
                **{level: tone_style(self, tone) for level, tone in LEVEL_TONES.items()},
            }
        if (width, self._style) != self._drawn_for:
            self._drawn_for = (width, self._style)
            self._rows.clear()
        row = self.scroll_offset.y + y
        if row >= self._starts[-1] or width != self._width:
            return Strip.blank(width, self._style)
        index = bisect.bisect_right(self._starts, row) - 1
        rows = self._rows.get(index)
        if rows is None:
            rows = [
                Strip(text.render(self.app.console))
                .crop_extend(0, width, self._style)
                .apply_style(self._style)
                for text in wrapped_line(self.lines[index], width, self._line_styles)
            ]
            self._rows[index] = rows
        return rows[min(row - self._starts[index], len(rows) - 1)]


class EventLog(Vertical):
    """Every event of the run, newest at the bottom, with a filter box; a step's research stages
    are folded away unless the filter asks for them."""

    HELP = """
## Event log

Every event of the run, in order, with its local time; a long line wraps.
A step's research stages (`stage planned`, `stage validated_result`…) are
folded under their step — the log's border counts them — and show when the
filter asks for them (`stage`, or `step:review` for one step's).
A breaker that reports the state it was already in is not logged again (the
providers panel shows its new counts).

**/** jumps to the filter box: a plain word matches an event kind
(`step_failed`, or a part of it such as `breaker`) or a whole word of the
text (`open` finds a breaker going OPEN, not `openai`); `kind:step_`,
`level:error` or `step:review` match those fields. All terms must match.
"""

    DEFAULT_CSS = """
    EventLog { height: 1fr; }
    EventLog > Input { height: 1; border: none; padding: 0 1; }
    EventLog > LogLines { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = RunView()
        self._written = 0
        self._query = ""
        self._shown = 0
        """Lines the log shows now."""
        self._folded = 0
        """Folded lines among the view's first ``_written``."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="/ filter: words, stage, kind:…, level:…, step:…", id="log-filter")
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
        dropped = self._view.log[kept : self._written]
        log.cut(len(self._matching(dropped)))
        self._folded -= sum(line.folded for line in dropped)
        self._view = view
        log.extend(self._matching(view.log[kept:]))
        self._folded += sum(line.folded for line in view.log[kept:])
        self._written = len(view.log)
        self._count(len(log.lines))

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
        """The lines the filter keeps; without a filter, all but the folded ones."""
        if not self._query.strip():
            return [line for line in lines if not line.folded]
        return [line for line in lines if matches(line, self._query)]

    def _rewrite(self) -> None:
        log = self.query_one(LogLines)
        log.replace(self._matching(self._view.log))
        self._written = len(self._view.log)
        self._folded = sum(line.folded for line in self._view.log)
        self._count(len(log.lines))

    def _count(self, shown: int) -> None:
        """Say on the log's border what the filter shows, or how many stage lines are folded."""
        if self._query.strip():
            subtitle = f"{shown} of {self._written} lines match"
        elif self._folded:
            subtitle = f"{self._folded} stage lines folded · filter 'stage' shows them"
        else:
            subtitle = ""
        if subtitle != self.border_subtitle:
            self.border_subtitle = subtitle

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._query = event.value
        self._rewrite()
