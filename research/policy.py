"""The ADR-007 stop policy, one pure function over a round's measures and the rounds before it.

Order of checks:

1. veto — any critical contradiction halts the loop at once, in any round
   (a "single disqualifier": evidence only accumulates, so later rounds
   cannot lift it); coalesce then picks the best round without one;
2. gate — every dimension at High or better and, where recency is required,
   recent sources at or above the floor: stop, this round passes;
3. bound — the round is the last allowed (``max_rounds``, never past R4);
4. patience — the CI fell below the previous round's in ``patience``
   consecutive rounds: stop;
5. otherwise continue, with a remediation aimed at what fell short: only
   verification → re-run cove_verify and the audit over the accumulated
   evidence; only recency (score or floor) → only retrieval aimed at recent
   sources; anything else → a full round;
6. plateau — but when that remediation cannot change the evidence its
   dimension is computed from (``movable`` says which can: no claim left to
   verify, no unread recent passage, no unread passage of the documents about
   the question), another round would change nothing: stop; and a round that
   changed no score at all from the round before it is not followed by a third
   alike: stop.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from pydantic import Field

from plumbing.frozen import Frozen
from research.ci import Weights, confidence_index
from research.matrix import DimensionScores
from research.scoring import RoundMeasures

HARD_MAX_ROUNDS = 4

Decision = Literal["continue", "stop"]
Remediation = Literal["full", "verification", "recency"]
StopReason = Literal["gate_passed", "contradiction_veto", "patience", "max_rounds", "plateau"]
REMEDIATIONS: tuple[Remediation, ...] = ("full", "verification", "recency")


class RoundRecord(Frozen):
    """One scored round as the supervisor recorded it (also the sensitivity analysis's input)."""

    round: int = Field(ge=1)
    scores: DimensionScores
    ci: float
    recent_sources: int
    recent_floor: int
    recency_required: bool = True
    critical_contradictions: int = 0
    gate_passed: bool = False
    decision: Decision = "continue"
    stop_reason: StopReason | None = None
    remediation: Remediation | None = None
    kind: Remediation = "full"
    """What kind of round produced these scores (full, or a targeted remediation)."""
    movable: list[Remediation] = Field(default_factory=lambda: list(REMEDIATIONS))
    """Remediations that could still change the evidence after this round (plateau otherwise)."""
    changes: dict[str, float] | None = None
    """Each dimension's change from the previous round (None in the first round)."""
    ci_change: float | None = None

    @property
    def vetoed(self) -> bool:
        return self.critical_contradictions > 0


class StopDecision(Frozen):
    decision: Decision
    stop_reason: StopReason | None
    remediation: Remediation | None
    gate_passed: bool
    failing: list[str]
    regressions: int


def gate_passes(measures: RoundMeasures) -> bool:
    return (
        measures.scores.all_at_least("High")
        and measures.floor_met
        and measures.critical_contradictions == 0
    )


def _remediation(measures: RoundMeasures) -> Remediation:
    failing = set(measures.scores.below("High"))
    if failing == {"verification"} and measures.floor_met:
        return "verification"
    if failing <= {"recency"} and (failing or not measures.floor_met):
        return "recency"
    return "full"


def changes_from(
    scores: DimensionScores, ci: float, previous: RoundRecord | None
) -> tuple[dict[str, float] | None, float | None]:
    """Each dimension's and the CI's change from the previous round, to 6 decimals.

    Six decimals, because a patience stop can turn on a CI drop far below the two decimals
    a score is shown with; the change says by how much.
    """
    if previous is None:
        return None, None
    before = previous.scores.as_dict()
    return (
        {d: round(v - before[d], 6) for d, v in scores.as_dict().items()},
        round(ci - previous.ci, 6),
    )


def trailing_regressions(cis: list[float]) -> int:
    """How many rounds in a row, ending with the last, had a CI below the round before."""
    count = 0
    for earlier, later in zip(reversed(cis[:-1]), reversed(cis[1:])):
        if later < earlier - 1e-9:
            count += 1
        else:
            break
    return count


def decide(
    measures: RoundMeasures,
    round_number: int,
    previous: list[RoundRecord],
    *,
    max_rounds: int,
    patience: int,
    weights: Weights,
    movable: Collection[Remediation] = REMEDIATIONS,
) -> StopDecision:
    failing = measures.scores.below("High") + ([] if measures.floor_met else ["recent_sources"])
    cis = [r.ci for r in previous] + [confidence_index(measures.scores, weights)]
    regressions = trailing_regressions(cis)
    passed = gate_passes(measures)

    def stop(reason: StopReason) -> StopDecision:
        return StopDecision(
            decision="stop",
            stop_reason=reason,
            remediation=None,
            gate_passed=passed,
            failing=failing,
            regressions=regressions,
        )

    if measures.critical_contradictions > 0:
        return stop("contradiction_veto")
    if passed:
        return stop("gate_passed")
    if round_number >= min(max_rounds, HARD_MAX_ROUNDS):
        return stop("max_rounds")
    if patience > 0 and regressions >= patience:
        return stop("patience")
    remediation = _remediation(measures)
    unchanged = bool(previous) and measures.scores == previous[-1].scores
    if remediation not in movable or unchanged:
        return stop("plateau")
    return StopDecision(
        decision="continue",
        stop_reason=None,
        remediation=remediation,
        gate_passed=False,
        failing=failing,
        regressions=regressions,
    )
