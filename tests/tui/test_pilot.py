"""Pilot tests: replay, keyboard-only navigation, prompts answered from the app."""

from __future__ import annotations

import pytest

from engine.context import InterruptAnswer
from engine.events import InterruptRaised
from engine.states import StepStatus
from engine.store import RunStore
from tests.tui.pilot_wait import highlighted, press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import HomeScreen
from tui.app.screens.report import ReportScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.prompts import ApprovalPrompt, TieBreakPrompt, prompt_for
from tui.launch.workbench import Workbench

SIZE = (150, 46)


def cursor_row(table) -> str:
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


async def cursor_to(pilot, table, run_id: str) -> None:
    """Press Down until the table's cursor row is ``run_id`` (equal timestamps leave the order open),
    each press waiting for the cursor to move."""
    for _ in range(table.row_count):
        row = table.cursor_coordinate.row
        if cursor_row(table) == run_id:
            return
        await press(pilot, "down", lambda row=row: table.cursor_coordinate.row != row)
    raise AssertionError(f"{run_id} is not in the table")


async def test_replay_steps_backwards_and_forwards(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await pilot.pause()
        assert isinstance(screen, RunScreen)
        total = len(screen.events)
        assert screen.position == total and screen.view.status == "COMPLETED"
        timeline = screen.query_one("#timeline")
        timeline.focus()
        await until(pilot, lambda: app.focused is timeline)
        await press(pilot, "home", lambda: screen.position == 0)
        assert screen.view.steps == {}
        for position in (1, 2, 3):
            await press(pilot, "right", lambda p=position: screen.position == p)
        assert screen.view.steps["intake_scope"].status is StepStatus.RUNNING
        await press(pilot, "right", lambda: screen.position == 4)
        assert screen.view.steps["intake_scope"].status is StepStatus.WAITING_HUMAN
        assert screen.view.pending
        await press(pilot, "left", lambda: screen.position == 3)
        assert not screen.view.pending
        await press(pilot, "pagedown", lambda: screen.position > 4)
        moved = screen.position
        await press(pilot, "pagedown", lambda: screen.position > moved)
        assert screen.position == 23
        dag = screen.query_one("#dag")
        dag.focus()
        await until(pilot, lambda: app.focused is dag)
        await press(pilot, "comma", lambda: screen.position == 22)
        await press(pilot, "comma", lambda: screen.position == 21)
        await press(pilot, "full_stop", lambda: screen.position == 22)
        await press(pilot, "end", lambda: dag.scroll_y == dag.max_scroll_y)
        timeline.focus()
        await until(pilot, lambda: app.focused is timeline)
        await press(pilot, "end", lambda: screen.position == total)
        assert screen.view.rounds[3].gate_passed is True


async def test_keyboard_only_through_every_screen(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        home = app.screen
        runs = home.query_one("#runs")
        while app.focused is not runs:
            focused = app.focused
            await press(pilot, "tab", lambda focused=focused: app.focused is not focused)
        await cursor_to(pilot, runs, "run-done")
        await press(pilot, "enter", lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        dag = run_screen.query_one("#dag")
        await until(pilot, lambda: app.focused is dag)
        for selected in ("source_policy", "hypothesis_tree_tot_r1"):
            await press(pilot, "down", lambda s=selected: dag.selected == s)
        await press(pilot, "enter", lambda: isinstance(app.screen, StepDetailScreen))
        assert app.screen.step.id == "hypothesis_tree_tot_r1"
        await press(pilot, "escape", lambda: app.screen is run_screen)
        outline = run_screen.query_one("#outline")
        await press(pilot, "o", lambda: app.focused is outline)
        line = outline.cursor_line
        await press(pilot, "down", lambda: outline.cursor_line != line)
        await press(pilot, "enter", lambda: isinstance(app.screen, StepDetailScreen))
        await press(pilot, "escape", lambda: app.screen is run_screen)
        await press(pilot, "o", lambda: app.focused is dag)
        await press(pilot, "r", lambda: isinstance(app.screen, ReportScreen))
        await press(pilot, "escape", lambda: app.screen is run_screen)
        await press(pilot, "f1", lambda: bool(app.screen.query("HelpPanel")))
        await press(pilot, "f1", lambda: not app.screen.query("HelpPanel"))
        await press(pilot, "escape", lambda: app.screen is home)
        await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))
        await cursor_to(pilot, app.screen.query_one("#history"), "run-mid")
        await press(pilot, "enter", lambda: isinstance(app.screen, RunScreen))
        history = app.screen_stack[-2]
        await press(pilot, "escape", lambda: app.screen is history)
        await press(pilot, "escape", lambda: app.screen is home)


async def test_stored_approval_reappears_and_is_recorded(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        app.screen.action_later()
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert [e.step_id for e in screen.pending_prompts()] == ["intake_scope"]
        screen.resume_requested = 0
        app.resume_run = lambda s: setattr(s, "resume_requested", s.resume_requested + 1)  # type: ignore[method-assign]
        await pilot.press("p")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        await pilot.press("f3")
        await pilot.pause()
        assert screen.resume_requested == 1
    store = RunStore(workbench.runs_db)
    [record] = store.interrupts("run-ask")
    assert (
        record.status != "pending"
        and record.answer is not None
        and record.answer.action == "reject"
    )
    store.close()


async def test_tie_breaker_offers_graph_targets_only(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_run("run-tie")
        await pilot.pause()
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, TieBreakPrompt)
        assert prompt.valid == ["publish", "revise"] and prompt.others == ["gather_context"]
        targets = prompt.query_one("#prompt-targets")
        assert targets.highlighted == 1
        chosen = []
        prompt.dismiss = chosen.append  # type: ignore[method-assign]
        await press(pilot, "down", lambda: highlighted(targets) == "gather_context")
        await press(pilot, "enter", lambda: bool(chosen))
        assert chosen[0].action == "choose" and chosen[0].value == "gather_context"


async def test_edit_with_invalid_json_is_refused_with_one_line(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_run("run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        prompt = app.screen
        assert isinstance(prompt, ApprovalPrompt)
        views = prompt.query_one("#prompt-views")
        await press(pilot, "ctrl+t", lambda: views.current == "prompt-editor")
        prompt.query_one("#prompt-editor").text = '{"domain": '
        await pilot.press("f4")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalPrompt)
        assert "fix the JSON" in str(prompt.query_one("#prompt-error").render())


@pytest.mark.parametrize(
    ("kind", "focused_id", "keys", "answer"),
    [
        ("approval", "answer-approve", ["enter"], InterruptAnswer(action="approve")),
        (
            "input",
            "prompt-editor",
            ["y", "e", "s", "f4"],
            InterruptAnswer(action="answer", value="yes"),
        ),
        (
            "tie_breaker",
            "prompt-targets",
            ["enter"],
            InterruptAnswer(action="choose", value="ship"),
        ),
    ],
)
async def test_each_prompt_opens_on_the_control_that_answers_it(
    workbench: Workbench, kind: str, focused_id: str, keys: list[str], answer: InterruptAnswer
) -> None:
    event = InterruptRaised(
        run_id="r",
        seq=1,
        interrupt_id="i1",
        step_id="review",
        interrupt_kind=kind,
        prompt="Your call",
        payload={"outputs": {"ok": True}, "valid_targets": ["ship"]},
    )
    app = WorkbenchApp(workbench)
    answers: list[InterruptAnswer | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.push_screen(prompt_for(event, ["ship", "hold"]), answers.append)
        await until(pilot, lambda: app.screen.focused is not None)
        assert app.screen.focused is not None and app.screen.focused.id == focused_id
        await pilot.press(*keys)
        await until(pilot, lambda: bool(answers))
    assert answers == [answer]
