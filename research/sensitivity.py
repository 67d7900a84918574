"""Weight sensitivity of stop decisions and coalesce choices (ADR-007 open question 1, ADR-003 §D).

For one run's scored rounds, replay the stop policy and coalesce under the
proposed, equal (Dawes) and ROC (Barron & Barrett) weights, under ±0.05 on
each proposed weight (renormalized), and under ADR-003's superseded two-tier
gate (per-metric floors plus CI ≥ 0.80); report every variant whose stop
round or selected round differs from what the run did.
"""

from __future__ import annotations

from typing import Any

from plumbing.frozen import Frozen
from research.ci import WEIGHT_SETS, Weights, confidence_index, normalized
from research.coalesce import TARGET_CI, coalesce
from research.matrix import DIMENSIONS, DimensionScores
from research.policy import HARD_MAX_ROUNDS, RoundRecord, decide
from research.scoring import RoundMeasures

ADR003_FLOORS = {
    "coverage": 0.35,
    "source_quality": 0.40,
    "agreement": 0.35,
    "verification": 0.40,
    "recency": 0.30,
}
PERTURBATION = 0.05


class VariantOutcome(Frozen):
    variant: str
    stop_round: int
    selected_round: int
    would_continue: bool = False
    """The variant would have run past the run's last scored round (whose scores are unknown)."""
    flipped: bool


def records_from_payloads(payloads: list[dict[str, Any]]) -> list[RoundRecord]:
    """RoundRecords rebuilt from a run's ``research.round_scored`` payloads."""
    records = []
    for p in sorted(payloads, key=lambda item: item["round"]):
        scores = DimensionScores(**{d: p["dimensions"][d]["score"] for d in DIMENSIONS})
        records.append(
            RoundRecord(
                round=p["round"],
                scores=scores,
                ci=p["ci"],
                recent_sources=p["recent_sources"],
                recent_floor=p["recent_floor"],
                recency_required=p["recent_floor"] > 0,
                critical_contradictions=p["critical_contradictions"],
                gate_passed=p["gate_passed"],
                decision=p["decision"],
                stop_reason=p["stop_reason"],
                remediation=p["remediation"],
                kind=p.get("round_kind", "full"),
                **({"movable": p["movable"]} if p.get("movable") is not None else {}),
            )
        )
    return records


def _measures(record: RoundRecord) -> RoundMeasures:
    return RoundMeasures(
        scores=record.scores,
        recent_sources=record.recent_sources,
        recent_floor=record.recent_floor,
        recency_required=record.recency_required,
        critical_contradictions=record.critical_contradictions,
        claims=0,
        sources=0,
    )


def replay(
    records: list[RoundRecord], weights: Weights, *, max_rounds: int, patience: int
) -> list[RoundRecord]:
    """The rounds that would have run under ``weights`` (the same scores, decided again)."""
    replayed: list[RoundRecord] = []
    for record in records:
        verdict = decide(
            _measures(record),
            record.round,
            replayed,
            max_rounds=max_rounds,
            patience=patience,
            weights=weights,
            movable=record.movable,
        )
        replayed.append(
            record.model_copy(
                update={
                    "ci": confidence_index(record.scores, weights),
                    "gate_passed": verdict.gate_passed,
                    "decision": verdict.decision,
                    "stop_reason": verdict.stop_reason,
                }
            )
        )
        if verdict.decision == "stop":
            break
    return replayed


def adr003_stop_round(records: list[RoundRecord], max_rounds: int) -> int:
    """The first round ADR-003's two-tier gate (floors + CI ≥ 0.80) would have stopped at."""
    proposed = WEIGHT_SETS["proposed"]
    for record in records:
        values = record.scores.as_dict()
        floors = all(values[d] >= floor for d, floor in ADR003_FLOORS.items())
        floors = floors and (
            not record.recency_required or record.recent_sources >= record.recent_floor
        )
        if (
            floors
            and confidence_index(record.scores, proposed) >= TARGET_CI
            and record.critical_contradictions == 0
        ) or record.round >= min(max_rounds, HARD_MAX_ROUNDS):
            return record.round
    return records[-1].round


def weight_variants() -> dict[str, Weights]:
    variants: dict[str, Weights] = dict(WEIGHT_SETS)
    base = WEIGHT_SETS["proposed"]
    for index, dimension in enumerate(DIMENSIONS):
        for sign, label in ((1, "+"), (-1, "-")):
            changed = list(base)
            changed[index] = max(0.0, changed[index] + sign * PERTURBATION)
            variants[f"proposed {dimension}{label}{PERTURBATION:g}"] = normalized(tuple(changed))
    return variants


def analyse_run(
    records: list[RoundRecord], *, weights_name: str, max_rounds: int, patience: int
) -> list[VariantOutcome]:
    actual_stop = records[-1].round
    actual_selected = coalesce(records, WEIGHT_SETS[weights_name], weights_name).selected_round
    outcomes = []
    for name, weights in weight_variants().items():
        replayed = replay(records, weights, max_rounds=max_rounds, patience=patience)
        selected = coalesce(replayed, weights, name).selected_round
        stop = replayed[-1].round
        continues = replayed[-1].decision == "continue"
        outcomes.append(
            VariantOutcome(
                variant=name,
                stop_round=stop,
                selected_round=selected,
                would_continue=continues,
                flipped=continues or stop != actual_stop or selected != actual_selected,
            )
        )
    stop = adr003_stop_round(records, max_rounds)
    kept = [r for r in records if r.round <= stop]
    selected = coalesce(kept, WEIGHT_SETS["proposed"], "proposed").selected_round
    outcomes.append(
        VariantOutcome(
            variant="ADR-003 two-tier gate",
            stop_round=stop,
            selected_round=selected,
            flipped=stop != actual_stop or selected != actual_selected,
        )
    )
    return outcomes
