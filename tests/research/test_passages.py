"""How a document's text is cut into passages (research.loaders.split_passages).

Every paragraph of a document is in a passage, in order, once: a section too short to stand
alone runs on into the next passage, headed by the section that holds most of that passage's
text. A passage stays within its size bounds.
"""

from __future__ import annotations

import re

import pytest

from research.loaders import load_document, split_passages
from tests.pep_corpus import PEPS, needs_peps

TARGET, MAXIMUM, MINIMUM = 900, 1600, 240
"""split_passages' defaults: the size it aims at, the longest piece of a paragraph, the
shortest passage that may stand alone."""


def squeezed(text: str) -> str:
    return "".join(text.split())


def paragraphs(text: str) -> list[str]:
    """The text's paragraphs, headings left out (a heading alone makes no passage)."""
    found = [p.strip() for p in re.split(r"\n\s*\n", text)]
    return [p for p in found if p and split_passages(p)]


def assert_every_paragraph_in_order(text: str) -> list[tuple[str, str]]:
    passages = split_passages(text)
    assert squeezed("".join(body for _, body in passages)) == squeezed("".join(paragraphs(text)))
    return passages


def assert_within_bounds(passages: list[tuple[str, str]]) -> None:
    """No passage is longer than a buffer short of the target plus the longest piece of a
    paragraph (the separators between its paragraphs aside); none but the last is shorter
    than the minimum."""
    for _, body in passages:
        assert len(body) - 2 * body.count("\n\n") < TARGET + MAXIMUM
    for _, body in passages[:-1]:
        assert len(body) >= MINIMUM


def words(n: int, word: str) -> str:
    return " ".join([word] * n)


def rst(*sections: tuple[str, list[str]]) -> str:
    return "\n\n".join(
        f"{heading}\n{'=' * len(heading)}\n\n" + "\n\n".join(body) for heading, body in sections
    )


def test_a_short_section_followed_by_a_heading_runs_on_into_the_next_passage() -> None:
    text = rst(
        ("Abstract", ["Zen: a short abstract of nineteen aphorisms."]),
        ("Motivation", [words(120, "motive"), words(120, "reason")]),
    )
    passages = assert_every_paragraph_in_order(text)
    assert passages[0][1].startswith("Zen: a short abstract of nineteen aphorisms.\n\nmotive")
    assert passages[0][0] == "Motivation"
    assert_within_bounds(passages)


def test_several_short_sections_run_on_together() -> None:
    text = rst(
        ("Alpha", ["The alpha section is one line."]),
        ("Beta", ["The beta section is one line."]),
        ("Gamma", ["The gamma section is one line."]),
        ("Delta", [words(100, "delta"), words(100, "epsilon"), words(100, "zeta")]),
    )
    passages = assert_every_paragraph_in_order(text)
    first = passages[0][1]
    assert first.index("alpha") < first.index("beta") < first.index("gamma") < first.index("delta")
    assert_within_bounds(passages)


def test_a_short_final_section_is_kept() -> None:
    text = rst(
        ("Body", [words(100, "body"), words(100, "more")]),
        ("Footnote", ["A short final note."]),
    )
    passages = assert_every_paragraph_in_order(text)
    assert passages[-1] == ("Footnote", "A short final note.")
    trailing = text + "\n\nCopyright\n=========\n"
    assert assert_every_paragraph_in_order(trailing)[-1] == ("Footnote", "A short final note.")


def test_a_passage_of_several_sections_is_headed_by_the_one_holding_most_of_it() -> None:
    text = rst(
        ("Summary", [words(30, "summary")]),  # 239 characters: just short of standing alone
        ("Aside", ["One aside."]),
        ("Details", [words(100, "detail")]),
    )
    passages = assert_every_paragraph_in_order(text)
    assert [heading for heading, _ in passages] == ["Summary", "Details"]
    assert passages[0][1] == f"{words(30, 'summary')}\n\nOne aside."


@pytest.mark.parametrize(
    "long_paragraph",
    [("Widgets are frobnicated in batches of seven. " * 200).strip(), words(2000, "Widget")],
    ids=["cut at a sentence's end", "no sentence to cut at"],
)
def test_a_long_paragraph_after_a_short_section_is_cut_within_bounds(long_paragraph: str) -> None:
    text = rst(("Note", ["A short note."]), ("Long", [long_paragraph]))
    passages = assert_every_paragraph_in_order(text)
    assert passages[0][0] == "Long" and passages[0][1].startswith("A short note.\n\nWidget")
    assert_within_bounds(passages)
    for _, body in passages:  # the short section shares the first piece's room: no more in all
        assert len(body) - 2 * body.count("\n\n") <= MAXIMUM


@needs_peps
def test_every_paragraph_of_every_pep_is_in_a_passage_within_bounds() -> None:
    lost = []
    for path in sorted(PEPS.glob("*.rst")):
        document = load_document(path, path.read_bytes())
        passages = split_passages(document.text)
        if squeezed("".join(body for _, body in passages)) != squeezed(
            "".join(paragraphs(document.text))
        ):
            lost.append(path.stem)
        assert_within_bounds(passages)
    assert lost == [], f"{len(lost)} PEPs have text in no passage, e.g. {lost[:5]}"
