"""Search in a screen's text: a line above the footer; matches are marked and scrolled to.

The screen says what can be searched (``candidates``: each block with its plain text); the bar
marks every block that contains the query (``-find-hit``), the current one more strongly
(``-find-current``), and scrolls it into view. Typing restarts from the first match; Enter goes
to the next one, wrapping round.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Static

Candidates = Callable[[], list[tuple[Widget, str]]]


def plain_text(widget: Static) -> str:
    """What a text block shows, without its styles (rich ``Text`` or Textual ``Content``)."""
    content = widget.content
    return str(getattr(content, "plain", content))


class FindBar(Horizontal):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    FindBar { height: 1; display: none; background: $panel; }
    FindBar Input { width: 1fr; height: 1; border: none; padding: 0 1; }
    FindBar #find-count { width: auto; min-width: 16; padding: 0 1; color: $text-muted; }
    .-find-hit { background: $warning 25%; }
    .-find-current { background: $warning 60%; }
    """

    def __init__(self, candidates: Candidates, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._candidates = candidates
        self.hits: list[Widget] = []
        self.current = -1

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search · Enter next match · Esc close", id="find-input")
        yield Static("", id="find-count")

    @property
    def is_open(self) -> bool:
        return bool(self.display)

    def open(self) -> None:
        self.display = True
        self.query_one(Input).focus()

    def close(self) -> None:
        self._mark([], -1)
        self.display = False

    @property
    def current_hit(self) -> Widget | None:
        return self.hits[self.current] if 0 <= self.current < len(self.hits) else None

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.find(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.hits:
            self._mark(self.hits, (self.current + 1) % len(self.hits))
        else:
            self.find(event.value)

    def find(self, query: str) -> None:
        """Mark every block containing ``query`` (any case) and go to the first."""
        needle = query.casefold().strip()
        hits = (
            [widget for widget, text in self._candidates() if needle in text.casefold()]
            if needle
            else []
        )
        self._mark(hits, 0 if hits else -1)
        if needle and not hits:
            self.query_one("#find-count", Static).update(f"no match for {query.strip()!r}")

    def _mark(self, hits: list[Widget], current: int) -> None:
        for widget in self.hits:
            widget.remove_class("-find-hit", "-find-current")
        self.hits, self.current = hits, current
        for widget in hits:
            widget.add_class("-find-hit")
        count = ""
        hit = self.current_hit
        if hit is not None:
            hit.add_class("-find-current")
            hit.scroll_visible(animate=False)
            count = f"{current + 1} of {len(hits)}"
        self.query_one("#find-count", Static).update(count)
