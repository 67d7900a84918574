"""Time travel from the screen: fork a stored run at a step, with its inputs or the outputs the
step was given edited, and watch the fork live.

The form holds one JSON document: the run's ``inputs`` and the ``outputs`` of the steps that
fed the fork's step, as the replay shows them. What the person changes becomes the fork's
edits (``workbench runs fork --input`` and ``--set``); the fork is checked by the engine's time
travel before the screen closes (tui/launch/fork.py), so a fork that cannot be made says why
here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from engine.protocol import ForkEdits
from engine.time_travel import ForkError
from tui.app.widgets.key_footer import KeyFooter
from tui.launch.fork import ForkPlan

ForkCheck = Callable[[ForkEdits], ForkPlan]
"""Checks a fork with these edits: its plan, or ForkError saying what to do."""


def fork_document(inputs: Mapping[str, Any], upstream: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(
        {"inputs": dict(inputs), "outputs": {step: dict(o) for step, o in upstream.items()}},
        indent=2,
        ensure_ascii=False,
        default=str,
    )


def edits_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> ForkEdits:
    """The fork's edits: each input whose value changed, each output field that changed.

    Raises ForkError when the document lost its shape (``inputs`` and ``outputs`` objects)."""
    if not isinstance(after.get("inputs"), dict) or not isinstance(after.get("outputs"), dict):
        raise ForkError('keep the two objects "inputs" and "outputs"; change values inside them')
    inputs = {
        name: value
        for name, value in after["inputs"].items()
        if before["inputs"].get(name, object()) != value
    }
    outputs: dict[str, dict[str, Any]] = {}
    for step, fields in after["outputs"].items():
        if not isinstance(fields, dict):
            raise ForkError(f"outputs.{step} must stay an object of fields")
        was = before["outputs"].get(step, {})
        changed = {k: v for k, v in fields.items() if was.get(k, object()) != v}
        if changed:
            outputs[step] = changed
    return ForkEdits(outputs=outputs, inputs=inputs)


class ForkScreen(ModalScreen[ForkPlan | None]):
    """The fork form; dismissed with the checked plan, or None."""

    CSS_PATH = "fork.tcss"
    HELP = """
## Fork (time travel)

A new run from this run as it was just before the step's pass began: the step
and everything it leads to run again; every other step keeps its result.
Change the run's **inputs** or the **outputs** of the steps that fed the step
(the JSON below), then **^S** forks and opens the new run live. Unchanged, the
fork re-runs the step as it was. The same as `workbench runs fork RUN --at
STEP@ITERATION --input … --set step.field=…`.
"""
    BINDINGS = [
        Binding("ctrl+s", "fork", "Fork", id="fork.fork", priority=True),
        Binding("escape", "cancel", "Cancel", id="fork.cancel"),
    ]
    AUTO_FOCUS = "#fork-edits"

    def __init__(
        self,
        run_id: str,
        at: str,
        inputs: Mapping[str, Any],
        upstream: Mapping[str, Mapping[str, Any]],
        check: ForkCheck,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.at = at
        self.document = fork_document(inputs, upstream)
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-box"):
            yield Static(
                Content.assemble(("fork ", "bold"), (f"{self.run_id} at {self.at}", "bold")),
                id="fork-title",
            )
            yield Static(
                f"{self.at} and every step after it run again; edit the inputs or the outputs "
                "that fed it, then ^S",
                id="fork-what",
            )
            yield TextArea(self.document, language="json", id="fork-edits", soft_wrap=True)
            yield Static("", id="fork-error")
            with Horizontal(id="fork-buttons"):
                yield Button("Fork (^S)", id="fork-go", variant="primary")
                yield Button("Cancel (Esc)", id="fork-cancel")
        yield KeyFooter()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "fork-go":
            self.action_fork()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_fork(self) -> None:
        text = self.query_one("#fork-edits", TextArea).text
        try:
            edited = json.loads(text)
        except json.JSONDecodeError as error:
            self._error(f"line {error.lineno}: {error.msg}; fix the JSON")
            return
        try:
            if not isinstance(edited, dict):
                raise ForkError('the edits must stay one JSON object with "inputs" and "outputs"')
            plan = self.check(edits_between(json.loads(self.document), edited))
        except ForkError as error:
            self._error(str(error))
            return
        self.dismiss(plan)

    def _error(self, message: str) -> None:
        self.query_one("#fork-error", Static).update(Content.styled(message, "$status-critical"))
