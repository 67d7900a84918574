"""Every status style is readable in every shipped theme: 4.5:1 (WCAG 2.x AA) or more against
each background a status is drawn on, computed from the colours the running app resolves for
the theme (issue 25, item 5). The contrast is computed here with coloraide, independently of
the app's own formula."""

from __future__ import annotations

from typing import Any

import pytest
from coloraide import Color as Colour
from rich.color import Color as RichColor
from textual.color import Color
from textual.widget import Widget

from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.status_colours import BACKGROUNDS, MIN_CONTRAST
from tui.app.status_style import STATUS_CLASSES, status_style
from tui.launch.workbench import Workbench
from tui.present.status_tone import STATUS_TONES

SIZE = (100, 30)


def wcag(first: RichColor, second: Color) -> float:
    red, green, blue = first.get_truecolor()
    return Colour(f"rgb({red} {green} {blue})").contrast(
        Colour(f"rgb({second.r} {second.g} {second.b})"), method="wcag21"
    )


def contrast_table(app: WorkbenchApp, widget: Widget) -> dict[str, float]:
    """Each status word's worst contrast against the theme's backgrounds, as the app draws it."""
    variables = app.theme_variables
    backgrounds = [Color.parse(variables[name]) for name in BACKGROUNDS]
    table: dict[str, float] = {}
    for status in STATUS_TONES:
        colour = status_style(widget, status).color
        assert colour is not None, status
        table[status] = min(wcag(colour, background) for background in backgrounds)
    return table


def styles_follow_theme(app: WorkbenchApp, widget: Widget) -> bool:
    """The theme just chosen has reached the widget's styles: its variables are the theme's and
    a status is drawn in the colour they give. Setting ``app.theme`` changes the theme's name at
    once but the variables and styles only on a later refresh; measured before it, every theme
    would be measured in the previous theme's colours."""
    variables = app.get_css_variables()
    if app.theme_variables.get("background") != variables["background"]:
        return False
    if Color.parse(variables["background"]).ansi is not None:
        return True
    drawn = status_style(widget, "RUNNING").color
    wanted = Color.parse(variables[f"status-{STATUS_TONES['RUNNING']}"])
    return drawn is not None and tuple(drawn.get_truecolor()) == wanted.rgb


@pytest.fixture
def app(workbench: Workbench) -> WorkbenchApp:
    return WorkbenchApp(workbench)


async def test_every_status_style_reads_in_every_theme(app: WorkbenchApp) -> None:
    failures: list[str] = []
    rows: dict[str, Any] = {}
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        widget = app.screen
        assert set(STATUS_CLASSES) <= widget.COMPONENT_CLASSES
        for theme in sorted(app.available_themes):
            app.theme = theme
            await until(pilot, lambda theme=theme: app.current_theme.name == theme)
            await until(pilot, lambda: styles_follow_theme(app, widget))
            if Color.parse(app.theme_variables["background"]).ansi is not None:
                continue  # the terminal's own palette: only the terminal knows its colours
            rows[theme] = table = contrast_table(app, widget)
            failures += [
                f"{theme} {status} {ratio:.2f}"
                for status, ratio in table.items()
                if ratio < MIN_CONTRAST
            ]
    assert len(rows) >= 15, sorted(rows)
    assert len({tuple(table.values()) for table in rows.values()}) > 1, "one theme measured"
    assert not failures, failures
