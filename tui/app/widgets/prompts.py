"""Human-in-the-loop prompts: modal screens that answer one interrupt each.

A prompt is answered by dismissing its modal with an ``InterruptAnswer``;
dismissing with ``None`` (Escape) leaves it queued for later. The screen that
pushes a prompt owns the future the waiting step awaits (see run_driver.py).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, ContentSwitcher, Label, OptionList, Static, TextArea
from textual.widgets.button import ButtonVariant
from textual.widgets.option_list import Option

from engine.context import InterruptAnswer
from engine.events import InterruptRaised
from engine.states import EvaluatedCondition
from tui.app.plain_values import MISSING, label, plain_value
from tui.app.plan_draft import PlanDraft
from tui.app.status_style import (
    STATUS_CLASSES,
    StatusStyler,
    on_theme_change,
    status_style,
    tone_style,
)
from tui.app.widgets.key_footer import KeyFooter, KeyRanking
from tui.app.widgets.plan_editor import PlanEditor
from tui.present.headless import console_style

SHORT_HEIGHT = 40
"""Below this many rows a prompt fills the screen's height and scrolls its details."""


def _outputs(payload: dict[str, Any]) -> dict[str, Any]:
    """The outputs an approval is about (an older payload may be the outputs themselves)."""
    value = payload.get("outputs", payload)
    return dict(value) if isinstance(value, dict) else {}


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _button(label: str, button_id: str, variant: ButtonVariant = "default") -> Button:
    """A one-row button whose label says its key, so a narrow prompt never cuts the label."""
    return Button(label, id=button_id, variant=variant, compact=True)


class TargetList(OptionList):
    """The tie-breaker's targets: a click highlights one, Enter (or Choose) commits it."""

    BINDINGS = [Binding("enter", "select", "Choose", id="prompt.choose")]

    async def _on_click(self, event: events.Click) -> None:
        event.prevent_default()  # OptionList's own click handler would commit it
        clicked = event.style.meta.get("option")
        if clicked is not None and not self.get_option_at_index(clicked).disabled:
            self.highlighted = clicked


class _Prompt(KeyRanking, ModalScreen[InterruptAnswer | None]):
    """What both prompts share: the event, the heading, the held steps, the queue count, Escape;
    on a short terminal the box takes the screen's height and its details scroll, so the
    question and the buttons are always on screen."""

    CSS_PATH = "prompts.tcss"
    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, event: InterruptRaised, queued: int = 0) -> None:
        super().__init__()
        self.event = event
        self.queued = queued

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_HEIGHT, "-short")

    def on_screen_resume(self) -> None:
        self.set_class(self.app.size.height < SHORT_HEIGHT, "-short")

    def _heading(self, title: str) -> ComposeResult:
        yield Label(Text(title, style="bold"), id="prompt-title")
        yield Static(self.event.prompt, id="prompt-text", markup=False)

    def _held(self) -> ComposeResult:
        if held := _also_held(self.event):
            yield Static(held, id="prompt-held")

    def _queued(self) -> ComposeResult:
        if self.queued:
            yield Static(f"{self.queued} more prompt(s) queued", id="prompt-queued")

    def action_later(self) -> None:
        self.dismiss(None)


