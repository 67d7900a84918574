"""Which sentence the built-in analysts quote: the run's selection ranking weighs in (issue 22).

A sub-question's few terms are a narrow view of the question; the run's selection ranked each
document against the whole of it (a passage's ``relevance``). A document at the relevance floor
whose short sentence repeats the sub-question's words must not win over the document the
selection ranked first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research.corpus import Corpus
from research.extractive import SELECTION_WEIGHT, analyze, selection_weight

TOP, FLOOR = "peps/pep-0572", "peps/pep-0379"
"""PEP 572 (Assignment Expressions, Final) and PEP 379 (Adding an Assignment Expression,
Withdrawn), whose opening sentence repeats "assignment" and "expression" more tightly."""
SUB_QUESTION = {"id": "q1", "text": "What is an assignment expression?"}


def passages(corpus_path: Path, relevance: dict[str, float]) -> list[dict[str, Any]]:
    """Each document's two best passages for the sub-question's words, as an analyst sees them."""
    found = []
    with Corpus(corpus_path) as corpus:
        for source in (TOP, FLOOR):
            for hit in corpus.search(
                "assignment expression", limit=2, collections=["peps"], within=[source]
            ):
                found.append(
                    {
                        "id": hit["passage_id"],
                        "source_id": source,
                        "title": hit.get("title", ""),
                        "status": hit.get("status", ""),
                        "authority": hit.get("authority", 0.5),
                        "relevance": relevance[source],
                        "section": hit.get("section", ""),
                        "text": hit["text"],
                    }
                )
    return found


def quoted(corpus_path: Path, relevance: dict[str, float]) -> list[str]:
    answer = analyze(
        {
            "lens": "ai",
            "subject": "",
            "sub_questions": [{**SUB_QUESTION, "key_terms": ["assignment", "expression"]}],
            "passages": passages(corpus_path, relevance),
            "max_claims_per_sub_question": 1,
        }
    )
    return [p.split("#")[0] for claim in answer.claims for p in claim.passage_ids]


def test_the_document_the_selection_ranked_first_is_quoted(pep_corpus_path: Path) -> None:
    assert quoted(pep_corpus_path, {TOP: 1.0, FLOOR: 0.8}) == [TOP]


def test_the_ranking_not_the_document_decides(pep_corpus_path: Path) -> None:
    """Ranked the other way round, the same sentences give the other document's claim."""
    assert quoted(pep_corpus_path, {TOP: 0.8, FLOOR: 1.0}) == [FLOOR]


def test_a_passage_without_a_relevance_weighs_nothing() -> None:
    """Only the selection's ranking adds weight: a passage no selection ranked gains none, as one
    at the relevance floor gains none, and the top-ranked one gains the whole weight."""
    assert selection_weight({"id": "a#1", "text": "Some text."}) == 0.0
    assert selection_weight({"id": "a#1", "text": "Some text.", "relevance": 0.8}) == 0.0
    assert (
        selection_weight({"id": "a#1", "text": "Some text.", "relevance": 1.0}) == SELECTION_WEIGHT
    )
