"""The research state that flows from step to step in the ``state`` output field.

Steps of a round do not always all run (a targeted remediation round skips
some), so a step does not name the step it reads from: it takes the state
with the highest ``revision`` among the outputs it can see. Revisions are
``round * 10 + position`` of the producing step, so the latest stage of the
latest round wins whatever ran before it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from engine.context import StepContext
from plumbing.frozen import Frozen
from research.evidence import Claim, EvidenceMap
from research.policy import Remediation, RoundRecord
from research.sources import SourcePolicy

POSITION = {
    "intake": 1,
    "source_policy": 2,
    "hypotheses": 1,
    "retrieval": 2,
    "analysis": 3,
    "verification": 4,
    "audit": 5,
    "supervisor": 6,
    "synthesis": 0,
}


class Params(Frozen):
    max_rounds: int = Field(default=4, ge=1, le=4)
    patience: int = Field(default=1, ge=0)
    weights: str = "proposed"
    collections: list[str] = Field(default_factory=list)


class PlannedBranch(Frozen):
    sub_question: str
    query: str
    score: float


class ResearchState(Frozen):
    revision: int
    kind: str = "definition"
    """The question's kind (research.questions): the report gives a history a timeline."""
    subject: str
    subject_terms: list[str]
    params: Params
    policy: SourcePolicy
    evidence: EvidenceMap
    round: int = 0
    round_kind: Remediation = "full"
    branches: list[PlannedBranch] = Field(default_factory=list)
    tried_queries: list[str] = Field(default_factory=list)
    seen_passages: list[str] = Field(default_factory=list)
    """Every passage ever read, cited or not (later rounds retrieve past them)."""
    fresh_passages: int = 0
    """Passages the latest full retrieval read for the first time (0: the corpus has no more)."""
    on_topic: dict[str, float] = Field(default_factory=dict)
    """The documents about the question (relevance at or above the floor, best first), found by
    the first retrieval; every later search reads only them. Empty: the corpus has little on it."""
    rounds: list[RoundRecord] = Field(default_factory=list)

    def search_options(self, **options: Any) -> dict[str, Any]:
        """Options every corpus search of the run carries: its collections, nothing after as_of,
        and the run's question, which every hit's relevance is measured against."""
        return {
            "collections": self.params.collections or None,
            "not_after": self.policy.as_of,
            "about": self.evidence.query,
            **options,
        }

    def advanced(self, round_number: int, stage: str, **changes: Any) -> ResearchState:
        return self.model_copy(update={"revision": round_number * 10 + POSITION[stage], **changes})


def round_of(ctx: StepContext) -> int:
    """The round a step belongs to: ``config.round`` or the ``_r<n>`` suffix of its id."""
    configured = ctx.config.get("round")
    if configured is not None:
        return int(configured)
    match = re.search(r"_r(\d+)$", ctx.step_id)
    return int(match.group(1)) if match else 1


def latest_state(ctx: StepContext) -> ResearchState:
    best: dict[str, Any] | None = None
    for outputs in ctx.upstream.values():
        state = (outputs or {}).get("state")
        if isinstance(state, dict) and (
            best is None or state.get("revision", 0) > best.get("revision", 0)
        ):
            best = state
    if best is None:
        raise RuntimeError(
            f"{ctx.step_id}: no research state upstream; it must follow source_policy"
        )
    return ResearchState.model_validate(best)


def round_claims(ctx: StepContext, round_number: int) -> list[Claim]:
    """Claims the analysts of this round proposed, in step-id order (deterministic)."""
    claims: list[Claim] = []
    for step_id in sorted(ctx.upstream):
        outputs = ctx.upstream[step_id] or {}
        if outputs.get("round") == round_number and isinstance(outputs.get("new_claims"), list):
            claims.extend(Claim.model_validate(c) for c in outputs["new_claims"])
    return claims


def supervisor_states(ctx: StepContext) -> dict[int, ResearchState]:
    """Every round's final state visible to this step, by round (from the supervisors' outputs)."""
    found: dict[int, ResearchState] = {}
    for outputs in ctx.upstream.values():
        outputs = outputs or {}
        if "round_record" in outputs and isinstance(outputs.get("state"), dict):
            state = ResearchState.model_validate(outputs["state"])
            found[state.round] = state
    return dict(sorted(found.items()))
