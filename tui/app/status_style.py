"""The app's one status-style table: each tone (tui/present/status_tone.py) as a theme-coloured
component class, so switching theme recolours every panel that shows a status.

A widget that colours statuses lists :data:`STATUS_CLASSES` in its
``COMPONENT_CLASSES``, asks :func:`status_style` for a status's style, and redraws
when the theme changes (:func:`on_theme_change`). The rules use the theme's
variables; the app loads them once (:data:`STATUS_CSS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

from rich.style import Style
from textual.widget import Widget

from tui.present.status_tone import Tone, tone

TONE_RULES: dict[Tone, str] = {
    "muted": "color: $status-muted;",
    "active": "color: $status-active; text-style: bold;",
    "attention": "color: $status-attention; text-style: bold;",
    "caution": "color: $status-attention;",
    "good": "color: $status-good;",
    "excellent": "color: $status-good; text-style: bold underline;",
    "disabled": "color: $status-disabled; text-style: italic;",
    "critical": "color: $status-critical; text-style: bold;",
    "bad": "color: $status-critical;",
    "stopped": "color: $status-stopped;",
    "plain": "",
}
"""The ``$status-*`` colours are the theme's, made readable on its panels (status_colours.py)."""
assert set(TONE_RULES) == set(get_args(Tone)), "every tone needs a rule"


def status_class(status: str) -> str:
    """The component class that styles ``status`` (any case)."""
    return f"status--{tone(status)}"


STATUS_CLASSES: frozenset[str] = frozenset(f"status--{name}" for name in TONE_RULES)
STATUS_CSS = "\n".join(f".status--{name} {{ {rule} }}" for name, rule in TONE_RULES.items())
"""Rules for the component classes; they match only the style-holding nodes Textual makes
for a widget's ``COMPONENT_CLASSES``, never a widget itself (no widget has these classes)."""


StatusStyler = Callable[[str], Style | str]
"""A surface's style for a status word: :func:`status_style` bound to a widget in the app,
:func:`tui.present.headless.console_style` on a console."""


def tone_style(widget: Widget, name: Tone) -> Style:
    """The style of tone ``name`` in the widget's theme (a warning, a failure, a success...),
    for text that is not a status word. The widget lists STATUS_CLASSES in its
    ``COMPONENT_CLASSES``."""
    return widget.get_component_rich_style(f"status--{name}", partial=True)


def status_style(widget: Widget, status: str) -> Style:
    """``status``'s style as the widget's theme has it: colour and text style only, so it
    sits on whatever background its cell has (a table's cursor row, a zebra stripe)."""
    return widget.get_component_rich_style(status_class(status), partial=True)


def on_theme_change(widget: Widget, redraw: Callable[[], None]) -> None:
    """Call ``redraw`` after each theme switch (once the theme's styles are in place),
    for as long as ``widget`` is mounted. Call it from the widget's ``on_mount``."""
    widget.app.theme_changed_signal.subscribe(widget, lambda _theme: redraw())
