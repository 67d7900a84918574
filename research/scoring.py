"""Dimension scores computed from the accumulated evidence, never asked of a model (DESIGN §8).

- coverage: share of sub-questions with at least one claim that shows provenance;
- source_quality: mean authority of the sources the claims cite;
- agreement: share of claims not involved in any contradiction;
- verification: share of claims that passed chain-of-verification against
  passages of other sources;
- recency: share of the evidence's sources whose own date falls inside the
  window ending at ``as_of`` (1.0 when recency is not required).

Plus ``recent_sources`` (the count behind recency) and
``critical_contradictions``: two claims on one sub-question, from sources of
High authority, that contradict, neither source superseded.
"""

from __future__ import annotations

from plumbing.frozen import Frozen
from research.evidence import Contradiction, EvidenceMap
from research.matrix import DimensionScores
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


def score_evidence(evidence: EvidenceMap, policy: SourcePolicy) -> RoundMeasures:
    claims = evidence.claims
    sub_ids = [q.id for q in evidence.sub_questions]
    covered = {c.sub_question for c in claims if not evidence.provenance_problems(c)}
    coverage = _ratio(sum(1 for q in sub_ids if q in covered), len(sub_ids))

    cited = evidence.cited_sources()
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
