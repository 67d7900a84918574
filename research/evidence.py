"""The evidence model (DESIGN §8): sources, passages, claims with provenance, the map.

Every claim names the passages it rests on and carries ``quote``, the exact
text of one of them that supports it, so citation faithfulness can be
checked mechanically. The map is immutable; each step returns a new one
(``with_*`` methods), and a round starts from the previous round's map.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from plumbing.frozen import Frozen
from research.text import normalize_space


class SubQuestion(Frozen):
    id: str
    text: str
    key_terms: list[str] = Field(default_factory=list)


class Source(Frozen):
    id: str
    uri: str
    title: str
    published_at: str | None = None
    updated_at: str | None = None
    status: str = ""
    kind: str = "document"
    authority: float = Field(default=0.5, ge=0.0, le=1.0)
    superseded_by: str = ""
    round: int = 1

    @property
    def latest_date(self) -> str | None:
        dates = [d for d in (self.published_at, self.updated_at) if d]
        return max(dates) if dates else None

    @property
    def superseded(self) -> bool:
        """Superseded by its own Status field (a ``Superseded-By:`` header alone is only a pointer)."""
        return self.status.strip().lower() == "superseded"


class Passage(Frozen):
    id: str
    source_id: str
    text: str
    section: str = ""
    query: str = ""
    sub_question: str = ""
    round: int = 1
    score: float = 0.0
    relevance: float = 1.0
    """Its document's relevance to the run's question, 0..1 (research.relevance); under
    ``RELEVANCE_FLOOR`` it is not evidence for the question."""


class Claim(Frozen):
    id: str
    text: str
    quote: str
    """Verbatim text of a cited passage that supports the claim (whitespace-normalized)."""
    sub_question: str
    passage_ids: list[str]
    source_ids: list[str]
    lens: Literal["ai", "swe", "synthesis"] = "ai"
    verified: bool | None = None
    verified_by: list[str] = Field(default_factory=list)
    """Passages of other sources that support the claim (chain-of-verification)."""
    verification_attempts: int = 0
    round: int = 1


def quote_in(quote: str, passages: Iterable[Passage]) -> bool:
    """Whether ``quote`` (whitespace-normalized, not empty) is in the text of one of ``passages``."""
    quote = normalize_space(quote)
    return bool(quote) and any(quote in normalize_space(p.text) for p in passages)


ContradictionKind = Literal["negation", "status", "numeric"]


class Contradiction(Frozen):
    claim_a: str
    claim_b: str
    kind: ContradictionKind
    sub_question: str
    critical: bool
    detail: str = ""


class EvidenceMap(Frozen):
    query: str
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    sources: dict[str, Source] = Field(default_factory=dict)
    passages: dict[str, Passage] = Field(default_factory=dict)
    claims: list[Claim] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    round: int = 0

    def with_updates(self, **changes: Any) -> EvidenceMap:
        return self.model_copy(update=changes)

    def add_retrieved(self, sources: list[Source], passages: list[Passage]) -> EvidenceMap:
        merged_sources = dict(self.sources)
        for source in sources:
            merged_sources.setdefault(source.id, source)
        merged_passages = dict(self.passages)
        for passage in passages:
            merged_passages.setdefault(passage.id, passage)
        return self.with_updates(sources=merged_sources, passages=merged_passages)

    def add_claims(self, claims: list[Claim]) -> EvidenceMap:
        known = {c.id for c in self.claims}
        texts = {normalize_space(c.text).lower() for c in self.claims}
        fresh = []
        for claim in claims:
            key = normalize_space(claim.text).lower()
            if claim.id in known or key in texts:
                continue
            known.add(claim.id)
            texts.add(key)
            fresh.append(claim)
        return self.with_updates(claims=[*self.claims, *fresh])

    def claim(self, claim_id: str) -> Claim | None:
        return next((c for c in self.claims if c.id == claim_id), None)

    def first_passage(self, claim: Claim) -> Passage | None:
        """The passage a claim cites first — the one its section heading and relevance are
        read from wherever the claim is shown or weighed — or None when it cites none this
        evidence holds."""
        return self.passages.get(claim.passage_ids[0]) if claim.passage_ids else None

    def cited_sources(self) -> list[Source]:
        ids = sorted({sid for claim in self.claims for sid in claim.source_ids})
        return [self.sources[sid] for sid in ids if sid in self.sources]

    def provenance_problems(self, claim: Claim) -> list[str]:
        """Why a claim cannot show its provenance (empty when it can)."""
        problems = []
        if not claim.passage_ids:
            problems.append(f"claim {claim.id} cites no passage")
        for pid in claim.passage_ids:
            if pid not in self.passages:
                problems.append(f"claim {claim.id} cites unknown passage {pid}")
        if claim.passage_ids and all(pid in self.passages for pid in claim.passage_ids):
            if not quote_in(claim.quote, (self.passages[pid] for pid in claim.passage_ids)):
                problems.append(f"claim {claim.id}: its quote is not in the passages it cites")
        return problems
