"""cove_verify: chain-of-verification over the accumulated claims (Dhuliawala et al.).

Plan a verification question per claim not yet verified → answer each from
passages of *other* sources only (retrieved independently, deeper on every
further attempt) → keep the verdicts → look for contradictions between the
claims. In a verification remediation round this is all that runs before
the audit.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from engine.context import StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.evidence import Claim, Contradiction, Passage, Source
from research.scoring import is_critical
from research.state import ResearchState, latest_state, round_claims, round_of
from research.steps.common import RoundInput, passage_from_hit, source_from_hit

MAX_ATTEMPTS = 3
CANDIDATES_PER_CLAIM = 4
VERIFY_BATCH = 10
"""Claims per plan/verify call pair, so one prompt stays well inside the step's context budget."""


class VerificationOutput(Frozen):
    round: int
    checked: int
    verified: int
    contradictions: int
    critical_contradictions: int
    refusals: list[str] = Field(default_factory=list)
    state: ResearchState


@step("research.cove_verify")
async def cove_verify(ctx: StepContext, inp: RoundInput) -> VerificationOutput:
    """Verify claims against independent sources; find contradictions."""
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import ContradictionAnswer, VerificationAnswer, VerificationPlan

    state = latest_state(ctx)
    round_number = round_of(ctx)
    evidence = state.evidence.add_claims(round_claims(ctx, round_number))
    pipeline = ModelPipeline(ctx)
    refusals: list[str] = []
    pending = [
        c for c in evidence.claims if not c.verified and c.verification_attempts < MAX_ATTEMPTS
    ]

    verdicts: dict[str, tuple[bool, list[str]]] = {}
    new_sources: list[Source] = []
    new_passages: list[Passage] = []
    checked: list[Claim] = []
    for first in range(0, len(pending), VERIFY_BATCH):
        batch = pending[first : first + VERIFY_BATCH]
        plan = await pipeline.run(
            ModelStage(
                task="research.plan_verification",
                schema=VerificationPlan,
                claims=batch,
                evidence=evidence,
                output_tokens=60 * len(batch),
                build_inputs=lambda claims, _r: {
                    "claims": [
                        {"id": c.id, "text": c.text, "attempts": c.verification_attempts}
                        for c in claims
                    ]
                },
            )
        )
        if plan.refusal or not isinstance(plan.answer, VerificationPlan):
            refusals.append(plan.note())
            continue
        questions = {q.claim_id: q for q in plan.answer.questions}
        batch_checked = [c for c in plan.accepted_claims if c.id in questions]

        async def independent(
            claims: list[Claim], questions: dict[str, Any] = questions
        ) -> dict[str, list[dict[str, Any]]]:
            found: dict[str, list[dict[str, Any]]] = {}
            for claim in claims:
                found[claim.id] = await ctx.retrieve(
                    questions[claim.id].query,
                    limit=CANDIDATES_PER_CLAIM,
                    offset=claim.verification_attempts * CANDIDATES_PER_CLAIM,
                    **state.search_options(exclude_sources=claim.source_ids),
                )
            return found

        def build(
            claims: list[Claim], candidates: dict[str, list[dict[str, Any]]]
        ) -> dict[str, Any]:
            return {
                "claims": [
                    {"id": c.id, "text": c.text, "source_ids": c.source_ids} for c in claims
                ],
                "candidates": {
                    cid: [
                        {
                            "passage_id": h["passage_id"],
                            "source_id": h["source_id"],
                            "text": h["text"],
                        }
                        for h in hits
                    ]
                    for cid, hits in candidates.items()
                },
            }

        answered = await pipeline.run(
            ModelStage(
                task="research.verify_claims",
                schema=VerificationAnswer,
                claims=batch_checked,
                evidence=evidence,
                retrieve=independent,
                build_inputs=build,
                output_tokens=80 * max(1, len(batch_checked)),
            )
        )
        if answered.refusal or not isinstance(answered.answer, VerificationAnswer):
            refusals.append(answered.note())
            continue
        checked.extend(batch_checked)
        hits_by_passage = {
            h["passage_id"]: h for hits in (answered.retrieved or {}).values() for h in hits
        }
        for verdict in answered.answer.verdicts:
            claim = evidence.claim(verdict.claim_id)
            if claim is None:
                continue
            support = [
                p
                for p in verdict.supporting_passage_ids
                if p in hits_by_passage and hits_by_passage[p]["source_id"] not in claim.source_ids
            ]
            verdicts[verdict.claim_id] = (verdict.supported and bool(support), support)
            for pid in support:
                new_sources.append(source_from_hit(hits_by_passage[pid], round_number))
                new_passages.append(passage_from_hit(hits_by_passage[pid], round_number))
    checked_ids = {c.id for c in checked}
    claims = []
    for claim in evidence.claims:
        if claim.id in checked_ids:
            supported, support = verdicts.get(claim.id, (False, []))
            claim = claim.model_copy(
                update={
                    "verified": supported,
                    "verified_by": support,
                    "verification_attempts": claim.verification_attempts + 1,
                }
            )
        claims.append(claim)
    evidence = evidence.with_updates(claims=claims).add_retrieved(new_sources, new_passages)

    def contradiction_inputs(claims: list[Claim], _r: Any) -> dict[str, Any]:
        return {
            "claims": [
                {
                    "id": c.id,
                    "text": c.text,
                    "sub_question": c.sub_question,
                    "source_ids": c.source_ids,
                    "statuses": [
                        evidence.sources[s].status for s in c.source_ids if s in evidence.sources
                    ],
                }
                for c in claims
            ]
        }

    found = await pipeline.run(
        ModelStage(
            task="research.detect_contradictions",
            schema=ContradictionAnswer,
            claims=evidence.claims,
            evidence=evidence,
            build_inputs=contradiction_inputs,
            output_tokens=400,
        )
    )
    contradictions = list(evidence.contradictions)
    if found.refusal:
        refusals.append(found.note())
    elif isinstance(found.answer, ContradictionAnswer):
        known = {c.id for c in evidence.claims}
        contradictions = []
        for item in found.answer.contradictions:
            if item.claim_a in known and item.claim_b in known:
                a = evidence.claim(item.claim_a)
                draft = Contradiction(
                    claim_a=item.claim_a,
                    claim_b=item.claim_b,
                    kind=item.kind,
                    sub_question=a.sub_question if a else "",
                    critical=False,
                    detail=item.detail,
                )
                contradictions.append(
                    draft.model_copy(update={"critical": is_critical(draft, evidence)})
                )
    evidence = evidence.with_updates(contradictions=contradictions)
    remediation_round = state.round < round_number
    new_state = state.advanced(
        round_number,
        "verification",
        evidence=evidence,
        round=round_number,
        round_kind="verification" if remediation_round else state.round_kind,
    )
    return VerificationOutput(
        round=round_number,
        checked=len(checked),
        verified=sum(1 for c in claims if c.verified),
        contradictions=len(contradictions),
        critical_contradictions=sum(1 for c in contradictions if c.critical),
        refusals=refusals,
        state=new_state,
    )
