"""`python -m tests.tools.screenshots screenshots` (``make screenshots``): the README's SVGs.

Each screenshot opens the real app on scripted runs written through a real run
store (tests/tools/sample_run.py) in a temporary workspace, so the pictures are the
same on every machine. The store stamps the runs on a :class:`StoryClock` and the app
reads "now" from a fixed instant after them, so two runs write identical files.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from engine.states import RunStatus
from engine.store import RunStore
from tests.tools.sample_run import (
    SAMPLE_CALL_STEP,
    journal_sample_call,
    research_events,
    store_events,
    tie_break_events,
)
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.screens.provider_detail import ProviderDetailScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.providers_panel import ProvidersPanel
from tui.echo import echo
from tui.launch.workbench import Workbench
from tui.launch.workspace import Workspace

SIZE = (150, 46)
REPORT = (
    "# How asyncio schedules tasks\n\nThe event loop keeps a **ready queue** of callbacks; a task's step "
    "runs until its coroutine awaits a pending future [S1].\n\n## Findings\n\n- `call_soon` queues the "
    "next step [S1]\n- a finished future schedules its callbacks [S2]\n"
)
QUALITY = (
    "confidence_level: full\nbest_ci: 0.85\nselected_round: 3\nrounds_completed: 3\nfailing_metrics: []\n"
    "stop_reason: gate passed at R3\n"
)

Scene = Callable[[WorkbenchApp], Awaitable[None]]

STORY_START = 1714555800.0
"""2024-05-01 09:30:00 UTC, when the first sample run starts (its id says so)."""
NOW = STORY_START + 3 * 3600
"""The instant the app is looked at: ages and countdowns count from here."""


class StoryClock:
    """A clock that moves ``step_s`` forward on every reading, from ``start``: stored times
    that differ from each other like real ones, the same on every run."""

    def __init__(self, start: float, step_s: float) -> None:
        self._now = start
        self._step_s = step_s

    def __call__(self) -> float:
        self._now += self._step_s
        return self._now


def sample_workspace(root: Path) -> Workbench:
    store = RunStore(
        Workspace(root).runs_db,
        clock=StoryClock(STORY_START, 0.7),
        monotonic=StoryClock(0.0, 0.7),
    )
    store_events(store, "20240501-093000-a1b2c3", research_events("20240501-093000-a1b2c3"))
    journal_sample_call(store, "20240501-093000-a1b2c3")
    store_events(
        store,
        "20240501-101500-d4e5f6",
        research_events("20240501-101500-d4e5f6", upto_round=2, finished=False),
        status=RunStatus.RUNNING,
    )
    store_events(
        store,
        "20240501-110000-0a1b2c",
        research_events("20240501-110000-0a1b2c", approval_pending=True),
        status=RunStatus.WAITING,
    )
    store_events(
        store,
        "20240501-113000-3d4e5f",
        tie_break_events("20240501-113000-3d4e5f"),
        status=RunStatus.WAITING,
    )
    store.close()
    files = Workspace(root).run_files("20240501-093000-a1b2c3")
    files.path.mkdir(parents=True)
    files.report.write_text(REPORT, encoding="utf-8")
    files.quality.write_text(QUALITY, encoding="utf-8")
    return Workbench(workspace=root, clock=lambda: NOW)


WAITS = 600
"""Checks (every 50 ms) for what a scene waits for before giving up."""


async def until(ready: Callable[[], bool], what: str) -> None:
    """Return once ``ready()`` holds: a scene waits for what it needs to be on screen, never for
    a fixed time (which a loaded machine outlasts, so the picture would differ between runs)."""
    for _ in range(WAITS):
        if ready():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{what} never happened")


def drawn(app: WorkbenchApp, screen: Screen[Any]) -> bool:
    """``screen`` is the one shown, its own start (mount, first focus) done and its footer filled
    with its keys — which Textual does after a later refresh, long after the rest is drawn."""
    return (
        app.screen is screen
        and screen.is_mounted
        and all(footer.children for footer in screen.query(Footer))
    )


async def shown_run(app: WorkbenchApp, run_id: str, prompt: bool = False) -> RunScreen:
    """The run screen of ``run_id``, drawn — and, for a run waiting for a person (``prompt``), the
    prompt it opens over itself once its events are read. Waiting for "the screen or a prompt"
    let a loaded machine take the picture before the prompt came, so two runs differed."""
    screen = app.open_run(run_id)
    assert isinstance(screen, RunScreen), f"{run_id} is in the sample workspace"

    def shown() -> bool:
        top, below = app.screen_stack[-1], app.screen_stack[-2]
        prompt_over_it = isinstance(top, ModalScreen) and below is screen
        expected = prompt_over_it if prompt else top is screen
        return screen.is_mounted and expected and drawn(app, top)

    await until(shown, f"run {run_id} on screen")
    return screen


def open_run(run_id: str, then: str = "", prompt: bool = False) -> Scene:
    async def scene(app: WorkbenchApp) -> None:
        screen = await shown_run(app, run_id, prompt)
        if then:
            await app.run_action(then, screen)
            await until(
                lambda: app.screen is not screen and drawn(app, app.screen), f"{then} on screen"
            )

    return scene


async def home(app: WorkbenchApp) -> None:
    """Home once its worker has listed the workflows and the first one's form is built."""
    await until(
        lambda: isinstance(app.screen, HomeScreen) and app.screen.ready, "Home listing workflows"
    )


