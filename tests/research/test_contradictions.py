"""The contradiction check of the built-in model (research.extractive.detect_contradictions).

A *negation* contradiction is the same statement with opposite polarity; two different
statements about one subject, one of them holding a negation word, are none.
"""

from __future__ import annotations

import pytest

from research.extractive import detect_contradictions
from research.polarity import SAME_STATEMENT_OVERLAP, overlap, statement
from research.text import sentences
from tests.pep_corpus import PEPS, needs_peps


def found(
    text_a: str, text_b: str, statuses: tuple[list[str], list[str]] = ([], [])
) -> list[tuple[str, str]]:
    """(kind, detail) of each contradiction found between two claims of different sources
    on one sub-question."""
    claims = [
        {
            "id": f"c{n}",
            "text": text,
            "sub_question": "sq1",
            "source_ids": [f"doc-{n}"],
            "statuses": status,
        }
        for n, (text, status) in enumerate(zip((text_a, text_b), statuses, strict=True))
    ]
    answer = detect_contradictions({"claims": claims})
    return [(c.kind, c.detail) for c in answer.contradictions]


def kinds(text_a: str, text_b: str) -> list[str]:
    return [kind for kind, _ in found(text_a, text_b)]


@pytest.mark.parametrize(
    ("asserted", "denied"),
    [
        (
            "The print statement is supported in Python 3.",
            "The print statement is not supported in Python 3.",
        ),
        (
            "Annotations are evaluated when the function is defined.",
            "Annotations aren't evaluated when the function is defined.",
        ),
        (
            "The bytecode cache is written next to the source file.",
            "The bytecode cache is no longer written next to the source file.",
        ),
        (
            "Implicit relative imports are allowed in Python 3.",
            "Implicit relative imports are not allowed in Python 3 since PEP 328.",
        ),
        (
            "Keyword arguments are accepted by the builtin function.",
            "Keyword arguments are never accepted by the builtin function.",
        ),
        (  # the apostrophes converted text writes: U+2018 and U+02BC
            "Tabs are allowed after spaces in one block.",
            "Tabs aren\u2018t allowed after spaces in one block.",
        ),
        (
            "Tabs are allowed after spaces in one block.",
            "Tabs aren\u02bct allowed after spaces in one block.",
        ),
    ],
)
def test_the_same_statement_with_opposite_polarity_is_a_contradiction(
    asserted: str, denied: str
) -> None:
    assert kinds(asserted, denied) == ["negation"]
    assert kinds(denied, asserted) == ["negation"]


def pep_sentence(pep: str, words: str) -> str:
    """The one sentence of a PEP of the shared corpus that holds ``words``."""
    text = (PEPS / f"{pep}.rst").read_text(encoding="utf-8")
    (found,) = [s for s in sentences(text) if words in " ".join(s.split())]
    return found


@needs_peps
def test_two_statements_about_headers_and_middleware_are_no_contradiction() -> None:
    """The pair that vetoed the WSGI gate run once more text was indexed: PEP 333 and PEP 3333
    on extension APIs and middleware — one sentence holds "not", the two share their subject
    (cosine past the check's floor), and neither denies what the other says."""
    altered = pep_sentence("pep-0333", "have not been altered by middleware")
    modified = pep_sentence("pep-3333", "has been modified by middleware")
    assert overlap(statement(altered), statement(modified)) < SAME_STATEMENT_OVERLAP
    assert kinds(altered, modified) == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(
            "Old-style string formatting will not be removed, although f-strings are preferred.",
            "Old-style string formatting will be kept, although f-strings are preferred.",
            id="agreeing, one in the negative",
        ),
        pytest.param(
            "Type hints are not only documentation but also input for static checkers.",
            "Type hints are documentation for readers and input for static checkers.",
            id="not only",
        ),
        pytest.param(
            "Without a __slots__ declaration, every instance stores its attributes in a dictionary.",
            "With a __slots__ declaration, every instance stores its attributes in fixed slots.",
            id="without: a condition denied, not the statement",
        ),
        pytest.param(
            "Mixing tabs and spaces is not allowed.",
            "Mixing tabs and spaces for indentation was allowed in Python 2 with a warning when "
            "run with the -t option.",
            id="a short statement inside a longer one that says more",
        ),
    ],
)
def test_similar_statements_one_holding_a_negation_are_no_contradiction(a: str, b: str) -> None:
    assert kinds(a, b) == []
    assert kinds(b, a) == []


def test_numeric_and_status_contradictions_are_found_as_before() -> None:
    assert kinds(
        "Dictionaries keep insertion order from Python 3.7 on.",
        "Dictionaries keep insertion order from Python 3.6 on.",
    ) == ["numeric"]
    assert (
        found(
            "A null-coalescing operator would spell a default for None.",
            "The null-coalescing operator spells a default for None.",
            (["Deferred", "Rejected"], ["Final"]),
        )
        == []
    )
    assert found(
        "A null-coalescing operator would spell a default for None.",
        "The null-coalescing operator spells a default for None.",
        (["Rejected"], ["Final"]),
    ) == [("status", "rejected vs final on one point")]


def test_claims_of_one_source_or_of_different_sub_questions_are_not_compared() -> None:
    claims = [
        {"id": "a", "text": "X is supported in Python 3.", "sub_question": "sq1",
         "source_ids": ["doc"], "statuses": []},
        {"id": "b", "text": "X is not supported in Python 3.", "sub_question": "sq1",
         "source_ids": ["doc"], "statuses": []},
        {"id": "c", "text": "X is not supported in Python 3.", "sub_question": "sq2",
         "source_ids": ["other"], "statuses": []},
    ]  # fmt: skip
    assert detect_contradictions({"claims": claims}).contradictions == []
