"""A new run's start is never a blank wait: until its first event the status line says so."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from textual.widgets import Static

from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus
from research.corpus import Corpus
from research.default_corpus import DEFAULT_COLLECTION, build_default_corpus, default_sources
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.launch.run_driver import EventInbox
from tui.launch.workbench import Workbench
from tui.launch.workspace import Workspace
from workflows import WORKFLOWS_DIR

pytestmark = pytest.mark.timeout(300)


async def test_the_status_line_counts_the_wait_for_the_first_event(tmp_path: Path) -> None:
    opened = threading.Event()
    now = [1_000.0]

    async def slow_start(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        while not opened.is_set():  # the corpus and the providers are still being opened
            await asyncio.sleep(0.01)
        return ExecutionResult(run_id="r", status=RunStatus.COMPLETED)

    app = WorkbenchApp(
        Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none", clock=lambda: now[0])
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.start_job(slow_start)
        assert isinstance(screen, RunScreen)

        def status() -> str:
            shown = screen.query("#run-status")
            return str(shown.first().render()) if screen.is_mounted and shown else ""

        await until(pilot, lambda: "starting" in status())
        assert "0s" in status() and "opening the run store" in status()
        now[0] += 7.0
        await until(pilot, lambda: "starting  7s" in status())
        opened.set()
        await until(pilot, lambda: not screen.live)
        assert "starting" not in status()


async def test_the_corpus_indexed_on_first_use_shows_a_bar_with_counts(tmp_path: Path) -> None:
    """A run that needs the corpus, in a workspace whose default collection is being built by
    another process: the starting line names what is indexed, with a bar and done/total."""
    workspace = Workspace(tmp_path)
    corpus = Corpus(workspace.corpus_db)
    total = len(default_sources())
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            with corpus.exclusive():  # the other process's build: the run waits for it
                screen = app.start_run(WORKFLOWS_DIR / "demo_tiebreak.yaml", {})

                def status() -> str:
                    shown = screen.query("#run-status")
                    if not screen.is_mounted or not shown:
                        return ""
                    static = shown.first(Static)
                    return "\n".join(
                        strip.text for strip in static.render_lines(static.region.reset_offset)
                    )

                await until(pilot, lambda: f"0/{total}" in status())
                assert f"indexing {DEFAULT_COLLECTION}" in status()
                assert "starting" in status() and "━" in status()
                # the other process finishes its build (a small one) and lets go of the lock
                build_default_corpus(corpus, stdlib=tmp_path / "no-stdlib")
            await until(pilot, lambda: screen.view.status != "PENDING")
            assert "indexing" not in status()
    finally:
        corpus.close()
