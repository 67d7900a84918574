"""One themed status-style table: a theme switch recolours every panel that shows a status.

The real app over a real run store: each widget's drawn line is read back
(``render_line``) and the colour of a status cell compared before and after
``app.theme = ...``, against the new theme's own ``$status-good`` (its ``$success`` made readable).
"""

from __future__ import annotations

from rich.color import Color as RichColor
from textual.color import Color
from textual.widget import Widget

from tests.tui.pilot_wait import press, until
from tui.app.app import WorkbenchApp
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RunScreen
from tui.launch.workbench import Workbench

SIZE = (150, 46)
FIRST, SECOND = "textual-dark", "nord"


def drawn_colour(widget: Widget, text: str) -> RichColor | None:
    """The foreground colour the widget draws ``text`` in (the first visible line that has it)."""
    for y in range(widget.size.height):
        for segment in widget.render_line(y):
            if text in segment.text and segment.style is not None:
                return segment.style.color
    return None


def success(app: WorkbenchApp) -> RichColor:
    return Color.parse(app.get_css_variables()["status-good"]).rich_color


async def test_a_theme_switch_recolours_every_status_panel(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = FIRST
        home = app.screen
        assert isinstance(home, HomeScreen)
        await pilot.pause()
        screen = app.open_run("run-done")
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: app.screen is screen and bool(screen.query("#rounds")))
        dag, outline = screen.query_one("#dag"), screen.query_one("#outline")
        # a status cell in each panel: a SUCCEEDED step, a CLOSED breaker, a High tier, a
        # COMPLETED run (on Home, in the history and in the run's status line)
        cells: dict[str, tuple[Widget, str]] = {
            "dag": (dag, "source_policy"),
            "providers": (screen.query_one("#providers"), "CLOSED"),
            "rounds": (screen.query_one("#rounds"), "High"),
            "home": (home.query_one("#runs"), "COMPLETED"),
            "run status": (screen.query_one("#run-status"), "COMPLETED"),
        }
        before = {name: drawn_colour(*cell) for name, cell in cells.items()}
        await press(pilot, "o", lambda: outline.display and outline.size.height > 0)
        before["outline"] = drawn_colour(outline, "source_policy")
        await press(pilot, "o", lambda: dag.display and dag.size.height > 0)
        listing = HistoryScreen(workbench, app.live_runs)
        app.push_screen(listing)
        await until(pilot, lambda: app.screen is listing and bool(listing.query("#history")))
        history = listing.query_one("#history")
        cells["history"] = (history, "COMPLETED")
        before["history"] = drawn_colour(history, "COMPLETED")
        first = success(app)
        assert set(before.values()) == {first}, before

        app.theme = SECOND
        await until(pilot, lambda: success(app) != first)
        second = success(app)
        await until(pilot, lambda: drawn_colour(history, "COMPLETED") == second)
        await press(pilot, "escape", lambda: app.screen is screen)
        shown = ("dag", "providers", "rounds", "home", "run status")
        await until(pilot, lambda: all(drawn_colour(*cells[n]) == second for n in shown))
        await press(pilot, "o", lambda: outline.display and outline.size.height > 0)
        await until(pilot, lambda: drawn_colour(outline, "source_policy") == second)
