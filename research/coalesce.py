"""coalesce(): best-of-N round selection and the delivery tier (ADR-003 §E, ADR-007 §4.3).

Candidates are the rounds without a contradiction veto (all rounds when every
one was vetoed). A round that passed the ADR-007 gate beats one that did not;
among equals the higher CI wins, and a CI tie goes to the earlier round (the
same evidence for fewer rounds), so the choice is deterministic and never
simply "the latest". The delivery tier follows the gate: ``full`` when the
selected round passed it, otherwise moderate / low / insufficient by that
round's CI (0.65 / 0.50).
"""

from __future__ import annotations

from typing import Literal

from plumbing.frozen import Frozen
from research.ci import Weights, confidence_index
from research.matrix import DIMENSIONS
from research.policy import RoundRecord

ConfidenceLevel = Literal["full", "moderate", "low", "insufficient"]
TARGET_CI = 0.80
MODERATE_CI = 0.65
LOW_CI = 0.50

DISCLAIMERS: dict[str, str] = {
    "full": "",
    "moderate": (
        "Moderate confidence: the research did not pass every quality gate. "
        "Weak metrics are listed below; treat the affected findings with care."
    ),
    "low": (
        "LOW CONFIDENCE: several quality metrics are weak. Findings marked [unverified] "
        "were not confirmed by an independent source; verify before relying on them."
    ),
    "insufficient": (
        "INSUFFICIENT EVIDENCE: this report is below the quality floor and is "
        "delivered only because a person explicitly asked for it. It needs human review."
    ),
}


class CoalesceResult(Frozen):
    selected_round: int
    confidence_level: ConfidenceLevel
    best_ci: float
    weights: str
    failing_metrics: dict[str, float]
    passing_metrics: dict[str, float]
    vetoed_rounds: list[int]


def confidence_level(record: RoundRecord, ci: float) -> ConfidenceLevel:
    if record.gate_passed:
        return "full"
    if ci >= MODERATE_CI:
        return "moderate"
    if ci >= LOW_CI:
        return "low"
    return "insufficient"


def coalesce(
    records: list[RoundRecord], weights: Weights, weights_name: str = "proposed"
) -> CoalesceResult:
    if not records:
        raise ValueError("coalesce needs at least one scored round")
    vetoed = [r.round for r in records if r.vetoed]
    candidates = [r for r in records if not r.vetoed] or list(records)
    scored = [(r, confidence_index(r.scores, weights)) for r in candidates]
    best, best_ci = min(scored, key=lambda item: (not item[0].gate_passed, -item[1], item[0].round))
    tiers = best.scores.tiers()
    values = best.scores.as_dict()
    failing = {d: round(values[d], 4) for d in DIMENSIONS if tiers[d] in ("Medium", "Low")}
    passing = {d: round(values[d], 4) for d in DIMENSIONS if d not in failing}
    return CoalesceResult(
        selected_round=best.round,
        confidence_level=confidence_level(best, best_ci),
        best_ci=best_ci,
        weights=weights_name,
        failing_metrics=failing,
        passing_metrics=passing,
        vetoed_rounds=vetoed,
    )
