"""Waiting on the real app in Pilot tests: bounded by rounds of the event loop, never by a timed
assertion. Keys go one at a time through :func:`press`, each waiting for its effect."""

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
    runs = [(worker.name, worker.state.name, worker.error) for worker in app.workers]
    raise AssertionError(f"condition never held; screens {app.screen_stack}, workers {runs}")


async def press(pilot: Any, key: str, effect: Callable[[], bool]) -> None:
    """Press one ``key`` and let the app run until its ``effect`` shows, before any other key."""
    await pilot.press(key)
    await until(pilot, effect)


def highlighted(options: Any) -> str | None:
    """The id of an OptionList's highlighted option."""
    index = options.highlighted
    return None if index is None else options.get_option_at_index(index).id
