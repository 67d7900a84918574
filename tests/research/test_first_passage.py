"""A claim's first passage is looked up in one place (EvidenceMap.first_passage): the synthesis
inputs, the brief's line and the report's citations all read its section and relevance from it."""

from __future__ import annotations

from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.report import citations_for, cited

LAMPS = Source(id="docs/lamps", uri="file:///lamps", title="Lamps", status="Final")


def _passage(number: int, text: str, section: str, relevance: float) -> Passage:
    return Passage(
        id=f"{LAMPS.id}#{number}",
        source_id=LAMPS.id,
        text=text,
        section=section,
        relevance=relevance,
    )


FIRST = _passage(0, "A lamp is switched on at dusk by its controller.", "schedule", 0.9)
SECOND = _passage(1, "A lamp is switched on at dusk by its controller, or by hand.", "switch", 0.4)


def _claim(passage_ids: list[str]) -> Claim:
    return Claim(
        id="k1",
        text="A lamp is switched on at dusk by its controller.",
        quote="A lamp is switched on at dusk by its controller.",
        sub_question="q1",
        passage_ids=passage_ids,
        source_ids=[LAMPS.id],
    )


def _evidence(claim: Claim) -> EvidenceMap:
    return EvidenceMap(
        query="When is a garden lamp switched on?",
        sub_questions=[SubQuestion(id="q1", text="When is a garden lamp switched on?")],
        sources={LAMPS.id: LAMPS},
        passages={FIRST.id: FIRST, SECOND.id: SECOND},
        claims=[claim],
    )


def test_a_claims_first_passage_is_the_one_it_cites_first() -> None:
    claim = _claim([FIRST.id, SECOND.id])
    assert _evidence(claim).first_passage(claim) == FIRST
    later = _claim([SECOND.id, FIRST.id])
    assert _evidence(later).first_passage(later) == SECOND


def test_a_claim_citing_no_passage_the_evidence_holds_has_none() -> None:
    for passage_ids in ([], ["docs/lamps#9"]):
        claim = _claim(passage_ids)
        assert _evidence(claim).first_passage(claim) is None


def test_the_brief_and_the_citations_show_the_first_passages_section_and_relevance() -> None:
    claim = _claim([FIRST.id, SECOND.id])
    evidence = _evidence(claim)
    line = cited(1, claim, evidence)
    assert "`schedule`" in line and "relevance 0.90" in line
    (citation,) = citations_for(evidence, {"q1": [claim]})
    assert (citation.passage_id, citation.relevance) == (FIRST.id, 0.9)
