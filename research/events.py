"""Payloads of the research domain events (DESIGN §6: the engine carries them, research defines them).

The TUI renders these; :func:`validated` is how a step builds one, so a payload
that does not match its model never reaches the run's event log.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from research.matrix import Tier

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


class Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    dimensions: dict[
        Literal["coverage", "source_quality", "agreement", "verification", "recency"], DimensionCell
    ]
    ci: float
    changes: (
        dict[Literal["coverage", "source_quality", "agreement", "verification", "recency"], float]
        | None
    ) = None
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
