"""The words every surface of the app shows for an event: the engine's description of its own
events and the domains' (engine/event_lines.py), and a provider's breaker state told as a story
(breaker_story.py), which is the router's to word and so is worded here, where both meet."""

from __future__ import annotations

from engine.event_lines import DomainDescriber, EventLine
from engine.event_lines import describe as describe_run_event
from engine.events import ProviderState, RunEvent, StepSkipped
from tui.present.breaker_story import format_cooldown, why
from tui.present.skip_words import skip_words


def describe(
    event: RunEvent, domain: DomainDescriber | None = None, previous_state: str | None = None
) -> EventLine:
    """The one line every surface shows for ``event``. ``previous_state`` is a provider's
    breaker state before this ``provider_state`` event, when the caller folds them (it lets
    the line say why the breaker moved)."""
    if isinstance(event, ProviderState):
        return _provider_state(event, previous_state)
    if isinstance(event, StepSkipped):
        return describe_run_event(event.model_copy(update={"reason": skip_words(event.reason)}))
    return describe_run_event(event, domain)


def _provider_state(event: ProviderState, previous_state: str | None) -> EventLine:
    snapshot = event.snapshot
    state = str(snapshot.get("state", "?"))
    cooldown = (
        f", cooldown {format_cooldown(float(snapshot.get('cooldown_remaining_s') or 0))}"
        if state == "OPEN"
        else ""
    )
    reason = why(snapshot, previous_state)
    return EventLine(
        f"provider {event.provider}: {state}{cooldown}" + (f" — {reason}" if reason else ""),
        level="info" if state in ("CLOSED", "?") else "warning",
        status=state,
    )
