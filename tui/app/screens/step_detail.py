"""One step's detail: inputs, outputs, its model calls as messages, live model output while it
runs, the route decision and what the step cost."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from engine.live import LiveChannel, ModelOutput
from engine.states import StepStatus
from tui.app.model_calls import ModelCall
from tui.app.run_state import StepView
from tui.app.status_style import (
    STATUS_CLASSES,
    StatusStyler,
    on_theme_change,
    status_style,
    tone_style,
)
from tui.app.widgets.find_bar import FindBar, plain_text
from tui.app.widgets.key_footer import KeyFooter
from tui.app.widgets.prompts import conditions_table
from tui.present.headless import console_style
from tui.present.skip_words import skip_words
from tui.present.untrusted import for_display


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def route_table(step: StepView, style: StatusStyler = console_style) -> Table | Text:
    signal = step.route
    if signal is None:
        return Text("no route decision recorded", style="dim")
    table = conditions_table(signal.evaluated_conditions, style)
    if isinstance(table, Text):
        table = Table(box=None, expand=True, pad_edge=False, show_header=False)
        table.add_column("")
    table.caption = (
        f"{signal.decision} → {signal.next_step_id or 'end'} via {signal.route}"
        f" (confidence {signal.confidence:.2f}{', tie-breaker' if signal.tie_breaker_used else ''})"
        f": {signal.reason}"
    )
    if signal.skipped_targets:
        table.caption += f" · not routed: {', '.join(signal.skipped_targets)}"
    return table


class LiveText(Message):
    """Live model output for the step shown (posted from the run's thread)."""

    def __init__(self, output: ModelOutput) -> None:
        self.output = output
        super().__init__()


def call_heading(call: ModelCall) -> Text:
    text = Text(f"call {call.index + 1}", style="bold")
    text.append(
        f"  {call.provider or '–'}{f' · {call.model}' if call.model else ''}"
        f" · {call.input_tokens} in / {call.output_tokens} out tokens"
        f" · {call.latency_s:.2f}s · ${call.cost_usd:.4f}",
        style="dim",
    )
    return text


def message_text(role: str, content: str) -> Text:
    text = Text(f"{role}\n", style="bold")
    text.append(content)
    return text


class StepDetailScreen(ModalScreen[None]):
    COMPONENT_CLASSES = set(STATUS_CLASSES)
    CSS_PATH = "step_detail.tcss"
    HELP = """
## Step detail

What the step was given, what it produced, each model call it made (the messages
sent and the answer received, with tokens, latency, cost and provider), how the run
was routed after it (each condition evaluated in order, and the reason). While the
step runs, the model's output appears live under **Live model output**. An agent
step (or an advisory run's orchestrator) shows its trail.

**/** or **^F** searches (Enter: next match), **c** copies the step's outputs
(OSC 52), **i** copies the run id, **Escape** closes the search, then the detail.
"""
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="detail.close"),
        Binding("slash,ctrl+f", "find", "Search", id="detail.find"),
        Binding("c", "copy_outputs", "Copy outputs", id="detail.copy"),
        Binding("i", "copy_run_id", "Copy run id", id="detail.copy_run_id"),
    ]

    def __init__(
        self,
        step: StepView,
        *,
        run_id: str = "",
        calls: Sequence[ModelCall] = (),
        live: LiveChannel | None = None,
        upstream: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self.step = step
        self.upstream = dict(upstream or {})
        """The outputs of the steps that fed this one, as they were when it ran."""
        self.run_id = run_id
        self.calls = list(calls)
        self.live_channel = live
        self._unsubscribe: Callable[[], None] | None = None

    def compose(self) -> ComposeResult:
        s = self.step
        with VerticalScroll(id="detail-box"):
            title = Text(f"{s.id}", style="bold")
            title.append(f"  {s.uses}  {s.status.value}", style="dim")
            yield Static(title, id="detail-title")
            cost = sum(call.cost_usd for call in self.calls)
            latency = sum(call.latency_s for call in self.calls)
            facts = (
                f"iteration {s.iteration} · attempt {s.attempt} · {s.duration_s:.2f}s · "
                f"{s.llm_calls} calls · {s.tokens} tokens · model latency {latency:.2f}s · "
                f"cost ${cost:.4f} · provider {', '.join(s.providers) or '–'}"
            )
            yield Static(facts, id="detail-facts", classes="searchable")
            if s.error:
                yield Static(
                    Content.styled(f"error: {s.error}", "$status-critical bold"),
                    classes="searchable",
                )
            if s.skip_reason:
                yield Static(
                    Text(f"skipped: {skip_words(s.skip_reason)}", style="dim"), classes="searchable"
                )
            if s.held_by:
                yield Static(Content.styled(f"held by interrupt {s.held_by}", "$status-attention"))
            if self.live_channel is not None:
                yield Static("Live model output", classes="detail-heading", id="live-heading")
                yield Static(
                    Text("waiting for the model…", style="dim"),
                    id="detail-live",
                    classes="searchable",
                )
            yield Static("Inputs", classes="detail-heading")
            if s.inputs or not self.upstream:
                yield Static(_json(s.inputs), classes="detail-json searchable", markup=False)
            else:
                yield Static(
                    Text("none of its own: what the steps before it gave it is below", "dim")
                )
            yield Static("Outputs", classes="detail-heading")
            yield Static(
                _json(s.outputs),
                classes="detail-json searchable",
                id="detail-outputs",
                markup=False,
            )
            yield from self._calls()
            yield Static("Route decision", classes="detail-heading")
            yield Static(id="detail-route")
            for source, outputs in self.upstream.items():
                yield Static(f"What {source} gave it", classes="detail-heading")
                yield Static(_json(outputs), classes="detail-json searchable", markup=False)
            if s.trail:
                yield Static("Agent trail", classes="detail-heading")
                yield Static(Text("\n".join(s.trail)), id="detail-trail", classes="searchable")
        yield FindBar(self._searchable, id="detail-find")
        yield KeyFooter()

    def _calls(self) -> ComposeResult:
        if not self.calls:
            return
        yield Static("Model calls", classes="detail-heading")
        for call in self.calls:
            yield Static(call_heading(call), classes="detail-call")
            if not call.sent:
                yield Static(
                    Text("the messages sent were not kept for this run", style="dim"),
                    classes="detail-message",
                )
            for message in call.sent:
                yield Static(
                    message_text(message.role, message.content),
                    classes=f"detail-message -role-{message.role} searchable",
                )
            yield Static(
                message_text(f"answer from {call.provider or 'the model'}", call.answer),
                classes="detail-message -role-assistant searchable",
            )

    def _searchable(self) -> list[tuple[Widget, str]]:
        return [
            (widget, plain_text(widget)) for widget in self.query(".searchable").results(Static)
        ]

    def on_mount(self) -> None:
        on_theme_change(self, self._show_route)
        self._show_route()
        self.query_one("#detail-box").focus()
        if self.live_channel is not None:
            self._unsubscribe = self.live_channel.subscribe(self._on_live, self.run_id or None)
            if self.step.status is not StepStatus.RUNNING:
                self.query_one("#detail-live").display = False
                self.query_one("#live-heading").display = False

    def _show_route(self) -> None:
        route = route_table(self.step, partial(status_style, self))
        self.query_one("#detail-route", Static).update(route)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_live(self, output: ModelOutput) -> None:
        """On the run's thread: hand the step's own output to the UI thread."""
        if output.step_id == self.step.id:
            self.post_message(LiveText(output))

    def on_live_text(self, message: LiveText) -> None:
        output = for_display(message.output)
        text = Text(f"call {output.call_index + 1} · {output.provider or '–'}", style="bold")
        if output.restarted:
            text.append(
                "  (the attempt before failed; its text is void)", style=tone_style(self, "caution")
            )
        text.append("  done" if output.done else "  streaming…", style="dim")
        text.append("\n" + output.text)
        self.query_one("#live-heading").display = True
        live = self.query_one("#detail-live", Static)
        live.display = True
        live.update(text)

    def action_find(self) -> None:
        self.query_one(FindBar).open()

    async def action_close(self) -> None:
        bar = self.query_one(FindBar)
        if bar.is_open:
            bar.close()
            self.query_one("#detail-box").focus()
            return
        self.dismiss(None)

    def action_copy_outputs(self) -> None:
        self.app.copy_to_clipboard(_json(self.step.outputs))
        self.notify(f"outputs of {self.step.id} copied (OSC 52)")

    def action_copy_run_id(self) -> None:
        if self.run_id:
            self.app.copy_to_clipboard(self.run_id)
            self.notify(f"run id {self.run_id} copied (OSC 52)")
