"""Reports honest about what they are: an extractive brief of quoted statements offline (no
stranded sentences, flagged sources, relevance, a timeline), checked prose from a model."""

from __future__ import annotations

import re

import pytest

from research.ci import weights_named
from research.coalesce import coalesce
from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.extractive import claim_candidates, clean_sentence
from research.matrix import DimensionScores
from research.policy import RoundRecord
from research.report import citations_for, ordered_claims, quality_metadata, render_report
from research.sources import SourcePolicy
from research.tasks import SynthesisAnswer, SynthesisSection
from research.text import depends_on_context
from tests.research.eval.evaluate import flagged_as_current, uncited_sentences

pytestmark = pytest.mark.timeout(30)

OLD = Source(
    id="peps/pep-0622",
    uri="file:///622",
    title="Structural Pattern Matching",
    published_at="2020-06-23",
    status="Superseded",
    authority=0.5,
    superseded_by="634",
)
NEW = Source(
    id="peps/pep-0634",
    uri="file:///634",
    title="Structural Pattern Matching: Specification",
    published_at="2020-09-12",
    status="Final",
    authority=1.0,
)
OLD_TEXT = (
    "This PEP proposes adding pattern matching statements to Python. "
    "However, this new syntax came with its own set of problems."
)
NEW_TEXT = "A match statement takes an expression and compares it to successive patterns."


def _claim(cid: str, text: str, source: Source, passage: str, verified: bool = True) -> Claim:
    return Claim(
        id=cid,
        text=text,
        quote=text,
        sub_question="q1",
        passage_ids=[passage],
        source_ids=[source.id],
        verified=verified,
    )


def _evidence() -> EvidenceMap:
    return EvidenceMap(
        query="What is the history of structural pattern matching?",
        sub_questions=[SubQuestion(id="q1", text="Which proposals introduced it, and when?")],
        sources={OLD.id: OLD, NEW.id: NEW},
        passages={
            "peps/pep-0622#0": Passage(id="peps/pep-0622#0", source_id=OLD.id, text=OLD_TEXT),
            "peps/pep-0634#0": Passage(id="peps/pep-0634#0", source_id=NEW.id, text=NEW_TEXT),
        },
        claims=[
            _claim(
                "k1",
                "This PEP proposes adding pattern matching statements to Python.",
                OLD,
                "peps/pep-0622#0",
            ),
            _claim("k2", NEW_TEXT, NEW, "peps/pep-0634#0", verified=False),
            _claim(
                "k3",
                "However, this new syntax came with its own set of problems.",
                OLD,
                "peps/pep-0622#0",
            ),
        ],
    )


def _report(
    kind: str, synthesis: SynthesisAnswer | None = None
) -> tuple[str, list[dict[str, object]]]:
    evidence = _evidence()
    scores = DimensionScores(
        coverage=1.0, source_quality=0.75, agreement=1.0, verification=0.5, recency=1.0
    )
    record = RoundRecord(round=1, scores=scores, ci=0.8, recent_sources=0, recent_floor=0)
    coalesced = coalesce([record], weights_named("equal"), "equal")
    quality = quality_metadata(coalesced, [record], SourcePolicy(as_of="2025-06-30"), "x", True)
    sections = ordered_claims(evidence, synthesis)
    citations = citations_for(evidence, sections)
    report = render_report(evidence, synthesis, citations, sections, quality, True, kind=kind)
    return report, [c.model_dump() for c in citations]


def test_without_a_model_the_answer_is_a_labelled_brief_of_quoted_statements() -> None:
    report, citations = _report("definition")
    assert "Evidence brief (extractive)" in report
    section = report.split("## Which proposals introduced it, and when?\n\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- PEP 622 proposes adding pattern matching statements to Python. — PEP 622, "
        "2020-06-23, relevance 1.00 [1] (PEP 622, superseded by PEP 634)",
        "- A match statement takes an expression and compares it to successive patterns. — "
        "PEP 634, 2020-09-12, relevance 1.00 [2] [unverified]",
    ]
    assert "However" not in report.split("## Sources")[0], "a stranded 'However' stays out"
    assert [c["claim_id"] for c in citations] == ["k1", "k2"]
    assert uncited_sentences(report) == 0


def test_with_a_model_prose_is_kept_only_where_each_sentence_cites_its_claims() -> None:
    synthesis = SynthesisAnswer(
        summary="Pattern matching was first proposed in PEP 622 [k1].",
        sections=[
            SynthesisSection(
                sub_question="q1",
                claim_ids=["k1", "k2"],
                prose="PEP 622 first proposed it [k1]. Its match statement compares patterns "
                "[k2]. It was loved by all.",
            )
        ],
    )
    report, _ = _report("definition", synthesis)
    assert "Evidence brief" not in report
    section = report.split("## Which proposals introduced it, and when?\n\n")[1].split("\n\n")[0]
    assert section == "PEP 622 first proposed it. [1] Its match statement compares patterns. [2]"
    assert "Pattern matching was first proposed in PEP 622. [1]" in report
    assert "1 sentence(s) of the model's prose cited no claim" in report
    assert uncited_sentences(report) == 0


def test_superseded_sources_say_so_where_cited_and_sources_are_a_list() -> None:
    report, citations = _report("definition")
    assert "[1] (PEP 622, superseded by PEP 634)" in report
    assert "[2] [unverified]" in report and "[2] [unverified] (" not in report
    assert flagged_as_current(report, citations, {OLD.id}) == 0
    sources = report.split("## Sources\n\n")[1].split("## Quality")[0]
    items = re.findall(r"^(\d+)\. \*\*(.+?)\*\* \((.+?)\) — `(.+?)`$", sources, re.M)
    assert [i[0] for i in items] == ["1", "2"]
    assert items[0][2] == ("PEP 622; Superseded; superseded by PEP 634; 2020-06-23; relevance 1.00")
    assert "   > This PEP proposes adding pattern matching statements to Python." in sources


def test_history_questions_get_a_dated_timeline() -> None:
    report, _ = _report("history")
    timeline = report.split("## Timeline\n\n")[1].split("\n\n")[0].splitlines()
    assert timeline == [
        "- **2020-06-23** — PEP 622, Structural Pattern Matching "
        "(Superseded, superseded by PEP 634) [1]",
        "- **2020-09-12** — PEP 634, Structural Pattern Matching: Specification (Final) [2]",
    ]
    assert "## Timeline" not in _report("definition")[0]


def test_the_built_in_model_quotes_a_leaning_sentence_with_the_one_before_it() -> None:
    passage = {"id": "p", "source_id": "s", "text": OLD_TEXT + "\n\nIt is fast. They are slow."}
    found = claim_candidates(passage)
    assert found[0] == "This PEP proposes adding pattern matching statements to Python."
    assert found[1] == OLD_TEXT, "'However, …' travels with the sentence it answers"
    assert all(not depends_on_context(c) or c == OLD_TEXT for c in found)
    assert not any(c.startswith("They are slow") for c in found)
    assert clean_sentence("Please refer to :pep:`600` for the rationale.") == (
        "Please refer to PEP 600 for the rationale."
    )
