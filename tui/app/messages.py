"""What screens ask of the app, as typed messages: a screen posts one, it bubbles up to
:class:`tui.app.app.WorkbenchApp`, whose ``@on`` handler does it. Screens never reach into the
app's methods. A message about one screen is that screen's own (``RunScreen.ResumeRun``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.message import Message

from tui.launch.fork import ForkPlan


class StartRun(Message):
    """Start a new run of the workflow in ``path`` with ``inputs`` (converted already)."""

    def __init__(self, path: Path, inputs: dict[str, Any]) -> None:
        super().__init__()
        self.path = path
        self.inputs = inputs


class StartFork(Message):
    """Run the checked fork ``plan`` (tui/launch/fork.py) and follow it live."""

    def __init__(self, plan: ForkPlan) -> None:
        super().__init__()
        self.plan = plan


class OpenRun(Message):
    """Open the stored run ``run_id`` (replay, report, its prompts)."""

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
