"""The app's last line of defence: no character a terminal acts on leaves a widget.

The app shows text from outside visibly where it reads it (:mod:`tui.present.untrusted`:
``␛]52;…``), but Textual writes whatever a widget holds to the terminal as it is, so a value
that reached a widget some other way — a new screen, a library's widget, a message built from
a stored value — would send its escape sequences raw. :class:`UnsafeCharacterFilter` is a
Textual line filter: the compositor passes every rendered line of every widget through it
after layout, and it removes each control, escape-starting and format character from the
text (never from Textual's own control segments). Those characters take no cell, so the
line keeps the width it was laid out with.

Textual's filters are its mechanism for changing what is written after rendering (its
NO_COLOR and dim modes are filters); :meth:`tui.app.app.WorkbenchApp.get_line_filters` adds
this one to Textual's own.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from plumbing.untrusted_text import without_unsafe_characters


class UnsafeCharacterFilter(LineFilter):
    """Removes, from every text segment of a rendered line, what a terminal would act on."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        cleaned = segments
        for index, segment in enumerate(segments):
            if segment.control:
                continue
            text = without_unsafe_characters(segment.text)
            if text is not segment.text:
                if cleaned is segments:
                    cleaned = list(segments)
                cleaned[index] = Segment(text, segment.style)
        return cleaned
