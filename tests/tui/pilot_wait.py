"""Waiting on the real app in Pilot tests: bounded by rounds of the event loop, never by a timed assertion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def prompt_ready(app: Any, prompt: type) -> bool:
    """The prompt is on top and composed: it has focused its first control."""
    return isinstance(app.screen, prompt) and app.screen.focused is not None


async def until(
    pilot: Any, predicate: Callable[[], bool], rounds: int = 3000, pause: float = 0.01
) -> None:
    """Let the app run until ``predicate`` holds; fail naming the screens and the runs' states."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(pause)
    app = pilot.app
    runs = [
        (driver.running, driver.error, driver.result) for driver in getattr(app, "run_drivers", [])
    ]
    raise AssertionError(f"condition never held; screens {app.screen_stack}, runs {runs}")
