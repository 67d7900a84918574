"""Warnings logged by the domain packages, shown to the person at the keyboard.

engine, router and research report what a person should know but that does not stop
a run (a provider skipped as misconfigured, a tie-breaker that failed, a stats flush
retried, a broken event subscriber) through :mod:`logging`. Inside the app stderr is
captured by Textual, so without this bridge those lines would never be seen. The
handler turns each record into a toast, from any thread without ever blocking it, and folds repeats of the same
message within ``repeat_window_s`` so a warning raised per call cannot flood the screen.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

SEVERITY = {logging.WARNING: "warning", logging.ERROR: "error", logging.CRITICAL: "error"}


class ToastHandler(logging.Handler):
    """A logging handler that notifies ``app``; attach with :meth:`install`, detach with :meth:`remove`."""

    def __init__(
        self,
        app: App[Any],
        *,
        repeat_window_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(level=logging.WARNING)
        self.app = app
        self.repeat_window_s = repeat_window_s
        self._clock = clock
        self._last_shown: dict[str, float] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app_thread: int | None = None

    def install(self) -> None:
        """Attach to the root logger; call on the app's event loop (``on_mount``)."""
        self._loop = asyncio.get_running_loop()
        self._app_thread = threading.get_ident()
        logging.getLogger().addHandler(self)

    def remove(self) -> None:
        logging.getLogger().removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if not self.app.is_running:
            return
        message = record.getMessage()
        now = self._clock()
        last = self._last_shown.get(message)
        if last is not None and now - last < self.repeat_window_s:
            return
        self._last_shown[message] = now
        severity = SEVERITY.get(
            record.levelno, "error" if record.levelno > logging.ERROR else "warning"
        )
        title = record.name.split(".")[0]

        def show() -> None:
            self.app.notify(message, title=title, severity=severity, timeout=10)  # type: ignore[arg-type]

        if threading.get_ident() == self._app_thread or self._loop is None:
            show()
            return
        # Never wait for the UI here (as call_from_thread would): the UI thread may itself be
        # waiting for the thread that logs, e.g. while it stops a run's worker.
        try:
            self._loop.call_soon_threadsafe(show)
        except RuntimeError:  # the app's loop is closed: nothing left to show it on
            pass
