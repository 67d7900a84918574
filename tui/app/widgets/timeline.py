"""The replay timeline: a position among a run's stored events."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from tui.app.status_style import STATUS_CLASSES, tone_style


class Timeline(Widget, can_focus=True):
    """A bar over the run's events; the replay shows the run as it was after event N."""

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    HELP = """
## Replay timeline

The run as it stood after event N of its stored events.
**Left/Right** step one event, **PageUp/PageDown** ten, **Home/End** jump to
the start or the end; clicking the bar jumps there.
"""

    DEFAULT_CSS = """
    Timeline { height: 1; background: $boost; }
    Timeline:focus { background: $accent 30%; }
    """

    BINDINGS = [
        Binding("left", "step(-1)", "Back", id="timeline.back"),
        Binding("right", "step(1)", "Forward", id="timeline.forward"),
        Binding("pageup", "step(-10)", "Back 10", show=False, id="timeline.back10"),
        Binding("pagedown", "step(10)", "Forward 10", show=False, id="timeline.forward10"),
        Binding("home", "jump(0)", "Start", show=False, id="timeline.start"),
        Binding("end", "jump(-1)", "End", show=False, id="timeline.end"),
    ]

    position: reactive[int] = reactive(0)
    total: reactive[int] = reactive(0)
    caption: reactive[str] = reactive("")

    class Seek(Message):
        def __init__(self, position: int) -> None:
            self.position = position
            super().__init__()

    def _bar(self) -> tuple[str, int]:
        """(the label before the bar, the bar's width): the caption takes at most half the line."""
        label = f" ▷ replay {self.position}/{self.total} "
        return label, max(
            10, self.size.width - len(label) - min(len(self.caption) + 1, self.size.width // 2)
        )

    def render(self) -> Text:
        label, width = self._bar()
        tail = f" {self.caption}"
        filled = int(width * self.position / self.total) if self.total else 0
        text = Text(label, style="bold")
        text.append("━" * filled, style=tone_style(self, "active"))
        text.append("─" * (width - filled), style="dim")
        text.append(tail[: self.size.width // 2], style="italic")
        return text

    def action_step(self, delta: int) -> None:
        self.post_message(self.Seek(max(0, min(self.total, self.position + delta))))

    def action_jump(self, where: int) -> None:
        self.post_message(self.Seek(self.total if where < 0 else where))

    def on_click(self, event: events.Click) -> None:
        label, width = self._bar()
        offset = event.x - len(label)
        if 0 <= offset <= width and self.total:
            self.post_message(self.Seek(round(offset / width * self.total)))
