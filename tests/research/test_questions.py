"""Understanding the question: its kind, its subject, and sub-questions that read as sentences."""

from __future__ import annotations

import re

import pytest

from research.extractive import scope
from research.questions import gerund, plan, sub_questions

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "question,kind,subject",
    [
        ("How has the import system changed over the years?", "history", "import system"),
        ("timeline of the walrus operator", "history", "walrus operator"),
        ("Tell me the history of type annotations", "history", "type annotations"),
        (
            "What is the difference between bytes and bytearray?",
            "comparison",
            "bytes and bytearray",
        ),
        ("threading vs multiprocessing", "comparison", "threading vs multiprocessing"),
        ("Should I use attrs or dataclasses?", "comparison", "attrs or dataclasses"),
        ("How do I read a config file?", "how_to", "reading a config file"),
        ("how to set up a virtual environment", "how_to", "setting up a virtual environment"),
        ("Why does Python have a GIL?", "rationale", "Python"),
        ("What was the motivation for the walrus operator?", "rationale", "walrus operator"),
        ("Is distutils still supported?", "status", "distutils"),
        ("What is the current state of the stable ABI?", "status", "stable ABI"),
        ("What are descriptors?", "definition", "descriptors"),
        ("How does the garbage collector work in CPython?", "definition", "garbage collector"),
        ("WSGI web server gateway interface", "definition", "WSGI web server gateway interface"),
    ],
)
def test_questions_are_classified_and_their_subject_cut(
    question: str, kind: str, subject: str
) -> None:
    understood = plan(question)
    assert understood.kind == kind
    assert understood.subject.removeprefix("the ") == subject


def test_a_comparison_names_both_sides_in_its_sub_questions() -> None:
    texts = [t for _f, t, _k in sub_questions(plan("Compare generators and iterators"), 4)]
    assert texts == [
        "Compare generators and iterators.",
        "What do the documents say about generators?",
        "What do the documents say about iterators?",
        "How do generators and iterators differ?",
    ]


def test_sub_questions_read_as_sentences() -> None:
    """No template glue left over ("What is X evolve …"), the question itself first, one mark."""
    for question in (
        "How did async and await evolve?",
        "history of structural pattern matching",
        "What are type hints?",
        "How do I parse a TOML file?",
        "Why was print made a function?",
        "What is the status of the GIL?",
    ):
        for _facet, text, _terms in sub_questions(plan(question), 5):
            assert text[0].isupper() and text[-1] in "?." and text.count("?") <= 1, text
            assert not re.search(r"\b(evolve|come|did)\b.*\band what does it define\b", text)
            assert "  " not in text
    texts = [t for _f, t, _k in sub_questions(plan("What are type hints?"), 3)]
    assert texts == [
        "What are type hints?",
        "What do the documents specify about type hints?",
        "What motivated type hints?",
    ]
    history = [t for _f, t, _k in sub_questions(plan("How did async and await evolve?"), 3)]
    assert history == [
        "How did async and await evolve?",
        "Which proposals first introduced async and await, and when?",
        "How did later proposals change async and await?",
    ]
    how_to = plan("How do I cancel an asyncio task and wait for it to finish?")
    assert how_to.subject == "canceling an asyncio task and waiting for it to finish"
    unsure = plan("What are the walrus operator and why was it controversial?")
    assert unsure.subject == ""
    assert [t for _f, t, _k in sub_questions(unsure, 4)] == [
        "What are the walrus operator and why was it controversial?"
    ]


def test_the_built_in_model_plans_by_kind_with_search_terms() -> None:
    answer = scope({"query": "What is the history of structural pattern matching?"})
    assert answer.kind == "history" and answer.subject == "structural pattern matching"
    assert answer.key_terms == ["structural", "pattern", "matching"]
    assert [q.facet for q in answer.sub_questions] == [
        "question",
        "origin",
        "changes",
        "superseded",
    ]
    assert all(q.key_terms[:3] == answer.key_terms for q in answer.sub_questions[1:])
    comparison = scope({"query": "asyncio versus threading", "max_sub_questions": 3})
    assert comparison.kind == "comparison"
    assert comparison.sub_questions[1].key_terms[0] == "asyncio"
    assert comparison.sub_questions[2].key_terms[0] == "threading"
    domain = scope(
        {
            "query": "How did Python add the walrus operator?",
            "vocabulary": {"python": 0.97, "add": 0.6, "walrus": 0.004, "operator": 0.2},
        }
    )
    assert domain.subject == "the walrus operator"
    assert (
        domain.sub_questions[1].text == "What do the documents specify about the walrus operator?"
    )


@pytest.mark.parametrize(
    "verb,expected", [("make", "making"), ("set", "setting"), ("use", "using"), ("read", "reading")]
)
def test_gerunds(verb: str, expected: str) -> None:
    assert gerund(verb) == expected


@pytest.mark.parametrize(
    "question",
    [
        # the asker, not the thing asked about
        "I'm porting an old module and xrange() objects lost some methods: which ones and why?",
        "Our build server compiles every extension twice, is that normal?",
        # a relative clause inside the cut
        "Why was the proposal to make None a callable object that returns None rejected?",
        # a verb's complement or a dangling function word left at either end
        "Is the result of float('nan') == float('nan') guaranteed to be False?",
        "Which methods were removed from xrange() objects?",
    ],
)
def test_a_cut_that_is_no_noun_phrase_leaves_the_question_alone(question: str) -> None:
    """Facets built around such a cut ("What do the documents specify about I'm porting?") are
    ungrammatical and find no evidence of their own, so the question is the only sub-question."""
    understood = plan(question)
    assert understood.subject == ""
    assert len(sub_questions(understood, 4)) == 1


def test_a_noun_phrase_subject_still_gets_its_facets() -> None:
    rejected = plan("Why was the proposal to remove backslash continuation rejected?")
    assert rejected.subject == "backslash continuation"
    for question, subject in (
        ("How do I parse a URL into components with urlparse?", "parsing a URL into components"),
        ("What is the wheel binary package format?", "wheel binary package format"),
        ("How did async and await evolve in Python?", "async and await"),
        ("What happened to the proposal to require zlib?", "zlib"),
    ):
        assert plan(question).subject.removeprefix("the ").startswith(subject), question
