"""Replay from checkpoints: the view at any event equals folding every event from the first.

A step back late in a long run must not refold from event 0 (tui/app/run_state.ReplayFold);
these tests prove that what it shows is still exactly the full fold, whichever way the
person steps, and that folding on from a view it handed out never changes a checkpoint.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets._footer import FooterKey

from engine.events import RunEvent
from engine.store import RunStore
from tests.tools.sample_run import research_events, store_events, tie_break_events
from tests.tui.pilot_wait import press, until
from tui.app.app import WorkbenchApp
from tui.app.run_state import ReplayFold, RunView
from tui.app.screens.run import RunScreen
from tui.app.widgets.event_log import LogLines
from tui.app.widgets.key_footer import KeyFooter
from tui.launch.workbench import Workbench

pytestmark = pytest.mark.timeout(300)


def full_fold(events: list[RunEvent], position: int) -> RunView:
    view = RunView()
    view.apply_all(events[:position])
    return view


def shown(view: RunView) -> RunView:
    """The view without what the screen has already taken to redraw (``changed_steps``)."""
    return replace(view, changed_steps=set())


def stored(run_id: str, events: list[RunEvent], tmp_path: Path) -> list[RunEvent]:
    """The events as the store stamps them (seq, times), as a stored run's screen reads them."""
    with RunStore(tmp_path / "runs.sqlite") as store:
        store_events(store, run_id, events)
        return store.events(run_id)


@pytest.mark.parametrize("every", [1, 7, 20])
def test_the_view_at_any_position_equals_the_fold_from_the_first_event(
    tmp_path: Path, every: int
) -> None:
    events = stored("r", research_events("r"), tmp_path)
    assert len(events) > 3 * every
    fold = ReplayFold(events, every=every)
    # late first (checkpoints are made on the way), then back, forward, and to both ends
    for position in (len(events), len(events) - 1, 3, every, every + 1, len(events) // 2, 0):
        assert fold.view_at(position) == full_fold(events, position), position


def test_folding_on_from_a_handed_out_view_leaves_the_checkpoints_alone(tmp_path: Path) -> None:
    events = stored("t", tie_break_events("t"), tmp_path) + stored(
        "u", research_events("u"), tmp_path
    )
    fold = ReplayFold(events, every=5)
    middle = len(events) // 2
    handed = fold.view_at(middle)
    handed.apply_all(events[middle:])  # what the screen does when the person steps forward
    for step in handed.steps.values():
        step.trail.append("scribbled")
    assert fold.view_at(middle) == full_fold(events, middle)
    assert fold.view_at(middle - 3) == full_fold(events, middle - 3)


async def test_stepping_back_on_the_run_screen_shows_the_full_fold(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        store_events(store, "run-done", research_events("run-done"))
        events = store.events("run-done")
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert isinstance(screen, RunScreen) and screen.position == len(events)
        for expected in (len(events) - 1, len(events) - 2):
            await press(pilot, "comma", lambda at=expected: screen.position == at)
            assert shown(screen.view) == shown(full_fold(events, expected))
        await press(pilot, "full_stop", lambda: screen.position == len(events) - 1)
        assert shown(screen.view) == shown(full_fold(events, len(events) - 1))


@pytest.mark.parametrize("near", [None, 1, 3])
def test_near_checkpoints_give_the_full_fold_however_the_cursor_moves(
    tmp_path: Path, near: int | None
) -> None:
    events = stored("r", research_events("r"), tmp_path)
    fold = ReplayFold(events, every=10, near=near)
    end = len(events)
    for position in (end, end - 1, end - 2, end - 9, end - 5, 14, 13, 25, 24, end - 1, 0, 1):
        assert fold.view_at(position) == full_fold(events, position), position


def drawn(app: WorkbenchApp) -> list[str]:
    """Every row of the screen as drawn from the widgets' own caches: text and style."""
    update = app.screen._compositor.render_full_update(simplify=True)
    return [
        "".join(f"{segment.text}\x1f{segment.style}\x1e" for strip in row for segment in strip)
        for row in update.strips
    ]


def log_follows_its_newest_line(screen: RunScreen) -> bool:
    """The log's scroll to its newest line, done after the next refresh, has been done."""
    return all(log.scroll_offset.y == log.max_scroll_y for log in screen.query(LogLines))


def footer_shown(screen: RunScreen) -> bool:
    """The screen is composed and its footer lists the keys that act now: the footer rebuilds
    itself after the screen's bindings change (a replay step can add or take away the round
    diff), emptying itself in between."""
    footers = screen.query(KeyFooter)
    if not footers:
        return False
    footer = footers.first()
    listed = [key.action for key in footer.query(FooterKey)]
    return bool(listed) and listed == [binding.action for binding in footer.shown()]


async def settled_drawing(pilot: Pilot[None], app: WorkbenchApp, screen: RunScreen) -> list[str]:
    """What the screen draws once its footer is current, its log has followed its newest line and
    nothing changes across one more pause (a footer rebuild may still be queued)."""
    previous: list[str] | None = None
    for _ in range(50):
        await until(pilot, partial(footer_shown, screen))
        await until(pilot, partial(log_follows_its_newest_line, screen))
        drawing = drawn(app)
        if drawing == previous:
            return drawing
        previous = drawing
        await pilot.pause()
    raise AssertionError("the screen never stopped changing")


async def test_a_stepped_screen_draws_what_a_fresh_screen_at_that_event_draws(
    workbench: Workbench,
) -> None:
    """Replay steps redraw only what changed; what they leave drawn must be what a screen opened
    at that event draws, in every panel (graph, providers counting down, rounds, log, status)."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(150, 46)) as pilot:
        await pilot.pause()
        for run_id in ("run-done", "run-mid"):
            screen = app.open_run(run_id)
            assert isinstance(screen, RunScreen)
            await until(pilot, partial(is_shown, app, screen))
            end = len(screen.events)
            # keys step one event; seeks jump (a timeline click), both ways
            walk: list[str | int] = ["comma", "comma", end // 2, "full_stop", end // 3, "comma"]
            walk += [end - 3, 3, "full_stop", end]
            stepped: list[tuple[int, list[str]]] = []
            for where in walk:
                if isinstance(where, str):
                    await press(pilot, where, partial(moved, screen, screen.position))
                else:
                    screen.seek(where)
                await pilot.pause()
                stepped.append((screen.position, await settled_drawing(pilot, app, screen)))
            for position, drawing in stepped:
                fresh = RunScreen(
                    workbench,
                    app.live_runs,
                    run_id=run_id,
                    stored_events=screen.events,
                    position=position,
                    stored_status=screen.stored_status,
                )
                app.push_screen(fresh)
                await until(pilot, partial(is_shown, app, fresh))
                assert drawing == await settled_drawing(pilot, app, fresh), (run_id, position)
                app.pop_screen()
                await until(pilot, partial(is_shown, app, screen))
            app.pop_screen()
            await pilot.pause()


def is_shown(app: WorkbenchApp, screen: RunScreen) -> bool:
    return app.screen is screen


def moved(screen: RunScreen, before: int) -> bool:
    return screen.position != before
