"""From selection to citation (issue 22): which claims the report keeps.

The report's choice among a section's claims weighed nothing of how the run's selection ranked
their documents, so a claim of a document at the relevance floor could take a section's place
from one of the document the selection ranked first.
"""

from __future__ import annotations

from typing import Any

from research.extractive import synthesize

SUB_QUESTION = {"id": "q1", "text": "How do I run a module as a script?", "key_terms": []}


def chosen(relevance: dict[str, float]) -> list[str]:
    """The one claim a section keeps of two that match the sub-question alike."""
    claims: list[dict[str, Any]] = [
        {
            "id": f"r1-ai-{n}",
            "text": f"The {name} module can run a module as a script.",
            "sub_question": "q1",
            "verified": False,
            "source_ids": [source],
            "section": "",
            "relevance": relevance[source],
        }
        for n, (name, source) in enumerate((("runpy", "runpy"), ("pydoc", "pydoc")), start=1)
    ]
    answer = synthesize({"sub_questions": [SUB_QUESTION], "claims": claims, "max_per_section": 1})
    return [cid for section in answer.sections for cid in section.claim_ids]


def test_the_report_keeps_the_claim_of_the_document_the_selection_ranked_first() -> None:
    assert chosen({"runpy": 1.0, "pydoc": 0.8}) == ["r1-ai-1"]
    assert chosen({"runpy": 0.8, "pydoc": 1.0}) == ["r1-ai-2"]
