"""Issue 14's fixes on the real app through Pilot: words not Python values, the log filter,
the history key, the rounds panel only where there are rounds, the question in recent runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import DataTable

from tests.tui.pilot_wait import press, until
from tui.app.app import WorkbenchApp
from tui.app.run_state import LogLine
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import RUN_COLUMNS, HomeScreen
from tui.app.screens.report import quality_table
from tui.app.screens.run import RunScreen
from tui.app.widgets.event_log import format_line, matches
from tui.launch.workbench import Workbench

pytestmark = pytest.mark.timeout(120)
SIZE = (150, 46)
QUESTION = "How do CPython's asyncio tasks get scheduled?"


def composed(screen: RunScreen) -> bool:
    """The run screen has composed its panels and placed them once."""
    return bool(screen.query("#log-filter")) and screen.is_mounted


def rendered(renderable: object, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_quality_metadata_reads_as_words_never_python_values() -> None:
    quality = {
        "confidence_level": "moderate",
        "best_ci_achieved": 0.8419,
        "failing_metrics": {"verification": 0.54},
        "domain": None,
        "recency_window_days": None,
        "vetoed_rounds": [],
        "delivered": True,
        "rounds": [
            {"round": 1, "kind": "full", "ci": 0.841923, "ci_change": None, "gate_passed": False},
            {"round": 2, "kind": "remediate", "ci": 0.9, "movable": ["verification"]},
        ],
    }
    text = rendered(quality_table(quality))
    for raw in ("{", "}", "'", "None", "True", "False", "[]"):
        assert raw not in text, f"{raw!r} shown in\n{text}"
    assert "round 1 · kind full · ci 0.842 · gate passed no" in text
    assert "round 2 · kind remediate · ci 0.900 · movable verification" in text
    assert re.search(r"failing metrics +verification 0\.540", text)
    assert re.search(r"delivered +yes", text) and re.search(r"domain +–", text)


def test_a_plain_filter_word_is_an_event_kind_or_a_whole_word() -> None:
    tripped = LogLine(7, "breaker_state", "warning", "openai CLOSED → OPEN (HTTP 503)")
    answered = LogLine(8, "llm_call", "info", "openai answered in 1.2s")
    failed = LogLine(9, "step_failed", "error", "review: timeout")
    assert matches(tripped, "OPEN") and not matches(answered, "OPEN")
    assert matches(answered, "openai") and matches(tripped, "openai")
    assert matches(tripped, "breaker") and not matches(answered, "breaker")
    assert matches(failed, "failed") and matches(failed, "step_failed")
    assert not matches(answered, "failed")
    assert matches(failed, "kind:step_ level:error") and not matches(failed, "kind:llm")


def test_every_log_line_starts_with_its_time() -> None:
    line = LogLine(3, "step_started", "info", "draft started", "draft", ts=1_700_000_000.0)
    assert format_line(line).plain.startswith("22:13:20 ")  # the TUI tests run in UTC


async def test_ctrl_y_opens_history_and_recent_runs_show_the_question(
    workbench: Workbench,
) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count > 0)
        assert table.get_row("run-done")[RUN_COLUMNS.index("question")] == QUESTION
        await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))


async def test_a_run_without_rounds_has_no_rounds_panel(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-tie")
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: composed(screen))
        assert not screen.view.rounds
        assert screen.query_one("#providers").display and not screen.query_one("#rounds").display


async def test_rounds_panel_appears_with_the_first_round(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: composed(screen))
        rounds = screen.query_one("#rounds")
        assert rounds.display
        timeline = screen.query_one("#timeline")
        timeline.focus()
        await until(pilot, lambda: app.focused is timeline)
        await press(pilot, "home", lambda: screen.position == 0)
        assert not rounds.display
        await press(pilot, "end", lambda: screen.position == len(screen.events))
        assert rounds.display
        await press(pilot, "2", lambda: not rounds.display)
        await press(pilot, "2", lambda: rounds.display)


async def test_slash_jumps_to_the_log_filter_even_when_the_log_was_hidden(
    workbench: Workbench,
) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await until(pilot, lambda: app.screen is screen)
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: composed(screen))
        log = screen.query_one("#log")
        await press(pilot, "3", lambda: not log.display)
        await press(pilot, "slash", lambda: app.focused is screen.query_one("#log-filter"))
        assert log.display


async def test_at_80x24_one_panel_at_a_time_is_chosen_with_1_2_3(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: composed(screen))
        providers, rounds, log = (screen.query_one(f"#{p}") for p in ("providers", "rounds", "log"))
        assert log.display and not providers.display and not rounds.display
        await press(pilot, "1", lambda: providers.display)
        assert not log.display and not rounds.display
        assert providers.region.height >= 5 and screen.query_one("#graph").region.height >= 5
        await press(pilot, "2", lambda: rounds.display)
        assert not providers.display and not log.display
        await press(pilot, "3", lambda: log.display)
        assert log.region.height >= 5


def test_runs_list_json_is_one_array_scripts_can_read(workspace: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--workspace", str(workspace), "runs", "list", "--json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert {run["run_id"] for run in runs} == {"run-done", "run-mid", "run-ask", "run-tie"}
    assert {run["status"] for run in runs} >= {"COMPLETED", "WAITING"}
