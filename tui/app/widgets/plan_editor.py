"""The plan approval's list editor: numbered sub-questions, changed one at a time from the keys.

The list (an ``OptionList``) owns the keys, so they act only while it has focus: typing
a question into the line editor below never deletes or moves one. The draft itself is
plain logic (tui/app/plan_draft.py).
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static

from tui.app.plan_draft import PlanDraft, PlanEditRefused

KEYS_HINT = (
    "↑↓ choose · Enter/e edit · n add · d delete · shift+↑↓ or [ ] move · "
    "Enter in the line saves it, Esc cancels"
)


class PlanList(OptionList):
    """The numbered sub-questions; its keys change the one highlighted."""

    BINDINGS = [
        Binding("e", "edit", "Edit", id="plan.edit"),
        Binding("n", "add", "Add", id="plan.add"),
        Binding("d,delete", "delete", "Delete", id="plan.delete"),
        Binding("shift+up,left_square_bracket", "move(-1)", "Move up", id="plan.move_up"),
        Binding("shift+down,right_square_bracket", "move(1)", "Move down", id="plan.move_down"),
    ]

    @property
    def editor(self) -> PlanEditor:
        parent = self.parent
        assert isinstance(parent, PlanEditor)
        return parent

    def action_edit(self) -> None:
        self.editor.begin("edit")

    def action_add(self) -> None:
        self.editor.begin("add")

    def action_delete(self) -> None:
        self.editor.delete()

    def action_move(self, delta: int) -> None:
        self.editor.move(delta)


class PlanEditor(Vertical):
    """A :class:`PlanDraft` as a numbered list with a one-line editor under it."""

    def __init__(self, draft: PlanDraft, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.draft = draft
        self.mode: Literal["edit", "add"] | None = None
        """What the line editor is doing, when it is open."""

    @property
    def editing(self) -> bool:
        return self.mode is not None

    def compose(self) -> ComposeResult:
        yield Static(Text(KEYS_HINT, style="dim"), id="plan-keys")
        yield PlanList(id="plan-list")
        yield Input(id="plan-input", placeholder="the sub-question")
        yield Static("", id="plan-error")

    def on_mount(self) -> None:
        self.query_one("#plan-input").display = False
        self.show(0)

    @property
    def plan_list(self) -> PlanList:
        return self.query_one(PlanList)

    @property
    def current(self) -> int:
        highlighted = self.plan_list.highlighted
        return 0 if highlighted is None else highlighted

    def replace(self, draft: PlanDraft) -> None:
        self.draft = draft
        self.show(0)

    def show(self, highlight: int) -> None:
        plan_list = self.plan_list
        plan_list.set_options(
            Text.assemble((f"{number:>2}. ", "bold"), text)
            for number, text in enumerate(self.draft.texts(), start=1)
        )
        plan_list.highlighted = max(0, min(highlight, len(self.draft.questions) - 1))

    def begin(self, mode: Literal["edit", "add"]) -> None:
        self.mode = mode
        line = self.query_one("#plan-input", Input)
        line.value = self.draft.texts()[self.current] if mode == "edit" else ""
        line.placeholder = (
            f"sub-question {self.current + 1}" if mode == "edit" else "a new sub-question"
        )
        line.display = True
        line.focus()
        self._say("")

    def cancel(self) -> None:
        self.mode = None
        line = self.query_one("#plan-input", Input)
        line.display = False
        self.plan_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.begin("edit")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        index = self.current
        try:
            if self.mode == "add":
                index = self.draft.add(index, event.value)
            else:
                self.draft.edit(index, event.value)
        except PlanEditRefused as refused:
            self._say(str(refused))
            return
        self.cancel()
        self.show(index)

    def delete(self) -> None:
        try:
            self.draft.delete(self.current)
        except PlanEditRefused as refused:
            self._say(str(refused))
            return
        self._say("")
        self.show(self.current)

    def move(self, delta: int) -> None:
        self.show(self.draft.move(self.current, delta))

    def _say(self, message: str) -> None:
        self.query_one("#plan-error", Static).update(
            Content.styled(message, "$status-critical bold")
        )
