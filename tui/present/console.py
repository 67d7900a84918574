"""The rich console every command prints tables, colours and progress through.

:class:`SafeConsole` shows the control characters of what it prints instead of sending them
(:func:`plumbing.untrusted_text.for_terminal`): a string is cleaned before its markup is parsed,
so the layout counts what is shown, and every segment of text once more on its way out,
whatever built it (a ``Text``, a table cell, a progress bar's description). Rich's own control
segments (the cursor moves of a live display) pass untouched. Plain lines go through
:mod:`tui.echo`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
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

    def write_shown(self, text: str) -> None:
        """Write ``text`` and a line break as :meth:`Console.out` would, for text that shows
        as it is (:func:`print_lines` decides): straight to the file when nothing of rich's
        stands between — no capture or buffer open on this thread, no live display or other
        render hook, no recording, no legacy Windows console. Hand-written because rich's
        own way costs ~50 µs a call, paid by every batch of a run's lines (issue 26); what it
        checks first are rich's own fields (rich 13–15)."""
        if self.quiet:
            return
        if (
            self._buffer_index
            or self._render_hooks
            or self.record
            or self.is_jupyter
            or self.legacy_windows
        ):
            self.out(text, highlight=False)
            return
        with self._lock:
            self.file.write(for_terminal(text) + "\n")
            self.file.flush()


Piece = tuple[str, str]
"""Text and the rich style it is shown in ("" for none)."""

_EMOJI_CODE = re.compile(r":[^\s:]*:")
"""Two colons with no space between: rich's markup would read it as an emoji code."""
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]")
_ZERO_WIDTH_JOINER = "\u200d"
_VARIATION_SELECTOR = "\ufe0f"
"""With the zero width joiner: characters that change the width of those around them (variation
selector 16): a text holding one is measured by rich as a whole. Named one by one, not looped
over: every printed line is searched for them."""


def piece_markup(pieces: Sequence[Piece]) -> str:
    """``pieces`` as one line of rich markup, their text escaped."""
    return "".join(
        f"[{style}]{escape(text)}[/]" if style else escape(text) for text, style in pieces
    )


def print_lines(console: Console, lines: Iterable[Sequence[Piece]]) -> None:
    """Print each line of pieces as :meth:`Console.print` prints its markup.

    A console that draws no style (piped, redirected) shows a line that fits its width and
    holds nothing markup or layout would change as its bare text: consecutive such lines are
    written together (:meth:`SafeConsole.write_shown`), the rest printed as markup. The output
    is the same either way (tests/tui/test_headless_lines.py); rich's markup, wrapping and segments
    cost about a tenth of a millisecond a line, which a run of thousands of steps printing two
    lines a step paid more for than its engine did (issue 26)."""
    width = console.width if console.color_system is None else 0  # rich measures it each time
    bare: list[str] = []
    for pieces in lines:
        text = "".join([piece for piece, _ in pieces])
        if width and _shown_as_is(text, width):
            bare.append(text)
            continue
        if bare:
            _write_shown(console, "\n".join(bare))
            bare = []
        console.print(piece_markup(pieces), highlight=False)
    if bare:
        _write_shown(console, "\n".join(bare))


def _write_shown(console: Console, text: str) -> None:
    if isinstance(console, SafeConsole):
        console.write_shown(text)
    else:
        console.out(text, highlight=False)


def _shown_as_is(text: str, width: int) -> bool:
    """Whether rich prints ``text`` (as markup, with no style) unchanged on one line of
    ``width`` cells: nothing to sanitise, expand, strip or replace (rich's markup reads
    backslashes before a bracket as escapes, even those :func:`escape` left alone), and no
    wrap."""
    return (
        text.isprintable()
        and "\\" not in text
        and _EMOJI_CODE.search(text) is None
        and cell_width(text) <= width
    )


def cell_width(text: str) -> int:
    """``rich.cells.cell_len(text)`` of a printable text, measured character by character only
    beyond ASCII (a printable ASCII character is one cell): a run's lines hold a glyph or two
    and are all different, so rich's cache never hits and its sum over every character cost
    more than the rest of printing the line. Without joiners rich's width is the sum of its
    characters' widths, so the two agree (tests/tui/test_headless_lines.py)."""
    if _ZERO_WIDTH_JOINER in text or _VARIATION_SELECTOR in text:
        return cell_len(text)
    return len(text) + sum(cell_len(character) - 1 for character in _BEYOND_ASCII.findall(text))
