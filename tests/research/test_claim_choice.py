"""Claim choice follows the run's selection: of two on-topic documents, the one the selection
ranked first is the one quoted (issue 22, eighth pass) — real PEP text, the built-in analyst."""

from __future__ import annotations

from typing import Any

import pytest

from research.extractive import analyze
from research.relevance import RELEVANCE_FLOOR
from tests.research.conftest import PEPS

QUESTION = "Why did Python add assignment expressions?"


def pep_passages(number: int) -> list[dict[str, Any]]:
    source = f"pep-{number:04d}"
    text = (PEPS / f"{source}.rst").read_text(encoding="utf-8")
    paragraphs = [p for p in text.split("\n\n") if len(p) > 200 and "assignment" in p.lower()]
    return [
        {"id": f"{source}#{i}", "source_id": source, "title": source, "authority": 0.5, "text": p}
        for i, p in enumerate(paragraphs[:4])
    ]


def quoted_sources(selection: dict[str, float]) -> set[str]:
    if not PEPS.is_dir():
        pytest.skip(f"the PEP corpus is not at {PEPS}")
    answer = analyze(
        {
            "lens": "ai",
            "query": QUESTION,
            "subject": "",
            "sub_questions": [{"id": "q1", "text": QUESTION}],
            "passages": pep_passages(572) + pep_passages(379),
            "known_claims": [],
            "max_claims_per_sub_question": 1,
            "selection": selection,
        }
    )
    return {p.split("#")[0] for claim in answer.claims for p in claim.passage_ids}


@pytest.mark.parametrize("first, second", [("pep-0572", "pep-0379"), ("pep-0379", "pep-0572")])
def test_the_document_the_selection_ranked_first_is_the_one_quoted(first: str, second: str) -> None:
    assert quoted_sources({first: 1.0, second: RELEVANCE_FLOOR}) == {first}
