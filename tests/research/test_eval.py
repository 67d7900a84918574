"""The evaluation set is well formed, and a fixed subset of it meets the floors (issue 13 item 5).

``make eval`` runs all of it and prints the figures; here a few questions of each kind run
offline on the PEP corpus and the floors are asserted: gold-document recall ≥ 0.85, key-fact
recall ≥ 0.8, every quote faithful and every sentence cited, no flagged document cited as current.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from research.corpus import Corpus
from research.default_corpus import default_sources
from tests.research.eval.evaluate import (
    CORPORA,
    FINAL_ONLY,
    REPEATS_EARLIER_GOLD,
    SETS,
    SPLITS,
    STYLES,
    FinalSplitRefused,
    answer_text,
    evaluate,
    flagged_as_current,
    load_set,
    run_question,
    same_gold,
    stranded_sentences,
    totals,
)

pytestmark = pytest.mark.timeout(600)

SUBSETS: dict[str, tuple[tuple[str, ...], str]] = {
    "tuning": (
        (
            "pattern-matching-history",
            "async-await-evolution",
            "fstrings-rationale",
            "asyncio-vs-futures",
            "manylinux",
            "non-inheritable-fds",
        ),
        "print-function",
    ),
    "heldout": (("true-division", "secrets", "zoneinfo", "exception-notes"), "secrets"),
}
"""Per split: questions run in their own words, and the one also run in its five paraphrases.
The tuning subset has one question of each kind (history twice: it is the one that needs
references followed); the held-out one was chosen when the held-out split was written."""
FLOORS: dict[str, dict[str, float]] = {
    "tuning": {"gold_recall": 0.7, "precision": 0.9, "fact_recall": 0.7, "same_gold": 0.6},
    "heldout": {"gold_recall": 0.5, "precision": 0.55, "fact_recall": 1.0, "same_gold": 0.8},
}
"""Regression floors at the figures measured when issue 22's retrieval landed (the issue's
targets — gold recall 0.9, precision 0.8, same gold 0.9 on the held-out split — are not met
yet; see docs/research.md)."""


def test_the_evaluation_sets_are_well_formed(pep_corpus_path: Path) -> None:
    """Every split over both corpora: unique ids, five paraphrases each, every gold, related and
    flagged document in its corpus, no question asked again in a later split, and no fresh split's
    gold an earlier split's gold — but for the questions a split that may repeat gold
    (``REPEATS_EARLIER_GOLD``) marks category C, and exactly those."""
    sets = {(split, name): load_set(name, split) for split in SPLITS for name in CORPORA}
    assert len(sets["tuning", "peps"].questions) >= 40
    assert len(sets["tuning", "default"].questions) >= 15
    assert len(sets["heldout", "peps"].questions) >= 20
    assert len(sets["heldout", "default"].questions) >= 12
    assert len(sets["heldout2", "peps"].questions) >= 24
    assert len(sets["heldout2", "default"].questions) >= 14
    assert len(sets["heldout3", "peps"].questions) >= 30
    assert len(sets["heldout3", "default"].questions) >= 18
    assert len(sets["heldout4", "peps"].questions) >= 30
    assert len(sets["heldout4", "default"].questions) >= 18
    assert len(sets["heldout5", "peps"].questions) >= 30
    assert len(sets["heldout5", "default"].questions) >= 18
    default_ids = {f"python-docs/{c[0]}" for c in (read() for read in default_sources()) if c}
    with Corpus(pep_corpus_path) as corpus:
        for (split, name), eval_set in sets.items():
            ids = [q.id for q in eval_set.questions]
            assert len(ids) == len(set(ids)), (split, name)
            for question in eval_set.questions:
                assert sorted(question.paraphrases) == sorted(STYLES)
                assert split == "heldout" or len(question.facts) >= 1, question.id
                for ref in (*question.gold, *question.related, *question.flagged):
                    source_id = eval_set.source_id(ref)
                    known = (
                        corpus.document(source_id) is not None
                        if name == "peps"
                        else source_id in default_ids
                    )
                    assert known, (split, question.id, ref)
    for name in CORPORA:
        asked: dict[str, str] = {}
        for split in SPLITS:
            for question in sets[split, name].questions:
                text = question.question.lower()
                assert asked.setdefault(text, split) == split, (split, question.id)
    for fresh_split in sorted(FINAL_ONLY):
        earlier = SPLITS[: SPLITS.index(fresh_split)]
        for name in CORPORA:
            seen = {g for split in earlier for q in sets[split, name].questions for g in q.gold}
            repeating = {q.id for q in sets[fresh_split, name].questions if set(q.gold) & seen}
            marked = category_c_questions(SETS[fresh_split][name].read_text(encoding="utf-8"))
            allowed = marked if fresh_split in REPEATS_EARLIER_GOLD else set()
            assert repeating == allowed, (
                f"{fresh_split} {name}: questions on an earlier split's gold {sorted(repeating)}, "
                f"marked category C and allowed {sorted(allowed)}"
            )


def category_c_questions(source: str) -> set[str]:
    """Ids of the questions a split's file marks ``# category C`` (gold an earlier split's gold)."""
    return set(re.findall(r"^\s*# category C\s*\n\s*- id:\s*(\S+)", source, re.M))


def test_the_fresh_held_out_split_runs_only_when_the_work_is_final(tmp_path: Path) -> None:
    """heldout2 to heldout18 are refused without ``final=True`` — before any corpus is built or
    question run."""
    assert FINAL_ONLY == set(SPLITS) - {"tuning", "heldout"}
    for split in sorted(FINAL_ONLY):
        with pytest.raises(FinalSplitRefused, match=f"SPLIT={split} .*--final"):
            evaluate(list(CORPORA), split, folder=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_statement_that_leans_on_a_sentence_it_does_not_quote_is_counted_stranded() -> None:
    report = (
        "# Q\n\n## Summary\n\nPEP 634 specifies the match statement. [1] However, the new "
        "syntax came with its own problems. [2] [unverified] (PEP 622, superseded by PEP 634) "
        "It was rejected. [3]\n\n## Why?\n\nThe walrus operator binds names. [4] Its value is "
        "the assigned one, so this reads well. [5] The grammar is simple. It keeps one form. [6]"
        "\n\n## Sources\n\n1. However, sources are not statements. [1]\n"
    )
    assert stranded_sentences(report) == 3


@pytest.mark.parametrize("split", [s for s in SPLITS if s not in FINAL_ONLY])
def test_a_fixed_subset_of_each_split_meets_the_floors(
    split: str, pep_corpus_path: Path, tmp_path: Path
) -> None:
    """The floors of both splits (the held-out split runs here and at the end of a piece of
    retrieval work only, never while tuning)."""
    peps = load_set("peps", split)  # type: ignore[arg-type]
    ids, paraphrased = SUBSETS[split]
    wanted = set(ids) | {paraphrased}
    chosen = [q for q in peps.questions if q.id in wanted]
    assert len(chosen) == len(wanted)
    runs = [(q, "question") for q in chosen] + [
        (q, style) for q in chosen if q.id == paraphrased for style in STYLES
    ]
    scores = [
        asyncio.run(
            run_question("peps", peps, q, pep_corpus_path, tmp_path / f"{q.id}-{style}", style)
        )
        for q, style in runs
    ]
    total = totals(scores)
    floors = FLOORS[split]
    detail = {
        (s.id, s.style): (s.gold_recall, s.precision, s.missing_gold, s.off_topic) for s in scores
    }
    assert total.gold_recall >= floors["gold_recall"], detail
    assert total.precision >= floors["precision"], detail
    assert total.fact_recall >= floors["fact_recall"], detail
    assert total.paraphrase_agreement >= floors["same_gold"], detail
    assert total.faithfulness == 1.0, [
        (s.id, s.unfaithful_quotes, s.uncited_sentences, s.stranded_sentences) for s in scores
    ]
    assert total.flagged_as_current == 0, [(s.id, s.flagged_as_current) for s in scores]
    assert all(1 <= s.rounds <= 4 for s in scores)


def test_a_key_fact_counts_only_when_the_answer_says_it_not_the_title_or_source_list() -> None:
    """The title repeats the question and the source list every cited document's title and
    status: a fact found only there was never answered."""
    report = (
        "# Why were assignment expressions added?\n\n## Summary\n\nNames bind inside a"
        " comprehension. [1]\n\n## Why?\n\nIt saves a line. [1]\n\n## Sources\n\n1. PEP 572"
        " Assignment Expressions, Final\n\n## Quality\n\nwalrus 1.00\n"
    )
    answer = answer_text(report).lower()
    assert "names bind inside a comprehension" in answer and "saves a line" in answer
    assert not any(fact in answer for fact in ("assignment expressions", "final", "walrus"))


def test_a_paraphrase_agrees_only_when_it_brings_back_the_gold_its_question_found() -> None:
    pep = frozenset({"peps/pep-0572"})
    assert same_gold(pep, frozenset({"peps/pep-0572"}))
    assert not same_gold(pep, frozenset())
    assert not same_gold(frozenset(), frozenset()), "a shared miss is not agreement"


def test_a_flagged_citation_counts_only_its_own_markers_not_quoted_code() -> None:
    """``obj[2]`` in a quoted example is indexing, not citation 2; a run of markers shares
    the status note that follows it."""
    report = (
        "# Q\n\n## Summary\n\n- It returns obj[2] if valid, else a default. — PEP 769 [1] "
        "[unverified] (PEP 769, rejected)\n- Both getters take it. [1][2] (PEP 769, rejected)\n"
        "- A later form. [3] and again [2]\n\n## Sources\n\n2. PEP 769 [2]\n"
    )
    citations = [
        {"number": 1, "source_id": "peps/pep-0769"},
        {"number": 2, "source_id": "peps/pep-0769"},
        {"number": 3, "source_id": "peps/pep-0001"},
    ]
    assert flagged_as_current(report, citations, {"peps/pep-0769"}) == 1
