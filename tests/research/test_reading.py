"""A run reads every document its anchor search judged about the question (issue 22, item 1).

The anchor search selects the documents about the question; the run's later searches rank
passages across them. Before, a selected document could go unread: one document's many
matching passages took every slot, and a rejected or withdrawn proposal — authority under the
floor — was never admitted at all, though it is the document that answers "why doesn't Python
have …?". Then the run cited something other than what the anchor found, or nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.spec import WorkflowDefinition
from research.sources import authority_of
from research.steps.intake import MIN_SOURCE_AUTHORITY
from tests.research.conftest import run_research


def test_every_selected_document_is_read_and_a_rejected_proposal_is_cited_as_rejected(
    workflow: WorkflowDefinition, pep_corpus_path: Path, tmp_path: Path
) -> None:
    run = asyncio.run(
        run_research(
            workflow, tmp_path / "ws", pep_corpus_path, "How do I sort a dictionary by its values?"
        )
    )
    on_topic = run.outputs("source_policy")["on_topic"]
    assert "peps/pep-0265" in on_topic, on_topic  # "Sorting Dictionaries by Value", rejected
    assert authority_of("Rejected", "") < MIN_SOURCE_AUTHORITY
    read = {r["source_id"] for r in run.outputs("retrieval_react_r1")["relevance"]}
    assert set(on_topic) <= read, (on_topic, read)

    synthesis = run.outputs("final_synthesis")
    assert synthesis["delivered"]
    cited = {c["number"] for c in synthesis["citations"] if c["source_id"] == "peps/pep-0265"}
    assert cited
    report = (tmp_path / "ws" / "runs" / run.result.run_id / "report.md").read_text()
    answer = report.split("## Sources", 1)[0]
    for number in cited:
        for line in (line for line in answer.splitlines() if f"[{number}]" in line):
            assert "(PEP 265, rejected)" in line, line


def test_a_question_about_a_proposals_fate_is_answered_not_withheld(
    workflow: WorkflowDefinition, pep_corpus_path: Path, tmp_path: Path
) -> None:
    """Its words cut no noun phrase ("None a callable object that returns None rejected"), so the
    question is the only sub-question: facets built around the cut found nothing of their own,
    their coverage fell under the quality floor and the report that had found PEP 336 was
    withheld."""
    question = "Why was the proposal to make None a callable object that returns None rejected?"
    run = asyncio.run(run_research(workflow, tmp_path / "ws", pep_corpus_path, question))
    planned = run.outputs("intake_scope")["sub_questions"]
    assert [q["text"] for q in planned] == [question]
    synthesis = run.outputs("final_synthesis")
    assert synthesis["confidence_level"] != "insufficient" and synthesis["delivered"]
    assert "peps/pep-0336" in {c["source_id"] for c in synthesis["citations"]}