class ApprovalPrompt(_Prompt):
    """Approve, reject or edit a step's outputs (or answer an ``input`` prompt).

    Outputs holding a plan (a list of sub-questions) open as a numbered list edited one
    question at a time; the JSON of the whole outputs is one key (^T) away.
    """

    HELP = """
## Approval

The step waits for you. **^A** approves its outputs, **^R** rejects them,
**^E** approves the JSON as you edited it (it must stay valid JSON).
A research plan shows its sub-questions as a numbered list: **Enter** or **e**
edits the highlighted one, **n** adds one after it, **d** deletes it,
**shift+↑/↓** (or **[** / **]**) moves it; **^A** approves the plan as shown,
edits included. **^T** switches between the list and the JSON.
**Escape** cancels a line being edited, else leaves the prompt queued.
"""
    BINDINGS = [
        Binding("ctrl+a,f2", "answer('approve')", "Approve", id="prompt.approve", priority=True),
        Binding("ctrl+r,f3", "answer('reject')", "Reject", id="prompt.reject", priority=True),
        Binding("ctrl+e,f4", "answer('edit')", "Save edit", id="prompt.edit", priority=True),
        Binding("ctrl+t,f5", "toggle_json", "List/JSON", id="prompt.json", priority=True),
        Binding("escape", "later", "Later", id="prompt.later"),
    ]
    KEY_ORDER = ("prompt.approve", "prompt.reject", "prompt.edit", "prompt.json", "prompt.later")

    # Focus by selector, not in on_mount: Textual applies AUTO_FOCUS once the children
    # exist, and a prompt closed mid-compose (app exit) has none to query. A plan focuses
    # its list; another approval Approve; an ``input`` prompt (no Approve button) its text box.
    AUTO_FOCUS = "#plan-list, #answer-approve, .answer-text"

    def __init__(self, event: InterruptRaised, queued: int = 0) -> None:
        super().__init__(event, queued)
        self.outputs = _outputs(event.payload)
        self.draft = (
            None if event.interrupt_kind == "input" else PlanDraft.from_outputs(self.outputs)
        )

    def compose(self) -> ComposeResult:
        e = self.event
        with Vertical(id="prompt-box"):
            yield from self._heading(f"‖ {e.step_id} — {e.interrupt_kind}")
            with VerticalScroll(id="prompt-body", can_focus=False):
                yield from self._held()
                text = "" if e.interrupt_kind == "input" else _json_text(self.outputs)
                editor = TextArea(
                    text,
                    language="json" if text else None,
                    id="prompt-editor",
                    soft_wrap=True,
                    classes="answer-text" if e.interrupt_kind == "input" else "",
                )
                if self.draft is None:
                    yield editor
                else:
                    with ContentSwitcher(initial="plan-editor", id="prompt-views"):
                        yield PlanEditor(self.draft, id="plan-editor")
                        yield editor
            yield Static("", id="prompt-error")
            with Horizontal(id="prompt-buttons"):
                if e.interrupt_kind == "input":
                    yield _button("Answer ^E", "answer-edit", "primary")
                else:
                    yield _button("Approve ^A", "answer-approve", "success")
                    yield _button("Reject ^R", "answer-reject", "error")
                    yield _button("Save edit ^E", "answer-edit", "primary")
                if self.draft is not None:
                    yield _button("JSON ^T", "answer-json")
                yield _button("Later Esc", "answer-later")
            yield from self._queued()
        yield KeyFooter()

    def on_mount(self) -> None:
        self._show_buttons()

    def key_acts(self, action: str) -> bool:
        """In the plan's list, Approve sends the plan as shown: Save edit is the JSON's."""
        return not (action == "answer('edit')" and self.draft is not None and self._in_list)

    def _show_buttons(self) -> None:
        """In the list, Approve sends the plan as shown, so Save edit is only the JSON's."""
        if self.draft is not None:
            self.query_one("#answer-edit").display = not self._in_list

    @property
    def _in_list(self) -> bool:
        return self.draft is not None and (
            self.query_one("#prompt-views", ContentSwitcher).current == "plan-editor"
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        action = (event.button.id or "").removeprefix("answer-")
        if action == "later":
            self.action_later()
        elif action == "json":
            self.action_toggle_json()
        else:
            self.action_answer(action)

    def action_later(self) -> None:
        editor = self.query(PlanEditor).first() if self.draft is not None else None
        if editor is not None and editor.editing:
            editor.cancel()
        else:
            super().action_later()

    def action_toggle_json(self) -> None:
        """List → JSON shows the outputs with the list's edits; JSON → list takes the JSON's."""
        if self.draft is None:
            return
        views = self.query_one("#prompt-views", ContentSwitcher)
        editor = self.query_one(PlanEditor)
        text_area = self.query_one("#prompt-editor", TextArea)
        if self._in_list:
            editor.cancel()
            text_area.text = _json_text({**self.outputs, **editor.draft.answer()})
            views.current = "prompt-editor"
            self._show_buttons()
            self.refresh_bindings()
            text_area.focus()
            self._error("")
            return
        edited = self._parsed_json()
        if edited is None:
            return
        draft = PlanDraft.from_outputs(edited)
        if draft is None:
            self._error("the JSON has no sub_questions list to edit as a list; fix it, or ^E")
            return
        draft.original = editor.draft.original
        self.outputs = {**self.outputs, **edited}
        editor.replace(draft)
        views.current = "plan-editor"
        self._show_buttons()
        self.refresh_bindings()
        editor.plan_list.focus()
        self._error("")

    def action_answer(self, action: str) -> None:
        if self.event.interrupt_kind == "input":
            text = self.query_one("#prompt-editor", TextArea).text
            self.dismiss(InterruptAnswer(action="answer", value=text))
            return
        if action == "reject":
            self.dismiss(InterruptAnswer(action="reject"))
            return
        if self.draft is not None and self._in_list:
            if self.query_one(PlanEditor).editing:
                self._error("finish the question first: Enter keeps it, Escape drops it")
                return
            # the plan as shown: the list's edits (and any made in the JSON before) included
            draft = self.query_one(PlanEditor).draft
            edited = {**self.outputs, **draft.answer()}
            unchanged = not draft.changed and edited == _outputs(self.event.payload)
            self.dismiss(
                InterruptAnswer(action="approve")
                if unchanged
                else InterruptAnswer(action="edit", value=edited)
            )
            return
        if action == "approve":
            self.dismiss(InterruptAnswer(action="approve"))
            return
        parsed = self._parsed_json()
        if parsed is not None:
            self.dismiss(InterruptAnswer(action="edit", value=parsed))

    def _parsed_json(self) -> dict[str, Any] | None:
        """The JSON box's outputs, or None (with the reason shown) when they are not valid."""
        text = self.query_one("#prompt-editor", TextArea).text
        try:
            edited = json.loads(text)
        except json.JSONDecodeError as exc:
            self._error(f"line {exc.lineno}: {exc.msg} — fix the JSON or press ^A to approve as is")
            return None
        if not isinstance(edited, dict):
            self._error("the outputs must be a JSON object ({...}); fix it or press ^A")
            return None
        return edited

    def _error(self, message: str) -> None:
        self.query_one("#prompt-error", Static).update(
            Content.styled(message, "$status-critical bold")
        )


def tie_break_targets(
    event: InterruptRaised, graph_targets: list[str]
) -> tuple[list[str], list[str]]:
    """(valid targets, other graph targets): a choice can only ever name a graph target."""
    payload = event.payload
    valid = [str(t) for t in (payload.get("valid_targets") or event.options)]
    known = [str(t) for t in payload.get("graph_targets", [])] + list(graph_targets)
    others = []
    for target in known:
        if target not in valid and target not in others:
            others.append(target)
    return valid, others


def outputs_table(outputs: Any) -> Table | Text:
    """A step's outputs as key/value rows in plain words."""
    if not isinstance(outputs, dict) or not outputs:
        return Text("no outputs recorded", style="dim")
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value")
    for key, value in outputs.items():
        table.add_row(label(key), plain_value(value))
    return table


def conditions_table(conditions: Any, style: StatusStyler = console_style) -> Table | Text:
    """The routing conditions evaluated before the tie-breaker, in order, with their outcome
    (styled by ``style``: the screen's theme in the app)."""
    rows = [
        EvaluatedCondition.model_validate(c)
        for c in (conditions if isinstance(conditions, list) else [])
    ]
    if not rows:
        return Text("no routing condition was evaluated", style="dim")
    table = Table(box=None, expand=True, pad_edge=False)
    table.add_column("condition")
    table.add_column("target", no_wrap=True)
    table.add_column("matched", no_wrap=True)
    for condition in rows:
        table.add_row(
            condition.expr + (f"\n  {condition.error}" if condition.error else ""),
            condition.target or MISSING,
            Text("error", style=style("FAIL"))
            if condition.error
            else (
                Text("yes", style=style("PASS")) if condition.matched else Text("no", style="dim")
            ),
        )
    return table


class TieBreakPrompt(_Prompt):
    """Pick the next step when the model was not confident enough to."""

    HELP = """
## Tie-breaker

The router could not decide with enough confidence. The model's suggestion is
shown with its confidence and reasoning, why you are asked, the step's
outputs and the routing conditions evaluated before it. Pick any listed target — the valid
targets first, then the other edges the graph defines — with the arrows and
**Enter**. Nothing outside the graph can be chosen. **Escape** leaves it queued.
"""
    BINDINGS = [Binding("escape", "later", "Later", id="prompt.later")]
    KEY_ORDER = ("prompt.choose", "prompt.later")
    AUTO_FOCUS = "#prompt-targets"

    def __init__(self, event: InterruptRaised, graph_targets: list[str], queued: int = 0) -> None:
        super().__init__(event, queued)
        self.valid, self.others = tie_break_targets(event, graph_targets)

    def compose(self) -> ComposeResult:
        e = self.event
        payload = e.payload
        suggestion = payload.get("suggestion") or payload.get("target")
        confidence = payload.get("confidence")
        with Vertical(id="prompt-box"):
            yield from self._heading(f"→ {e.step_id} — where next?")
            with VerticalScroll(id="prompt-body", can_focus=False):
                conf = f"{float(confidence):.2f}" if isinstance(confidence, (int, float)) else "–"
                yield Static(
                    Content.assemble(
                        ("model suggests ", "dim"),
                        (str(suggestion or "nothing"), "bold"),
                        (f"  confidence {conf}", "$status-attention"),
                    ),
                    id="prompt-suggestion",
                )
                unsure = str(payload.get("unsure_because") or "")
                if unsure:
                    yield Static(
                        Content.styled(f"asking you because {unsure}", "$status-attention"),
                        id="prompt-why",
                    )
                reasoning = str(payload.get("reasoning") or "")
                if reasoning:
                    yield Static(Text(reasoning, style="italic"), id="prompt-reasoning")
                yield Static(Text("Step outputs", style="bold"), classes="prompt-heading")
                yield Static(outputs_table(payload.get("outputs")), id="prompt-outputs")
                yield Static(Text("Conditions evaluated", style="bold"), classes="prompt-heading")
                yield Static(id="prompt-conditions")
                yield from self._held()
            options: list[Option | None] = []
            for target in self.valid:
                mark = "  ← suggested" if target == suggestion else ""
                options.append(Option(f"{target}{mark}", id=target))
            if self.others:
                options.append(None)
                options.extend(
                    Option(f"{target}  (other graph edge)", id=target) for target in self.others
                )
            yield TargetList(*options, id="prompt-targets")
            with Horizontal(id="prompt-buttons"):
                yield _button("Choose Enter", "answer-choose", "primary")
                yield _button("Later Esc", "answer-later")
            yield from self._queued()
        yield KeyFooter()

    def on_mount(self) -> None:
        on_theme_change(self, self._show_conditions)
        self._show_conditions()
        # Queried softly for the same reason as ApprovalPrompt's AUTO_FOCUS.
        for targets in self.query("#prompt-targets").results(OptionList):
            suggestion = self.event.payload.get("suggestion")
            targets.highlighted = (
                targets.get_option_index(suggestion)
                if suggestion in self.valid + self.others
                else 0
            )

    def _show_conditions(self) -> None:
        conditions = self.event.payload.get("evaluated_conditions")
        for static in self.query("#prompt-conditions").results(Static):
            static.update(conditions_table(conditions, partial(status_style, self)))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "answer-later":
            self.action_later()
        else:
            self.action_choose()

    def action_choose(self) -> None:
        targets = self.query_one("#prompt-targets", OptionList)
        if targets.highlighted is not None:
            self._choose(targets.get_option_at_index(targets.highlighted).id)

    def _choose(self, target: str | None) -> None:
        if target in self.valid or target in self.others:
            self.dismiss(InterruptAnswer(action="choose", value=target))


def prompt_for(
    event: InterruptRaised, graph_targets: list[str], queued: int = 0
) -> ModalScreen[InterruptAnswer | None]:
    if event.interrupt_kind == "tie_breaker":
        return TieBreakPrompt(event, graph_targets, queued)
    return ApprovalPrompt(event, queued)


class PromptQueue(Static):
    """The prompts waiting for a person, oldest first."""

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[InterruptRaised] | None = None

    def show(self, events: list[InterruptRaised]) -> None:
        """Show ``events``; the same list again changes nothing (its line is one row high, so
        a new list repaints that row and no more)."""
        if events == self._shown:
            return
        self._shown = list(events)
        self.display = bool(events)
        if not events:
            self.update("", layout=False)
            return
        text = Text(f"‖ {len(events)} waiting: ", style=tone_style(self, "attention"))
        text.append(
            ", ".join(f"{e.step_id} ({e.interrupt_kind.replace('_', '-')})" for e in events)
        )
        text.append("  — press p to answer", style="dim")
        self.update(text, layout=False)


def _also_held(event: InterruptRaised) -> str:
    """The steps held besides the asking one (LangGraph holds its superstep; Kahn holds none)."""
    others = [step for step in event.held_steps if step != event.step_id]
    return f"also held while this waits: {', '.join(others)}" if others else ""
