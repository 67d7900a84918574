"""coverage_confidence_audit and supervisor: score the round, then decide (ADR-007).

The audit computes the five dimensions from the accumulated evidence and
prunes passages no claim cites (their ids stay in ``seen_passages`` so later
rounds search past them). The supervisor applies the stop policy, records the
round and emits ``research.round_scored``; its ``decision`` and
``remediation`` outputs are what the next round's ``when`` conditions read.
"""

from __future__ import annotations

from typing import Literal

from engine.context import StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.ci import confidence_index, weights_named
from research.evidence import EvidenceMap
from research.policy import Remediation, RoundRecord, changes_from, decide
from research.relevance import RELEVANCE_FLOOR
from research.scoring import RoundMeasures, score_evidence
from research.state import ResearchState, latest_state, round_of
from research.steps.common import RoundInput
from research.steps.retrieval import subject_query
from research.steps.verification import MAX_ATTEMPTS

RECENCY_PROBE = 8
"""Unread passages inside the recency window looked at for one about the question."""


class AuditOutput(Frozen):
    round: int
    round_kind: str
    measures: RoundMeasures
    dimensions: dict[str, dict[str, float | str]]
    state: ResearchState


def pruned(evidence: EvidenceMap) -> EvidenceMap:
    cited = {pid for c in evidence.claims for pid in (*c.passage_ids, *c.verified_by)}
    return evidence.with_updates(
        passages={pid: p for pid, p in evidence.passages.items() if pid in cited}
    )


@step("research.coverage_confidence_audit")
async def coverage_confidence_audit(ctx: StepContext, inp: RoundInput) -> AuditOutput:
    """The five dimension scores, recent sources and critical contradictions of the accumulated evidence."""
    state = latest_state(ctx)
    round_number = round_of(ctx)
    measures = score_evidence(state.evidence, state.policy)
    kind = state.round_kind if state.round == round_number else "full"
    new_state = state.advanced(
        round_number,
        "audit",
        evidence=pruned(state.evidence).with_updates(round=round_number),
        round=round_number,
        round_kind=kind,
    )
    return AuditOutput(
        round=round_number,
        round_kind=kind,
        measures=measures,
        dimensions=measures.scores.matrix(),
        state=new_state,
    )


class SupervisorOutput(Frozen):
    round: int
    decision: Literal["continue", "stop"]
    remediation: Literal["full", "verification", "recency", "none"]
    stop_reason: str
    ci: float
    gate_passed: bool
    failing: list[str]
    round_record: RoundRecord
    state: ResearchState


async def movable_remediations(ctx: StepContext, state: ResearchState) -> list[Remediation]:
    """Remediations that can still change the evidence their dimension is computed from.

    verification — a claim not yet verified has attempts left (each goes deeper into the
    corpus); recency — an unread passage dated inside the window exists; full — the last
    retrieval still found passages never read before and an unread passage of the documents
    about the question is left.
    """
    movable: list[Remediation] = []
    within = sorted(state.on_topic)
    if state.fresh_passages > 0 and await ctx.retrieve(
        state.evidence.query,
        **state.search_options(
            limit=1, exclude_passages=sorted(state.seen_passages), within=within
        ),
    ):
        movable.append("full")
    if any(
        not c.verified and c.verification_attempts < MAX_ATTEMPTS for c in state.evidence.claims
    ):
        movable.append("verification")
    start = state.policy.window_start
    if start is not None:
        unread = await ctx.retrieve(
            subject_query(state),
            **state.search_options(
                limit=RECENCY_PROBE,
                exclude_passages=sorted(state.seen_passages),
                published_after=start.isoformat(),
                published_before=state.policy.as_of,
            ),
        )
        if any(hit.get("relevance", 1.0) >= RELEVANCE_FLOOR for hit in unread):
            movable.append("recency")
    return movable


@step("research.supervisor")
async def supervisor(ctx: StepContext, inp: RoundInput) -> SupervisorOutput:
    """Apply the stop policy: veto, gate, R4 bound, patience; choose the next round's remediation."""
    from research.events import ROUND_SCORED, validated

    state = latest_state(ctx)
    round_number = round_of(ctx)
    measures = score_evidence(state.evidence, state.policy)
    weights = weights_named(state.params.weights)
    previous = [r for r in state.rounds if r.round < round_number]
    movable = await movable_remediations(ctx, state)
    verdict = decide(
        measures,
        round_number,
        previous,
        max_rounds=state.params.max_rounds,
        patience=state.params.patience,
        weights=weights,
        movable=movable,
    )
    ci = confidence_index(measures.scores, weights)
    changes, ci_change = changes_from(measures.scores, ci, previous[-1] if previous else None)
    record = RoundRecord(
        round=round_number,
        scores=measures.scores,
        ci=ci,
        recent_sources=measures.recent_sources,
        recent_floor=measures.recent_floor,
        recency_required=measures.recency_required,
        critical_contradictions=measures.critical_contradictions,
        gate_passed=verdict.gate_passed,
        decision=verdict.decision,
        stop_reason=verdict.stop_reason,
        remediation=verdict.remediation,
        kind=state.round_kind,
        movable=movable,
        changes=changes,
        ci_change=ci_change,
    )
    ctx.emit(
        ROUND_SCORED,
        validated(
            ROUND_SCORED,
            round=round_number,
            dimensions=measures.scores.matrix(),
            changes=changes,
            ci=ci,
            ci_change=ci_change,
            movable=movable,
            recent_sources=measures.recent_sources,
            recent_floor=measures.recent_floor,
            critical_contradictions=measures.critical_contradictions,
            gate_passed=verdict.gate_passed,
            decision=verdict.decision,
            stop_reason=verdict.stop_reason,
            remediation=verdict.remediation,
            round_kind=state.round_kind,
        ),
    )
    new_state = state.advanced(
        round_number,
        "supervisor",
        rounds=[*previous, record],
        round_kind=verdict.remediation or "full",
    )
    return SupervisorOutput(
        round=round_number,
        decision=verdict.decision,
        remediation=verdict.remediation or "none",
        stop_reason=verdict.stop_reason or "",
        ci=ci,
        gate_passed=verdict.gate_passed,
        failing=verdict.failing,
        round_record=record,
        state=new_state,
    )
