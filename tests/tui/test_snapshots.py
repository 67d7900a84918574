"""SVG snapshots of every screen, from scripted runs stored in a real RunStore file.

Fixed terminal sizes, a frozen store clock and fixed run ids; focus is put on
widgets without a text cursor, so nothing blinks.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RunScreen
from tui.launch.workbench import Workbench

WIDE = (150, 46)


def opened(run_id: str, position: int | None = None, focus: str | None = None):
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, WorkbenchApp)
        await pilot.pause()
        screen = app.open_run(run_id)
        await pilot.pause()
        assert isinstance(screen, RunScreen)
        if position is not None:
            screen.seek(position)
        if focus:
            screen.query_one(focus).focus()
        await pilot.pause()

    return run_before


async def home_loaded(pilot: Pilot) -> None:
    """Home after its worker has loaded the workflows and the first one's form is shown."""
    app = pilot.app

    await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
    await pilot.pause()


def test_home(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=WIDE, run_before=home_loaded)


def test_run_mid_flight(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench), terminal_size=WIDE, run_before=opened("run-mid", position=20)
    )


def test_run_with_open_and_half_open_providers(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench),
        terminal_size=WIDE,
        run_before=opened("run-mid", focus="#providers"),
    )


def test_rounds_matrix_after_three_rounds(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench), terminal_size=WIDE, run_before=opened("run-done", focus="#rounds")
    )


def test_approval_prompt(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=WIDE, run_before=opened("run-ask"))


def test_tie_breaker_prompt(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=WIDE, run_before=opened("run-tie"))


def test_report(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench), terminal_size=WIDE, run_before=opened("run-done"), press=["r"]
    )


def test_replay_at_a_middle_event(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench),
        terminal_size=WIDE,
        run_before=opened("run-done", position=37, focus="#timeline"),
    )


def test_narrow_terminal(snap_compare, workbench: Workbench) -> None:
    assert snap_compare(
        WorkbenchApp(workbench), terminal_size=(72, 40), run_before=opened("run-mid")
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_run_screen_fits(snap_compare, workbench: Workbench, size: tuple[int, int]) -> None:
    """The finished research run at a small, a middling and a large terminal."""
    assert snap_compare(WorkbenchApp(workbench), terminal_size=size, run_before=opened("run-done"))


SIZES = [(80, 24), (120, 40), (180, 50), (250, 70)]
"""The sizes a person tried the app at (issue 25): every screen is usable at each."""


def size_id(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=size_id)
def test_home_at_every_size(snap_compare, workbench: Workbench, size: tuple[int, int]) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=size, run_before=home_loaded)


@pytest.mark.parametrize("size", SIZES, ids=size_id)
def test_run_mid_run_at_every_size(
    snap_compare, workbench: Workbench, size: tuple[int, int]
) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=size, run_before=opened("run-mid"))


@pytest.mark.parametrize("size", SIZES, ids=size_id)
@pytest.mark.parametrize("run_id", ["run-ask", "run-tie"], ids=["approval", "tie_breaker"])
def test_prompt_at_every_size(
    snap_compare, workbench: Workbench, size: tuple[int, int], run_id: str
) -> None:
    assert snap_compare(WorkbenchApp(workbench), terminal_size=size, run_before=opened(run_id))


@pytest.mark.parametrize("size", SIZES, ids=size_id)
def test_report_at_every_size(snap_compare, workbench: Workbench, size: tuple[int, int]) -> None:
    assert snap_compare(
        WorkbenchApp(workbench), terminal_size=size, run_before=opened("run-done"), press=["r"]
    )
