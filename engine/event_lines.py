"""One description of each run event, shared by every surface that shows events.

The headless printer, the app's event log and timeline, and the chaos demo all
show the same words for an event; each styles an :class:`EventLine` its own way
(rich markup on a console, theme classes in the app: tui/present/) from its ``level``
and ``status``. An :class:`EventLine` is plain data: no markup, no style. Domain events
belong to the package that emits them (DESIGN §6): it describes them through a
:data:`DomainDescriber` handed in by the application, so the engine never imports it.
A provider's breaker state is the router's to word: the application describes
``provider_state`` events (tui/present/event_lines.py); here they read as their kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.events import (
    Budget,
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
from engine.states import StepStatus

Level = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True)
class EventLine:
    """What an event says, before any surface styles it."""

    text: str
    """The line's words: plain text, no markup."""
    level: Level = "info"
    status: str | None = None
    """The step, run or breaker state the event reports (``SUCCEEDED``, ``COMPLETED``,
    ``OPEN``…), for the surface's status style; None when it reports none."""
    outputs: str = ""
    """A one-line summary of what a finished step produced, for surfaces with no
    step detail to open; empty for other events."""


DomainDescriber = Callable[[Domain], EventLine | None]
"""Describes the domain events its package owns; None for the ones it does not know."""


_SUMMARY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str).encode
"""``json.dumps`` with these options, its encoder made once instead of at every call (a
summary is made for every finished step's line)."""


_EMPTY_SUMMARY: dict[type, str] = {dict: "{}", list: "[]"}
"""The summary of an empty dict and list (most zero-work steps' outputs), without the encoder."""


def summarize(value: Any, width: int = 80) -> str:
    """A one-line JSON summary of ``value``, cut to ``width`` characters."""
    if not value and type(value) in _EMPTY_SUMMARY:
        return _EMPTY_SUMMARY[type(value)]
    text = _SUMMARY_JSON(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def counted(count: int, noun: str) -> str:
    """``1 call``, ``3 calls``."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def describe(event: RunEvent, domain: DomainDescriber | None = None) -> EventLine:
    """The one line every surface shows for ``event``."""
    described = _DESCRIBERS.get(type(event))
    if described is not None:
        return described(event)
    if isinstance(event, Domain):
        line = domain(event) if domain is not None else None
        return line or EventLine(f"{event.name} {summarize(event.payload, 100)}")
    return EventLine(event.kind)


def _run_started(event: RunStarted) -> EventLine:
    how = (
        "resumed"
        if event.resumed
        else f"forked from {event.forked_from}"
        if event.forked_from
        else "started"
    )
    return EventLine(
        f"run {event.run_id} {how}: {event.workflow} on {event.engine} ({event.engine_reason})",
        status="RUNNING",
    )


_RUNNING = StepStatus.RUNNING.value
_SUCCEEDED = StepStatus.SUCCEEDED.value
"""The statuses of every step's two lines, read once (an enum's ``value`` is a property)."""


def _step_started(event: StepStarted) -> EventLine:
    counts = [f"iteration {event.iteration}"] if event.iteration else []
    if event.attempt > 1:
        counts.append(f"attempt {event.attempt}")
    return EventLine(
        f"{event.step_id} started" + (f" ({', '.join(counts)})" if counts else ""),
        status=_RUNNING,
    )


def _step_finished(event: StepFinished) -> EventLine:
    parts = [f"{event.duration_s:.2f}s"]
    if event.llm_calls:
        parts.append(counted(event.llm_calls, "call"))
    if event.replayed_calls:
        parts.append(f"{event.replayed_calls} replayed")
    if event.fallback_calls:
        parts.append(f"{event.fallback_calls} from the built-in fallback")
    parts.append(f"{event.tokens} tokens")
    via = f" via {', '.join(event.providers)}" if event.providers else ""
    return EventLine(
        f"{event.step_id} succeeded in {', '.join(parts)}{via}",
        level="warning" if event.fallback_calls else "info",
        status=_SUCCEEDED,
        outputs=summarize(event.outputs, 60),
    )


def _step_skipped(event: StepSkipped) -> EventLine:
    return EventLine(
        f"{event.step_id} skipped: {event.reason}",
        status=StepStatus.SKIPPED.value,
    )


def _step_failed(event: StepFailed) -> EventLine:
    what = "upstream failed" if event.upstream else "failed"
    optional = " (optional)" if event.optional else ""
    status = StepStatus.UPSTREAM_FAILED if event.upstream else StepStatus.FAILED
    return EventLine(
        f"{event.step_id} {what}{optional}: {event.error}",
        level="error",
        status=status.value,
    )


def _step_retrying(event: StepRetrying) -> EventLine:
    return EventLine(
        f"{event.step_id} retrying (attempt {event.attempt}) after: {event.error}",
        level="warning",
        status=StepStatus.RUNNING.value,
    )


def _route_decided(event: RouteDecided) -> EventLine:
    signal = event.signal
    human = " (needs a person)" if signal.needs_human else ""
    return EventLine(
        f"{event.step_id} routes to {signal.next_step_id or signal.decision}"
        f" [{signal.route}] {signal.reason}{human}",
        level="warning" if signal.needs_human else "info",
    )


def _interrupt_raised(event: InterruptRaised) -> EventLine:
    options = f" [{' / '.join(event.options)}]" if event.options else ""
    return EventLine(
        f"{event.step_id} asks: {event.prompt}{options}"
        f" ({event.interrupt_kind} {event.interrupt_id})",
        level="warning",
        status=StepStatus.WAITING_HUMAN.value,
    )


def _interrupt_resolved(event: InterruptResolved) -> EventLine:
    how = " automatically" if event.automatic else ""
    value = event.answer.get("value")
    shown = f" {summarize(value, 40)}" if value not in (None, "") else ""
    return EventLine(
        f"{event.step_id} answered{how}: {event.answer.get('action', '?')}{shown}",
        status=StepStatus.RUNNING.value,
    )


def _budget(event: Budget) -> EventLine:
    return EventLine(
        f"budget: {event.step_runs}/{event.max_step_runs} step runs, "
        f"{event.llm_calls}/{event.max_llm_calls} calls, "
        f"{event.tokens}/{event.token_budget} tokens"
    )


def _policy_violation(event: PolicyViolation) -> EventLine:
    return EventLine(f"policy {event.rule}: {event.detail}", level="error")


def _log(event: Log) -> EventLine:
    return EventLine(event.message, level=event.level)


def _run_finished(event: RunFinished) -> EventLine:
    reason = f": {event.reason}" if event.reason else ""
    return EventLine(f"run finished {event.status.value}{reason}", status=event.status.value)


_DESCRIBERS: dict[type[Any], Callable[[Any], EventLine]] = {
    RunStarted: _run_started,
    StepStarted: _step_started,
    StepFinished: _step_finished,
    StepSkipped: _step_skipped,
    StepFailed: _step_failed,
    StepRetrying: _step_retrying,
    RouteDecided: _route_decided,
    InterruptRaised: _interrupt_raised,
    InterruptResolved: _interrupt_resolved,
    Budget: _budget,
    PolicyViolation: _policy_violation,
    Log: _log,
    RunFinished: _run_finished,
}
