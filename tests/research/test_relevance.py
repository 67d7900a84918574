"""Relevance, honest scores and the question's understanding (issue 22).

Off-topic evidence scores Low and the gate fails, whatever its volume; the embedding model
loads from its package folder without touching the network; unchanged documents are not
embedded again; sub-questions are never built around the corpus's domain word; a model's prose
keeps only sentences that cite the claims they were given.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from research.brief import checked_prose
from research.ci import WEIGHT_SETS
from research.corpus import Corpus, CorpusRetriever
from research.embeddings import DIMENSIONS, Embedder, package_folder
from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.hybrid import SearchFilters, question_evidence
from research.policy import decide
from research.questions import plan, sub_questions
from research.relevance import (
    HEAD_FLOOR,
    HEAD_MARGIN,
    PASSAGE_CANDIDATES,
    PASSAGE_FLOOR,
    RELEVANCE_FLOOR,
    DocumentEvidence,
    asked,
    candidate_phrases,
    relevance,
    symbol_runs,
)
from research.scoring import score_evidence
from research.sources import SourcePolicy
from tests.research.conftest import run_research

POLICY = SourcePolicy(as_of="2025-06-30", window_days=None)


def evidence_of(relevance: float) -> EvidenceMap:
    """Four sub-questions, each answered by two verified claims from two Final documents whose
    passages have ``relevance`` to the question."""
    sources = {
        f"c/{n}": Source(id=f"c/{n}", uri="", title=f"Doc {n}", status="Final", authority=1.0)
        for n in range(8)
    }
    passages = {
        f"c/{n}#0": Passage(
            id=f"c/{n}#0", source_id=f"c/{n}", text=f"Statement number {n}.", relevance=relevance
        )
        for n in range(8)
    }
    claims = [
        Claim(
            id=f"k{n}",
            text=f"Statement number {n}.",
            quote=f"Statement number {n}.",
            sub_question=f"q{n // 2 + 1}",
            passage_ids=[f"c/{n}#0"],
            source_ids=[f"c/{n}"],
            verified=True,
        )
        for n in range(8)
    ]
    return EvidenceMap(
        query="q?",
        sub_questions=[SubQuestion(id=f"q{i}", text=f"Q{i}?") for i in range(1, 5)],
        sources=sources,
        passages=passages,
        claims=claims,
    )


def test_a_round_whose_evidence_is_off_topic_scores_low_and_fails_the_gate() -> None:
    on_topic = score_evidence(evidence_of(1.0), POLICY)
    assert on_topic.scores.all_at_least("High")
    assert decide(
        on_topic, 1, [], max_rounds=4, patience=1, weights=WEIGHT_SETS["proposed"]
    ).gate_passed
    off_topic = score_evidence(evidence_of(RELEVANCE_FLOOR - 0.01), POLICY)
    assert off_topic.scores.tiers()["coverage"] == "Low"
    assert off_topic.scores.tiers()["source_quality"] == "Low"
    assert off_topic.scores.tiers()["agreement"] == "Low"
    verdict = decide(off_topic, 1, [], max_rounds=4, patience=1, weights=WEIGHT_SETS["proposed"])
    assert not verdict.gate_passed
    assert verdict.decision == "continue"


def test_a_question_the_corpus_has_nothing_on_reads_nothing_and_says_so(
    workflow, pep_corpus_path: Path, tmp_path: Path
) -> None:
    run = asyncio.run(
        run_research(workflow, tmp_path, pep_corpus_path, "How do I bake sourdough bread at home?")
    )
    assert run.outputs("source_policy")["on_topic"] == {}
    assert not any(r["gate_passed"] for r in run.rounds)
    assert all(r["dimensions"]["coverage"]["tier"] == "Low" for r in run.rounds)
    report = run.outputs("final_synthesis")["report"]
    assert "The corpus has little on" in report
    assert run.outputs("final_synthesis")["citations"] == []


def test_cited_passages_carry_their_relevance_in_sources_and_step_outputs(
    workflow, pep_corpus_path: Path, tmp_path: Path
) -> None:
    run = asyncio.run(
        run_research(workflow, tmp_path, pep_corpus_path, "What are assignment expressions?")
    )
    synthesis = run.outputs("final_synthesis")
    assert synthesis["citations"]
    assert all(c["relevance"] >= RELEVANCE_FLOOR for c in synthesis["citations"])
    assert {c["source_id"] for c in synthesis["citations"]} <= set(
        run.outputs("source_policy")["on_topic"]
    )
    assert "peps/pep-0572" in {c["source_id"] for c in synthesis["citations"]}
    assert "relevance 1.00" in synthesis["report"].split("## Sources", 1)[1]
    assert "Evidence brief (extractive)" in synthesis["report"]
    retrieved = run.outputs("retrieval_react_r1")
    assert retrieved["new_passages"] and all(
        p["relevance"] >= RELEVANCE_FLOOR for p in retrieved["relevance"]
    )


def test_the_embedding_model_loads_from_its_package_without_the_network(no_network: None) -> None:
    sys.modules.pop("wordllama", None)
    model = Embedder(package_folder())
    vectors = model.embed(["structural pattern matching", "the match statement", ""])
    assert vectors.shape == (3, DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any()
    assert float(vectors[0] @ vectors[1]) > 0.3
    assert "wordllama" not in sys.modules, "importing wordllama configures the root logger"


def test_reindexing_unchanged_documents_embeds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(3):
        (folder / f"d{n}.md").write_text(
            f"# Widget {n}\n\nWidgets of kind {n} are assembled from sprockets.\n" * 5,
            encoding="utf-8",
        )
    embedded: list[int] = []
    real = Embedder.embed

    def counted(self: Embedder, texts: list[str]) -> np.ndarray:
        embedded.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(Embedder, "embed", counted)
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(folder, "docs")
        first = sum(embedded)
        assert first >= 3
        embedded.clear()
        again = corpus.add_folder(folder, "docs")
        assert again.unchanged == 3 and sum(embedded) == 0
        stored = corpus._db.execute("SELECT COUNT(*) FROM passage_vectors").fetchone()[0]
        assert stored == first
        (folder / "d1.md").write_text("# Widget one\n\nNow about gears only.\n", encoding="utf-8")
        embedded.clear()
        corpus.add_folder(folder, "docs")
        assert sum(embedded) == 1
        hits = asyncio.run(CorpusRetriever(corpus).search("gears", limit=3))
        assert hits[0]["source_id"] == "docs/d1"
        assert {"similarity", "lexical", "score"} <= set(hits[0])


@pytest.mark.parametrize(
    "question",
    [
        "How did Python add the walrus operator?",
        "How does Python handle exceptions raised inside generators?",
        "Why does Python have a global interpreter lock?",
        "What is Python?",
        "why python",
    ],
)
def test_no_sub_question_is_built_around_the_corpus_domain_word(
    question: str, pep_corpus_path: Path
) -> None:
    with Corpus(pep_corpus_path) as corpus:
        vocabulary = corpus.vocabulary(question, ["peps"])
    assert vocabulary["python"] >= 0.5
    understood = plan(question, vocabulary)
    assert understood.subject.lower() not in {"python", "the python"}
    planned = sub_questions(understood, 4)
    assert (
        planned[0][1].rstrip("?.") == question.rstrip("?.")[:1].upper() + question.rstrip("?.")[1:]
    )
    for _, text, _ in planned[1:]:
        assert "about Python?" not in text and "motivated Python?" not in text
        assert text.endswith("?")


def test_a_question_with_typos_reaches_the_document_it_means(pep_corpus_path: Path) -> None:
    with Corpus(pep_corpus_path) as corpus:
        for question in ("What are assignment expressions?", "What are asignment expresions?"):
            relevance = corpus.relevance(question, ["peps"])
            assert relevance.get("peps/pep-0572", 0.0) >= RELEVANCE_FLOOR, question


def test_misspelt_words_are_corrected_against_the_corpus_and_rare_real_words_kept(
    pep_corpus_path: Path,
) -> None:
    """A typo the corpus itself holds once ("wiht") is corrected too; a rare word the corpus
    holds in several passages ("walrus") is not a typo."""
    with Corpus(pep_corpus_path) as corpus:
        assert corpus.corrected("the wiht statment") == "the with statement"
        assert corpus.corrected("What are tpye hints?") == "What are type hints?"
        assert corpus.corrected("the walrus operator") == "the walrus operator"


def test_a_word_of_the_english_language_is_never_a_typo(pep_corpus_path: Path) -> None:
    """Words the PEPs hardly hold but English does are kept ("baking powder" is not "naming
    power"): corrected, a question the corpus has nothing on would find documents it is not
    about. A misspelling in the same question is still corrected."""
    with Corpus(pep_corpus_path) as corpus:
        question = "How much baking powder goes into a sourdough loaf wiht a tpye hint?"
        assert corpus.corrected(question) == (
            "How much baking powder goes into a sourdough loaf with a type hint?"
        )
        # an entry the word list counts rarely is a typo, and a capital letter is kept
        assert corpus.corrected("Objet pickling") == "Object pickling"


def test_a_rare_word_of_the_question_finds_the_document_whose_title_lacks_it(
    pep_corpus_path: Path,
) -> None:
    """Dozens of titles say "operator"; only the few documents holding "walrus" are about it."""
    with Corpus(pep_corpus_path) as corpus:
        relevance = corpus.relevance("What is the walrus operator?", ["peps"])
    assert relevance.get("peps/pep-0572", 0.0) >= RELEVANCE_FLOOR
    assert not any(
        score >= RELEVANCE_FLOOR
        for source, score in relevance.items()
        if source in ("peps/pep-0465", "peps/pep-0335", "peps/pep-0532")
    )


def test_the_question_after_a_preamble_is_what_is_asked_with_the_sentence_before_it() -> None:
    """The preamble's earlier sentences say why a person asks; the sentence just before the
    question is what it points back at ("How do I do that …?")."""
    text = (
        "My crawler runs on a server with no IDE. I want to pause at a line and look at the "
        "locals. How do I do that with what comes with Python?"
    )
    assert asked(text) == (
        "I want to pause at a line and look at the locals. "
        "How do I do that with what comes with Python?"
    )
    two = "I maintain an old codebase full of callbacks. How did async and await evolve?"
    assert asked(two) == two
    assert asked("What is a wheel?") == "What is a wheel?"
    assert asked("Tell me about wheels. Why?") == "Tell me about wheels. Why?"


def test_phrases_and_operators_of_a_question() -> None:
    phrases = candidate_phrases("What are keyword-only arguments?")
    assert "keyword only arguments" in phrases and "keyword only" in phrases
    assert not any(p.startswith(("what", "are")) for p in phrases)
    assert "inside a" not in candidate_phrases("what does yield from do inside a generator")
    assert symbol_runs("Why was the := operator added, and what does -> mean?") == [":=", "->"]


def test_a_models_prose_keeps_only_sentences_that_cite_the_claims_it_was_given() -> None:
    kept, dropped = checked_prose(
        "Pattern matching came in 3.10 [r1-ai-1]. It was debated at length [r1-ai-2] [r1-swe-1]. "
        "Everyone loved it. It cites a stranger [r9-ai-9].",
        {"r1-ai-1": 1, "r1-ai-2": 2, "r1-swe-1": 3},
    )
    assert kept == ["Pattern matching came in 3.10. [1]", "It was debated at length. [2] [3]"]
    assert dropped == 2


def test_a_document_whose_best_passage_reads_like_the_question_is_about_it(
    pep_corpus_path: Path,
) -> None:
    """The sentence encoder reads the best passage of each of the search's 20 best documents (a
    user's wording often names one section, not what the whole document is about); a document
    whose passage is as close to the question as the best one's is about the question even when
    it holds few of the question's rare words — without that piece of evidence it is not."""
    question = "Which methods does my class need so that a for loop can go over it?"
    with Corpus(pep_corpus_path) as corpus:
        evidence = question_evidence(
            corpus._db, corpus.vectors(), question, SearchFilters(collections=["peps"])
        )
    read = [e for e in evidence if e.passage_similarity is not None]
    assert len(read) == PASSAGE_CANDIDATES < len(evidence)
    best = max(e.passage_similarity or 0.0 for e in read)
    best_head = max(e.head_similarity or 0.0 for e in evidence)
    # a candidate whose head is near enough, stripped of every rare word of the question
    near = next(
        e
        for e in sorted(read, key=lambda e: -(e.head_similarity or 0.0))
        if 0 < relevance(evidence)[e.source_id]
        and (e.head_similarity or 0.0) < best_head - HEAD_MARGIN
    )
    wordless = replace(near, terms=0.0, passage_similarity=best)
    others = [e for e in evidence if e.source_id != near.source_id]
    assert relevance([*others, wordless])[near.source_id] > 0
    assert relevance([*others, replace(wordless, passage_similarity=None)])[near.source_id] == 0


def test_a_passage_like_the_question_speaks_for_the_corpus_when_no_head_does() -> None:
    """A question about one detail of a document ("my NamedTemporaryFile disappears as soon as I
    close it") reads like the passage that answers it and like no document's head: when no head
    reaches the head floor, a best passage at the passage floor still says the corpus has
    something on the question; under both floors it has nothing."""

    def candidate(source: str, head: float, passage: float) -> DocumentEvidence:
        return DocumentEvidence(
            source_id=source,
            collection="docs",
            passages=1.0,
            best_similarity=0.4,
            title_similarity=0.3,
            title_coverage=0.0,
            terms=0.5,
            head_similarity=head,
            passage_similarity=passage,
        )

    detail = candidate("detail", HEAD_FLOOR - 0.07, PASSAGE_FLOOR + 0.08)
    other = candidate("other", HEAD_FLOOR - 0.1, PASSAGE_FLOOR - 0.15)
    assert relevance([detail, other])["detail"] >= RELEVANCE_FLOOR
    at_the_floor = replace(detail, passage_similarity=PASSAGE_FLOOR)
    assert relevance([at_the_floor, other])["detail"] >= RELEVANCE_FLOOR
    below = replace(detail, passage_similarity=PASSAGE_FLOOR - 0.01)
    assert relevance([below, other]) == {"detail": 0.0, "other": 0.0}
