"""The run's event log, filterable by text or by ``kind:<event kind>`` / ``level:<level>``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, RichLog

from tui.app.run_state import LogLine, RunView

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "debug": "dim", "info": ""}
MAX_LINES = 2000


def matches(line: LogLine, query: str) -> bool:
    """Every whitespace-separated term must match: ``kind:x``, ``level:x``, ``step:x`` or plain text."""
    for term in query.lower().split():
        key, sep, value = term.partition(":")
        if sep and key == "kind":
            ok = line.kind.startswith(value)
        elif sep and key == "level":
            ok = line.level == value
        elif sep and key == "step":
            ok = (line.step_id or "").startswith(value)
        else:
            ok = term in line.text.lower() or term in line.kind
        if not ok:
            return False
    return True


def format_line(line: LogLine) -> Text:
    text = Text(f"{line.seq:>5} ", style="dim")
    text.append(f"{line.kind:<18} ", style="cyan")
    text.append(line.text, style=LEVEL_STYLE.get(line.level, ""))
    return text


class EventLog(Vertical):
    """Every event of the run, newest at the bottom, with a filter box."""

    HELP = """
## Event log

Every event of the run, in order. Type in the filter box to narrow it:
plain words match the text; `kind:step_failed`, `level:error` or
`step:review` match those fields. All terms must match.
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
        shown = [format_line(line) for line in lines if matches(line, self._query)][-MAX_LINES:]
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
