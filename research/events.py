"""Payloads of the research domain events (DESIGN §6: the engine carries them, research defines them).

The TUI renders these; :func:`validated` is how a step builds one, so a payload
that does not match its model never reaches the run's event log, and
:func:`describe_research_event` is how every surface words them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError

from engine.event_lines import EventLine, counted
from engine.events import Domain
from plumbing.frozen import Frozen
from research.matrix import Dimension, Tier

STAGE = "research.stage"
ROUND_SCORED = "research.round_scored"
COALESCED = "research.coalesced"

StageName = Literal[
    "provenance",
    "budget_check",
    "retrieval",
    "prompt_build",
    "budget_precharge",
    "model_call",
    "budget_reconcile",
    "validated_result",
]
Refusal = Literal["NO_PROVENANCE", "BUDGET_EXCEEDED", "PROVIDER_UNAVAILABLE", "CONTEXT_TOO_SMALL"]


class Payload(Frozen):
    """The fields of one research event."""


class StagePayload(Payload):
    stage: StageName
    status: Literal["ok", "refused"]
    refusal: Refusal | None = None
    detail: str = ""
    task: str = ""
    provider: str = ""
    degraded: bool = False
    """Set on budget_reconcile: the answer came from a fallback (lower tier or the built-in model)."""
    truncated: bool = False
    """Set on model_call: the answer stopped at its output-token limit (it is asked again once,
    with more room)."""


class DimensionCell(Payload):
    score: float
    tier: Tier


class RoundScoredPayload(Payload):
    round: int
    dimensions: dict[Dimension, DimensionCell]
    ci: float
    changes: dict[Dimension, float] | None = None
    """Each dimension's change from the previous round (None in the first), to 6 decimals."""
    ci_change: float | None = None
    """The CI's change from the previous round (None in the first), to 6 decimals."""
    recent_sources: int
    recent_floor: int
    critical_contradictions: int
    gate_passed: bool
    decision: Literal["continue", "stop"]
    stop_reason: str | None
    remediation: str | None
    round_kind: Literal["full", "verification", "recency"] = "full"
    movable: list[Literal["full", "verification", "recency"]] | None = None
    """Remediations that could still change the evidence (none of them: the plateau stop)."""


class CoalescedPayload(Payload):
    selected_round: int
    confidence_level: Literal["full", "moderate", "low", "insufficient"]
    best_ci: float
    weights: str
    stop_reason: str


PAYLOAD_MODELS: dict[str, type[Payload]] = {
    STAGE: StagePayload,
    ROUND_SCORED: RoundScoredPayload,
    COALESCED: CoalescedPayload,
}


def validated(name: str, **fields: Any) -> dict[str, Any]:
    """The JSON form of a payload after validating it against its model."""
    return PAYLOAD_MODELS[name](**fields).model_dump(mode="json")


def payload_of(event: Domain) -> Payload | None:
    """A research event's payload as its model; None for other domains' events and for a
    payload its model rejects."""
    model = PAYLOAD_MODELS.get(event.name)
    if model is None:
        return None
    try:
        return model.model_validate(event.payload)
    except ValidationError:
        return None


def describe_research_event(event: Domain) -> EventLine | None:
    """The event-log line of a research event, read through its payload model; None where
    :func:`payload_of` has none (the line then shows name and payload)."""
    payload = payload_of(event)
    if payload is None:
        return None
    if isinstance(payload, StagePayload):
        return _stage_line(payload)
    if isinstance(payload, RoundScoredPayload):
        return _round_line(payload)
    assert isinstance(payload, CoalescedPayload)
    return EventLine(
        f"coalesced: round {payload.selected_round} selected, confidence"
        f" {payload.confidence_level}, best CI {payload.best_ci:.2f} ({payload.stop_reason})"
    )


def _stage_line(payload: StagePayload) -> EventLine:
    refused = payload.status == "refused"
    why = f" {payload.refusal}" if payload.refusal else ""
    detail = f": {payload.detail}" if payload.detail else ""
    provider = f" via {payload.provider}" if payload.provider else ""
    fallback = " (fallback)" if payload.degraded else ""
    return EventLine(
        f"stage {payload.stage} {payload.status}{why}{provider}{fallback}{detail}",
        level="warning" if refused or payload.degraded else "info",
    )


def _round_line(payload: RoundScoredPayload) -> EventLine:
    gate = "passed" if payload.gate_passed else "not passed"
    contradictions = (
        f", {counted(payload.critical_contradictions, 'critical contradiction')}"
        if payload.critical_contradictions
        else ""
    )
    stop = f" ({payload.stop_reason})" if payload.stop_reason else ""
    return EventLine(
        f"round {payload.round} scored: CI {payload.ci:.2f}, gate {gate}{contradictions},"
        f" {payload.decision}{stop}",
        level="warning" if payload.critical_contradictions else "info",
        status="PASS" if payload.gate_passed else "FAIL",
    )