def provider_detail(run_id: str, provider: str) -> Scene:
    """``provider``'s detail over the run screen, chosen in the providers panel as a person
    would: the panel focused (after the screen's own focus on the graph), the row chosen, Enter."""

    async def scene(app: WorkbenchApp) -> None:
        screen = await shown_run(app, run_id)
        panel = screen.query_one(ProvidersPanel)
        panel.focus()
        await until(lambda: app.focused is panel, "the providers panel focused")
        panel.selected = provider
        panel.action_open()
        await until(
            lambda: isinstance(app.screen, ProviderDetailScreen) and drawn(app, app.screen),
            f"{provider}'s detail on screen",
        )

    return scene


def step_detail(run_id: str, step_id: str) -> Scene:
    """The detail of one step: the step chosen in the graph, Enter, as a person would."""

    async def scene(app: WorkbenchApp) -> None:
        screen = await shown_run(app, run_id)
        graph = screen.query_one(DagView)
        graph.select(step_id)
        graph.action_open()
        await until(
            lambda: isinstance(app.screen, StepDetailScreen) and drawn(app, app.screen),
            f"{step_id}'s detail on screen",
        )

    return scene


SCENES: dict[str, tuple[Scene, tuple[int, int]]] = {
    "home": (home, SIZE),
    "run": (open_run("20240501-093000-a1b2c3"), SIZE),
    "providers": (open_run("20240501-101500-d4e5f6"), SIZE),
    "approval": (open_run("20240501-110000-0a1b2c", prompt=True), SIZE),
    "tie_breaker": (open_run("20240501-113000-3d4e5f", prompt=True), SIZE),
    "report": (open_run("20240501-093000-a1b2c3", "report"), SIZE),
    "round_diff": (open_run("20240501-093000-a1b2c3", "round_diff"), SIZE),
    "outline": (open_run("20240501-101500-d4e5f6"), (72, 40)),
    "small_terminal": (open_run("20240501-093000-a1b2c3"), (80, 24)),
    "provider_detail": (provider_detail("20240501-101500-d4e5f6", "openai"), SIZE),
    "step_detail": (step_detail("20240501-093000-a1b2c3", SAMPLE_CALL_STEP), SIZE),
}


SETTLE_ROUNDS = 200
"""Looks (every 50 ms) for two equal frames in a row before taking the last one anyway."""


async def settled_screenshot(app: WorkbenchApp, pilot: Pilot[None], title: str) -> str:
    """The screen once it has stopped changing: workers, layout and the footer done — a fixed
    wait would catch a half-drawn screen on a loaded machine, and differ between runs."""
    last = app.export_screenshot(title=title)
    for _ in range(SETTLE_ROUNDS):
        await pilot.pause(0.05)
        shot = app.export_screenshot(title=title)
        if shot == last:
            return shot
        last = shot
    return last


async def take(name: str, scene: Scene, size: tuple[int, int], folder: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        app = WorkbenchApp(sample_workspace(Path(tmp)))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await scene(app)
            title = f"Research Workbench — {name.replace('_', ' ')}"
            path = folder / f"{name}.svg"
            path.write_text(await settled_screenshot(app, pilot, title), encoding="utf-8")
            return path


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    for name, (scene, size) in SCENES.items():
        echo(str(asyncio.run(take(name, scene, size, folder))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
