"""The run header on the real app through Pilot: answers from the built-in fallback (how many,
which steps) and the run's spend beside what ``limits.max_cost_usd`` leaves."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from engine.events import Budget, RunEvent, StepFinished, StepStarted
from engine.store import RunStore
from tests.tools.sample_run import store_events, tie_break_events
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.launch.workbench import Workbench

pytestmark = pytest.mark.timeout(120)
SIZE = (220, 40)


def budget(run_id: str, cost_usd: float, max_cost_usd: float | None) -> Budget:
    return Budget(
        run_id=run_id,
        step_runs=3,
        llm_calls=5,
        tokens=1200,
        max_step_runs=50,
        max_llm_calls=300,
        token_budget=500000,
        cost_usd=cost_usd,
        max_cost_usd=max_cost_usd,
    )


def finished(run_id: str, step_id: str, calls: int, fallback: int, iteration: int = 0) -> list:
    return [
        StepStarted(run_id=run_id, step_id=step_id, iteration=iteration),
        StepFinished(
            run_id=run_id,
            step_id=step_id,
            iteration=iteration,
            llm_calls=calls,
            fallback_calls=fallback,
        ),
    ]


def store(workspace: Path, run_id: str, extra: list[RunEvent]) -> None:
    runs = RunStore(workspace / "runs.sqlite")
    try:
        store_events(runs, run_id, tie_break_events(run_id)[:1] + extra)
    finally:
        runs.close()


async def header_of(workbench: Workbench, run_id: str) -> str:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run(run_id)
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: screen.is_mounted and bool(screen.query("#run-status")))
        return str(screen.query_one("#run-status", Static).render())


async def test_the_header_names_the_fallback_answers_and_their_steps(
    workspace: Path, workbench: Workbench
) -> None:
    events = [
        *finished("run-fb", "draft", calls=2, fallback=0),
        *finished("run-fb", "review", calls=3, fallback=1),  # first attempt, then re-run
        *finished("run-fb", "review", calls=2, fallback=2),
        *finished("run-fb", "publish", calls=1, fallback=1),
    ]
    store(workspace, "run-fb", events)

    header = await header_of(workbench, "run-fb")

    assert "3 of 5 model answers came from the built-in fallback (steps: review, publish)" in header


async def test_a_run_answered_by_its_providers_says_nothing_of_a_fallback(
    workspace: Path, workbench: Workbench
) -> None:
    store(workspace, "run-ok", finished("run-ok", "draft", calls=2, fallback=0))

    header = await header_of(workbench, "run-ok")

    assert "fallback" not in header


@pytest.mark.parametrize(
    ("cost", "limit", "shown"),
    [
        (0.0123, 1.0, "$0.0123 of $1.00 spent, $0.9877 left"),
        (0.25, 0.25, "$0.2500 of $0.25 spent, $0.0000 left"),
        (0.0123, None, "$0.0123 spent"),
    ],
)
async def test_the_header_shows_spend_and_budget_left(
    cost: float, limit: float | None, shown: str, workspace: Path, workbench: Workbench
) -> None:
    store(workspace, "run-cost", [budget("run-cost", cost, limit)])

    header = await header_of(workbench, "run-cost")

    assert "calls 5/300 · tokens 1200/500000 · " + shown in header


async def test_no_spend_and_no_limit_adds_nothing(workspace: Path, workbench: Workbench) -> None:
    store(workspace, "run-free", [budget("run-free", 0.0, None)])

    header = await header_of(workbench, "run-free")

    assert "tokens 1200/500000 · run-free · kahn" in header and "spent" not in header
