"""Human-in-the-loop prompts: modal screens that answer one interrupt each.

A prompt is answered by dismissing its modal with an ``InterruptAnswer``;
dismissing with ``None`` (Escape) leaves it queued for later. The screen that
pushes a prompt owns the future the waiting step awaits (see run_driver.py).
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from engine.context import InterruptAnswer
from engine.events import InterruptRaised


def _payload_text(payload: dict[str, Any]) -> str:
    value = payload.get("outputs", payload)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


class _Prompt(ModalScreen[InterruptAnswer | None]):
    """What both prompts share: the event, the heading, the held steps, the queue count, Escape."""

    CSS_PATH = "prompts.tcss"

    def __init__(self, event: InterruptRaised, queued: int = 0) -> None:
        super().__init__()
        self.event = event
        self.queued = queued

    def _heading(self, title: str) -> ComposeResult:
        yield Label(Text(title, style="bold"), id="prompt-title")
        yield Static(self.event.prompt, id="prompt-text")

    def _held(self) -> ComposeResult:
        if held := _also_held(self.event):
            yield Static(held, id="prompt-held")

    def _queued(self) -> ComposeResult:
        if self.queued:
            yield Static(f"{self.queued} more prompt(s) queued", id="prompt-queued")

    def action_later(self) -> None:
        self.dismiss(None)


class ApprovalPrompt(_Prompt):
    """Approve, reject or edit a step's outputs (or answer an ``input`` prompt)."""

    HELP = """
## Approval

The step waits for you. **a** approves its outputs as they are, **r** rejects
them, **e** approves the text as you edited it (it must stay valid JSON).
**Escape** leaves the prompt queued.
"""
    BINDINGS = [
        Binding("ctrl+a,f2", "answer('approve')", "Approve", id="prompt.approve", priority=True),
        Binding("ctrl+r,f3", "answer('reject')", "Reject", id="prompt.reject", priority=True),
        Binding("ctrl+e,f4", "answer('edit')", "Save edit", id="prompt.edit", priority=True),
        Binding("escape", "later", "Later", id="prompt.later"),
    ]

    # Focus by selector, not in on_mount: Textual applies AUTO_FOCUS once the children
    # exist, and a prompt closed mid-compose (app exit) has none to query. An approval
    # focuses Approve; an ``input`` prompt (no Approve button) its text box.
    AUTO_FOCUS = "#answer-approve, .answer-text"

    def compose(self) -> ComposeResult:
        e = self.event
        with Vertical(id="prompt-box"):
            yield from self._heading(f"‖ {e.step_id} — {e.interrupt_kind}")
            yield from self._held()
            text = "" if e.interrupt_kind == "input" else _payload_text(e.payload)
            yield TextArea(
                text,
                language="json" if text else None,
                id="prompt-editor",
                soft_wrap=True,
                classes="answer-text" if e.interrupt_kind == "input" else "",
            )
            yield Static("", id="prompt-error")
            with Horizontal(id="prompt-buttons"):
                if e.interrupt_kind == "input":
                    yield Button("Answer (^E)", id="answer-edit", variant="primary")
                else:
                    yield Button("Approve (^A)", id="answer-approve", variant="success")
                    yield Button("Reject (^R)", id="answer-reject", variant="error")
                    yield Button("Save edit (^E)", id="answer-edit", variant="primary")
                yield Button("Later (Esc)", id="answer-later")
            yield from self._queued()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        action = (event.button.id or "").removeprefix("answer-")
        if action == "later":
            self.action_later()
        else:
            self.action_answer(action)

    def action_answer(self, action: str) -> None:
        if action != "edit" and self.event.interrupt_kind != "input":
            self.dismiss(InterruptAnswer(action=action))
            return
        text = self.query_one("#prompt-editor", TextArea).text
        if self.event.interrupt_kind == "input":
            self.dismiss(InterruptAnswer(action="answer", value=text))
            return
        try:
            edited = json.loads(text)
        except json.JSONDecodeError as exc:
            self.query_one("#prompt-error", Static).update(
                Text(
                    f"line {exc.lineno}: {exc.msg} — fix the JSON or press ^A to approve as is",
                    style="bold red",
                )
            )
            return
        self.dismiss(InterruptAnswer(action="edit", value=edited))


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


class TieBreakPrompt(_Prompt):
    """Pick the next step when the model was not confident enough to."""

    HELP = """
## Tie-breaker

The router could not decide with enough confidence. The model's suggestion is
shown with its confidence and reasoning. Pick any listed target — the valid
targets first, then the other edges the graph defines — with the arrows and
**Enter**. Nothing outside the graph can be chosen. **Escape** leaves it queued.
"""
    BINDINGS = [Binding("escape", "later", "Later", id="prompt.later")]
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
            conf = f"{float(confidence):.2f}" if isinstance(confidence, (int, float)) else "–"
            yield Static(
                Text.assemble(
                    ("model suggests ", "dim"),
                    (str(suggestion or "nothing"), "bold"),
                    (f"  confidence {conf}", "yellow"),
                ),
                id="prompt-suggestion",
            )
            reasoning = str(payload.get("reasoning") or "")
            if reasoning:
                yield Static(Text(reasoning, style="italic"), id="prompt-reasoning")
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
            yield OptionList(*options, id="prompt-targets")
            with Horizontal(id="prompt-buttons"):
                yield Button("Choose (Enter)", id="answer-choose", variant="primary")
                yield Button("Later (Esc)", id="answer-later")
            yield from self._queued()

    def on_mount(self) -> None:
        # Queried softly for the same reason as ApprovalPrompt's AUTO_FOCUS.
        for targets in self.query("#prompt-targets").results(OptionList):
            suggestion = self.event.payload.get("suggestion")
            targets.highlighted = (
                targets.get_option_index(suggestion)
                if suggestion in self.valid + self.others
                else 0
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "answer-later":
            self.action_later()
            return
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

    def show(self, events: list[InterruptRaised]) -> None:
        self.display = bool(events)
        if not events:
            self.update("")
            return
        text = Text(f"‖ {len(events)} waiting: ", style="bold yellow")
        text.append(
            ", ".join(f"{e.step_id} ({e.interrupt_kind.replace('_', '-')})" for e in events)
        )
        text.append("  — press p to answer", style="dim")
        self.update(text)


def _also_held(event: InterruptRaised) -> str:
    """The steps held besides the asking one (LangGraph holds its superstep; Kahn holds none)."""
    others = [step for step in event.held_steps if step != event.step_id]
    return f"also held while this waits: {', '.join(others)}" if others else ""
