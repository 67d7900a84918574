"""The headless printer: a run's events as live lines on a rich console.

It reads nothing but run events (DESIGN §6), so it prints a live run, a resumed
one, or a stored one replayed from the store, the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from engine.events import (
    Domain,
    InterruptRaised,
    InterruptResolved,
    Log,
    PolicyViolation,
    RouteDecided,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepSkipped,
    StepStarted,
)
from engine.store import StepResult

STATUS_STYLES = {
    "SUCCEEDED": "green",
    "COMPLETED": "bold green",
    "SKIPPED": "dim",
    "PENDING": "dim",
    "RUNNING": "cyan",
    "WAITING_HUMAN": "yellow",
    "WAITING": "bold yellow",
    "PARTIAL": "bold yellow",
    "FAILED": "bold red",
    "UPSTREAM_FAILED": "red",
    "CANCELLED": "magenta",
}


def summarize(value: Any, width: int = 80) -> str:
    """A one-line JSON summary of outputs, cut to ``width`` characters."""
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


def styled(status: str) -> str:
    return f"[{STATUS_STYLES.get(status, 'white')}]{status}[/]"


class HeadlessPrinter:
    """Call it with batches of events (a store subscriber); each becomes one line."""

    def __init__(self, console: Console | None = None, *, show_domain: bool = False) -> None:
        self.console = console or Console()
        self.show_domain = show_domain

    def __call__(self, events: Iterable[RunEvent]) -> None:
        for event in events:
            line = self.line(event)
            if line:
                self.console.print(line, highlight=False)

    def line(self, event: RunEvent) -> str | None:
        at = f"[dim]{event.mono:7.2f}s[/]"
        if isinstance(event, RunStarted):
            verb = "resumed" if event.resumed else "forked" if event.forked_from else "started"
            return (
                f"{at} [bold]▶ run {event.run_id}[/] {verb}: {escape(event.workflow)} on {event.engine}"
                f" [dim]({escape(event.engine_reason)})[/]"
            )
        if isinstance(event, StepStarted):
            extra = f" iteration {event.iteration}" if event.iteration else ""
            extra += f" attempt {event.attempt}" if event.attempt > 1 else ""
            return f"{at}   [cyan]●[/] {event.step_id} started{extra}"
        if isinstance(event, StepFinished):
            replayed = f", {event.replayed_calls} replayed" if event.replayed_calls else ""
            fallback = (
                f", [yellow]{event.fallback_calls} from the built-in fallback[/]"
                if event.fallback_calls
                else ""
            )
            calls = f" {event.llm_calls} calls{replayed}{fallback}," if event.llm_calls else ""
            return (
                f"{at}   [green]✔[/] {event.step_id} finished ({event.duration_s:.2f} s,{calls}"
                f" {escape(summarize(event.outputs, 60))})"
            )
        if isinstance(event, StepSkipped):
            return f"{at}   [dim]○ {event.step_id} skipped: {escape(event.reason)}[/]"
        if isinstance(event, StepFailed):
            kind = "upstream failed" if event.upstream else "failed"
            optional = " (optional)" if event.optional else ""
            return f"{at}   [red]✖ {event.step_id} {kind}{optional}: {escape(event.error)}[/]"
        if isinstance(event, StepRetrying):
            return f"{at}   [yellow]↻ {event.step_id} retry, attempt {event.attempt}: {escape(event.error)}[/]"
        if isinstance(event, RouteDecided):
            signal = event.signal
            where = signal.next_step_id or signal.decision
            human = " [yellow](needs a person)[/]" if signal.needs_human else ""
            return f"{at}   [blue]→[/] {event.step_id} routes to {where} [dim]({escape(signal.reason)})[/]{human}"
        if isinstance(event, InterruptRaised):
            options = f" [{' / '.join(event.options)}]" if event.options else ""
            return (
                f"{at}   [yellow]? {event.step_id} asks: {escape(event.prompt)}{escape(options)}[/]"
                f" [dim]{event.interrupt_id}[/]"
            )
        if isinstance(event, InterruptResolved):
            how = " automatically" if event.automatic else ""
            action = event.answer.get("action", "?")
            value = event.answer.get("value")
            shown = f" {escape(summarize(value, 40))}" if value not in (None, "") else ""
            return f"{at}   [yellow]✓ {event.step_id} answered{how}: {action}{shown}[/]"
        if isinstance(event, Log):
            return f"{at}   [dim]{event.level}: {escape(event.message)}[/]"
        if isinstance(event, PolicyViolation):
            return f"{at}   [red]policy {event.rule}: {escape(event.detail)}[/]"
        if isinstance(event, Domain) and self.show_domain:
            return f"{at}   [dim]· {event.name} {escape(summarize(event.payload, 60))}[/]"
        if isinstance(event, RunFinished):
            reason = f": {escape(event.reason)}" if event.reason else ""
            return f"{at} [bold]■ run {styled(event.status.value)}{reason}[/]"
        return None


def step_table(results: dict[str, StepResult], order: list[str]) -> Table:
    """The final table: one row per step with its state and what it produced or why not."""
    table = Table(title="steps", show_lines=False)
    table.add_column("step")
    table.add_column("status")
    table.add_column("iter", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("outputs / reason", overflow="fold")
    for step_id in order:
        result = results.get(step_id)
        if result is None:
            table.add_row(step_id, styled("PENDING"), "0", "0", "")
            continue
        detail = (
            summarize(result.outputs, 70) if result.status.value == "SUCCEEDED" else result.reason
        )
        table.add_row(
            step_id,
            styled(result.status.value),
            str(result.iteration),
            str(result.runs),
            escape(detail),
        )
    return table
