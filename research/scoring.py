"""Dimension scores computed from the accumulated evidence, never asked of a model (DESIGN §8).

Only evidence about the question counts: a claim is *relevant* when it shows provenance and
every passage it rests on has a relevance to the run's question at or above
``research.relevance.RELEVANCE_FLOOR``. Off-topic evidence therefore scores Low, however much of
it there is, and the gate fails.

- coverage: share of sub-questions with at least one relevant claim;
- source_quality: mean authority of the sources the relevant claims cite (0 without any);
- agreement: share of relevant claims not involved in any contradiction;
- verification: share of relevant claims that passed chain-of-verification against
  passages of other sources;
- recency: share of the evidence's sources whose own date falls inside the
  window ending at ``as_of`` (1.0 when recency is not required).

Plus ``recent_sources`` (the count behind recency) and
``critical_contradictions``: two claims on one sub-question, from sources of
High authority, that contradict, neither source superseded.
"""

from __future__ import annotations

from plumbing.frozen import Frozen
from research.evidence import Claim, Contradiction, EvidenceMap
from research.matrix import DimensionScores
from research.relevance import RELEVANCE_FLOOR
from research.sources import HIGH_AUTHORITY, SourcePolicy, effective_date


class RoundMeasures(Frozen):
    scores: DimensionScores
    recent_sources: int
    recent_floor: int
    recency_required: bool
    critical_contradictions: int
    claims: int
    sources: int

    @property
    def floor_met(self) -> bool:
        return not self.recency_required or self.recent_sources >= self.recent_floor


def is_critical(contradiction: Contradiction, evidence: EvidenceMap) -> bool:
    claims = [evidence.claim(contradiction.claim_a), evidence.claim(contradiction.claim_b)]
    if any(c is None for c in claims) or claims[0].sub_question != claims[1].sub_question:  # type: ignore[union-attr]
        return False
    for claim in claims:
        sources = [evidence.sources[s] for s in claim.source_ids if s in evidence.sources]  # type: ignore[union-attr]
        if not sources or any(s.superseded for s in sources):
            return False
        if max(s.authority for s in sources) < HIGH_AUTHORITY:
            return False
    return True


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def is_relevant(claim: Claim, evidence: EvidenceMap) -> bool:
    """The claim shows provenance and rests only on passages about the question."""
    return not evidence.provenance_problems(claim) and all(
        evidence.passages[p].relevance >= RELEVANCE_FLOOR for p in claim.passage_ids
    )


def score_evidence(evidence: EvidenceMap, policy: SourcePolicy) -> RoundMeasures:
    claims = [c for c in evidence.claims if is_relevant(c, evidence)]
    sub_ids = [q.id for q in evidence.sub_questions]
    covered = {c.sub_question for c in claims}
    coverage = _ratio(sum(1 for q in sub_ids if q in covered), len(sub_ids))

    cited_ids = sorted({sid for claim in claims for sid in claim.source_ids})
    cited = [evidence.sources[sid] for sid in cited_ids if sid in evidence.sources]
    source_quality = sum(s.authority for s in cited) / len(cited) if cited else 0.0

    contested = {cid for c in evidence.contradictions for cid in (c.claim_a, c.claim_b)}
    agreement = _ratio(sum(1 for c in claims if c.id not in contested), len(claims))
    verification = _ratio(sum(1 for c in claims if c.verified), len(claims))

    as_of = policy.as_of_date
    start = policy.window_start
    recent = 0
    for source in evidence.sources.values():
        when = effective_date(source.published_at, source.updated_at, as_of)
        if start is not None and when is not None and when >= start:
            recent += 1
    if policy.recency_required:
        recency = _ratio(recent, len(evidence.sources))
    else:
        recency = 1.0
    critical = sum(1 for c in evidence.contradictions if is_critical(c, evidence))
    return RoundMeasures(
        scores=DimensionScores(
            coverage=coverage,
            source_quality=min(1.0, source_quality),
            agreement=agreement,
            verification=verification,
            recency=recency,
        ),
        recent_sources=recent,
        recent_floor=policy.min_recent_sources if policy.recency_required else 0,
        recency_required=policy.recency_required,
        critical_contradictions=critical,
        claims=len(claims),
        sources=len(evidence.sources),
    )
