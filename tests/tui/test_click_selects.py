"""One click selects, Enter commits (issue 25): a click on a graph step or a Home row only selects
it, even the step or row already highlighted when the screen opened; Enter (or a double click)
opens it. The real app through Pilot at 120x40."""

from __future__ import annotations

from textual.geometry import Offset
from textual.widget import Widget
from textual.widgets import DataTable

from tests.tui.pilot_wait import press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.prompts import ApprovalPrompt, TieBreakPrompt
from tui.launch.workbench import Workbench

SIZE = (120, 40)


def at(widget: Widget, content: Offset) -> Offset:
    """The offset from ``widget``'s corner of a cell at ``content`` in its scrolled content."""
    inset = widget.content_region.offset - widget.region.offset
    return inset + content - Offset(int(widget.scroll_offset.x), int(widget.scroll_offset.y))


def step_cell(graph: DagView, step_id: str) -> Offset:
    region = graph.node_region(step_id)
    assert region is not None, step_id
    return at(graph, Offset(region.x + 1, region.y))


def detail_of(app: WorkbenchApp) -> str | None:
    return app.screen.step.id if isinstance(app.screen, StepDetailScreen) else None


async def test_a_click_selects_a_step_and_enter_opens_it(workbench: Workbench) -> None:
    """A click on the step highlighted when the run opened opened its detail at once."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = app.open_run("run-done")
        assert screen is not None
        await until(pilot, lambda: screen.is_current and bool(screen.query(DagView)))
        graph = screen.query_one(DagView)
        await until(pilot, lambda: graph.size.width > 0 and graph.selected is not None)
        first = graph.selected
        assert first is not None
        other = next(step for step in graph.layout_.positions if step != first)

        await pilot.click(graph, offset=step_cell(graph, first))
        await pilot.click(graph, offset=step_cell(graph, other))
        await until(pilot, lambda: graph.selected == other or app.screen is not screen)
        assert app.screen is screen, f"a click opened {detail_of(app)}"
        await pilot.click(graph, offset=step_cell(graph, other))  # on the selected one
        await pilot.click(graph, offset=step_cell(graph, first))
        await until(pilot, lambda: graph.selected == first or app.screen is not screen)
        assert app.screen is screen, f"a click on the selected step opened {detail_of(app)}"

        await press(pilot, "enter", lambda: detail_of(app) == first)
        await press(pilot, "escape", lambda: app.screen is screen)
        await pilot.double_click(graph, offset=step_cell(graph, other))
        await until(pilot, lambda: detail_of(app) == other)


async def test_a_click_selects_a_recent_run_and_enter_opens_it(workbench: Workbench) -> None:
    """A click on the highlighted first row of Home's recent runs opened that run at once."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        home = app.screen
        table = home.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count >= 2)
        assert table.cursor_row == 0

        def row(index: int) -> Offset:
            return at(table, Offset(2, 1 + index))  # under the header row

        await pilot.click(table, offset=row(0))
        await pilot.click(table, offset=row(1))
        await until(pilot, lambda: table.cursor_row == 1 or app.screen is not home)
        assert app.screen is home, "a click opened a run"
        await pilot.click(table, offset=row(1))  # on the highlighted row
        await pilot.click(table, offset=row(0))
        await until(pilot, lambda: table.cursor_row == 0 or app.screen is not home)
        assert app.screen is home, "a click on the highlighted row opened its run"

        wanted = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

        def opened() -> bool:
            screen = app.screen
            if isinstance(screen, (ApprovalPrompt, TieBreakPrompt)):
                return prompt_ready(app, type(screen)) and screen.event.run_id == wanted
            return isinstance(screen, RunScreen) and screen.run_id == wanted

        await press(pilot, "enter", opened)
