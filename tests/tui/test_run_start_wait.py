"""A new run's start is never a blank wait: until its first event the status line says so."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.run_driver import EventInbox
from tui.app.screens.run import RunScreen
from tui.launch.workbench import Workbench

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
