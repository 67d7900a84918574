"""One step's detail: inputs, outputs, the route decision and what the step cost."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from tui.app.run_state import StepView


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def route_table(step: StepView) -> Table | Text:
    signal = step.route
    if signal is None:
        return Text("no route decision recorded", style="dim")
    table = Table(box=None, expand=True, pad_edge=False)
    table.add_column("condition")
    table.add_column("target", no_wrap=True)
    table.add_column("matched", no_wrap=True)
    for condition in signal.evaluated_conditions:
        matched = (
            Text("error", style="red")
            if condition.error
            else (Text("yes", style="green") if condition.matched else Text("no", style="dim"))
        )
        table.add_row(
            condition.expr + (f"\n  {condition.error}" if condition.error else ""),
            condition.target or "–",
            matched,
        )
    table.caption = (
        f"{signal.decision} → {signal.next_step_id or 'end'} via {signal.route}"
        f" (confidence {signal.confidence:.2f}{', tie-breaker' if signal.tie_breaker_used else ''})"
        f": {signal.reason}"
    )
    if signal.skipped_targets:
        table.caption += f" · not routed: {', '.join(signal.skipped_targets)}"
    return table


class StepDetailScreen(ModalScreen[None]):
    CSS_PATH = "step_detail.tcss"
    HELP = """
## Step detail

What the step was given, what it produced, how the run was routed after it
(each condition evaluated in order, and the reason), its tokens, latency and
the provider that answered. An agent step (or an advisory run's orchestrator)
shows its trail: each thought and action, each observation or refusal, each
decision with its reasoning. **Escape** closes.
"""
    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="detail.close")]

    def __init__(self, step: StepView) -> None:
        super().__init__()
        self.step = step

    def compose(self) -> ComposeResult:
        s = self.step
        with VerticalScroll(id="detail-box"):
            title = Text(f"{s.id}", style="bold")
            title.append(f"  {s.uses}  {s.status.value}", style="dim")
            yield Static(title, id="detail-title")
            facts = (
                f"iteration {s.iteration} · attempt {s.attempt} · {s.duration_s:.2f}s · "
                f"{s.llm_calls} calls · {s.tokens} tokens · provider {', '.join(s.providers) or '–'}"
            )
            yield Static(facts, id="detail-facts")
            if s.error:
                yield Static(Text(f"error: {s.error}", style="bold red"))
            if s.skip_reason:
                yield Static(Text(f"skipped: {s.skip_reason}", style="dim"))
            if s.held_by:
                yield Static(Text(f"held by interrupt {s.held_by}", style="yellow"))
            yield Static("Inputs", classes="detail-heading")
            yield Static(_json(s.inputs), classes="detail-json")
            yield Static("Outputs", classes="detail-heading")
            yield Static(_json(s.outputs), classes="detail-json")
            yield Static("Route decision", classes="detail-heading")
            yield Static(route_table(s), id="detail-route")
            if s.trail:
                yield Static("Agent trail", classes="detail-heading")
                yield Static(Text("\n".join(s.trail)), id="detail-trail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detail-box").focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
