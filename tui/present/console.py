"""The rich console every command prints tables, colours and progress through.

:class:`SafeConsole` shows the control characters of what it prints instead of sending them
(:func:`plumbing.untrusted_text.for_terminal`): a string is cleaned before its markup is parsed,
so the layout counts what is shown, and every segment of text once more on its way out,
whatever built it (a ``Text``, a table cell, a progress bar's description). Rich's own control
segments (the cursor moves of a live display) pass untouched. Plain lines go through
:mod:`tui.echo`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from plumbing.untrusted_text import for_terminal


class SafeConsole(Console):
    """A rich console that never sends a control character it was given to print."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(for_terminal(text), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
            else:
                shown = for_terminal(segment.text)
                yield segment if shown is segment.text else Segment(shown, segment.style)
