"""Warnings the domain packages log reach the person as toasts, from any thread, without floods."""

from __future__ import annotations

import logging
import threading

from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.log_toasts import ToastHandler
from tui.launch.workbench import Workbench


def warn_from_a_worker_thread(logger: str, message: str) -> None:
    worker = threading.Thread(target=logging.getLogger(logger).warning, args=(message,))
    worker.start()
    worker.join()


async def test_a_logged_warning_is_a_toast_once_per_window(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for _ in range(3):
            warn_from_a_worker_thread(
                "router.router", "provider openai is misconfigured (401): it is skipped"
            )
        logging.getLogger("engine.bus").error("event subscriber failed on a batch")
        await until(pilot, lambda: len(app._notifications) >= 2)
        await pilot.pause()
        assert sorted((n.title, n.severity, n.message) for n in app._notifications) == [
            ("engine", "error", "event subscriber failed on a batch"),
            ("router", "warning", "provider openai is misconfigured (401): it is skipped"),
        ]
    assert not any(isinstance(h, ToastHandler) for h in logging.getLogger().handlers)


def test_repeats_come_back_after_the_window() -> None:
    now = [0.0]

    class Recording:
        is_running = True
        shown: list[str] = []

        def notify(self, message: str, **_: object) -> None:
            self.shown.append(message)

    app = Recording()
    handler = ToastHandler(app, repeat_window_s=30.0, clock=lambda: now[0])  # type: ignore[arg-type]
    record = logging.LogRecord(
        "router.stats", logging.WARNING, __file__, 1, "stats not written", None, None
    )
    handler.emit(record)
    now[0] = 29.0
    handler.emit(record)
    now[0] = 31.0
    handler.emit(record)
    assert app.shown == ["stats not written", "stats not written"]
