"""The status colours of a theme: each tone's theme colour, made readable on the theme's panels.

A theme's ``$warning`` or ``$success`` is chosen for a button's face, not for text on the app's
backgrounds: in the light themes it is often under 2:1 against them. Each tone here starts from
its theme colour and is moved towards the theme's own contrast text (black or white) just far
enough to reach :data:`MIN_CONTRAST` on every background a status is drawn on, so the colours
stay the theme's and a theme switch recolours everything. An ANSI theme's colours are the
terminal's palette, which only the terminal knows: they are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.color import Color

MIN_CONTRAST = 4.5
"""WCAG 2.x AA for normal text."""
BACKGROUNDS = ("background", "surface", "panel")
"""The theme colours statuses are drawn on: screens, the graph and the log, the header and panels."""
TONE_SOURCES: dict[str, str] = {
    "muted": "foreground-muted",
    "active": "accent",
    "attention": "warning",
    "good": "success",
    "critical": "error",
    "stopped": "secondary",
    "disabled": "text-disabled",
}
"""Each status variable (``$status-<name>``) and the theme colour it starts from."""
STEPS = 40


def _channel(value: int) -> float:
    scaled = value / 255
    return scaled / 12.92 if scaled <= 0.04045 else ((scaled + 0.055) / 1.055) ** 2.4


def luminance(colour: Color) -> float:
    """WCAG 2.x relative luminance. Hand-written: it is the spec's three-line formula, and the
    colour library that has it (coloraide, used by the tests to check this) costs a third of a
    second of the app's start-up to import."""
    return 0.2126 * _channel(colour.r) + 0.7152 * _channel(colour.g) + 0.0722 * _channel(colour.b)


def contrast(first: Color, second: Color) -> float:
    """WCAG 2.x contrast ratio of two opaque colours (1 to 21)."""
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable(colour: Color, backgrounds: list[Color]) -> Color:
    """``colour`` (blended onto the first background when translucent) moved towards the
    backgrounds' contrast text until it reaches MIN_CONTRAST on every one of them."""
    base = backgrounds[0]
    solid = base.blend(colour.with_alpha(1.0), colour.a) if colour.a < 1 else colour
    towards = base.get_contrast_text(1.0)
    for step in range(STEPS + 1):
        candidate = solid.blend(towards, step / STEPS)
        if all(contrast(candidate, background) >= MIN_CONTRAST for background in backgrounds):
            return candidate
    return towards


def parse(value: str, background: Color) -> Color:
    """A theme variable's colour; ``auto N%`` is the background's contrast text at N%."""
    if value.startswith("auto"):
        percent = value.removeprefix("auto").strip().rstrip("%")
        return background.get_contrast_text(float(percent) / 100 if percent else 1.0)
    return Color.parse(value)


def status_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """``status-<tone>`` for each of TONE_SOURCES, from a theme's resolved CSS variables."""
    backgrounds = [Color.parse(variables[name]) for name in BACKGROUNDS]
    if backgrounds[0].ansi is not None:
        return {f"status-{tone}": variables[source] for tone, source in TONE_SOURCES.items()}
    solid = [backgrounds[0].blend(b.with_alpha(1.0), b.a) if b.a < 1 else b for b in backgrounds]
    return {
        f"status-{tone}": readable(parse(variables[source], solid[0]), solid).hex
        for tone, source in TONE_SOURCES.items()
    }
