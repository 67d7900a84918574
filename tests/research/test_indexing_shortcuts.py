"""Indexing's shortcuts give what the plain rules give: every paragraph and every header of every
PEP and odd texts (separators ``splitlines`` cuts at, whitespace ``strip`` removes, headings of
one line, headers that are not one)."""

from __future__ import annotations

import re

from research.loaders import (
    _header_fields,
    _heading_of,
    _rst_header,
    could_be_heading,
    load_document,
)
from tests.pep_corpus import PEPS, skip_without_peps

ODD = [
    "#",
    "# Title",
    "a\n===",
    "a\n= = =",
    "a\n===\n",
    "a\r===",
    "a\u2028---",
    "a\x85~~~",
    "a\x1c***",
    "a\nb\n===",
    "Title\n^^^^ \t",
    "x" * 400 + "\n====",
    "plain paragraph",
    "ends with a dash -",
]


def paragraphs() -> list[str]:
    skip_without_peps()
    found = [p.strip() for p in ODD]  # split_passages looks at stripped paragraphs
    for path in sorted(PEPS.glob("*.rst")):
        text = load_document(path, path.read_bytes()).text
        found += [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    return found


def test_a_paragraph_passed_over_as_no_heading_is_none() -> None:
    every = paragraphs()
    headings = [p for p in every if _heading_of(p.splitlines()) is not None]
    assert len(headings) > 5000  # the PEPs' headings are among them
    assert all(could_be_heading(p) for p in headings)


def plain_rst_header(text: str) -> tuple[dict[str, str], str]:
    """The header as it was read before: the whole text cut into lines, the lines after the
    header joined again."""
    lines = text.splitlines()
    found = _header_fields(lines)
    if found is None:
        return {}, text
    fields, consumed = found
    return fields, "\n".join(lines[consumed:])


ODD_HEADERS = [
    "",
    "\n",
    "A: 1\nB: 2",
    "A: 1\nB: 2\n",
    "A: 1\nB: 2\n\n",
    "A: 1\nB: 2\n\nbody\n",
    "A: 1\nB: 2\n\nbody\n\n",
    "A: 1\r\nB: 2\r\n\r\nbody\r\nmore\r\n",
    "A: 1\rB: 2\r\rbody\rmore",
    "A: 1\nB: 2\n \t\nbody",
    "A: 1\nB: 2\n\xa0\nbody",
    "A: 1\u2028B: 2\u2029\u2029body\x85more\x0cend\x1c",
    "A: 1\n  continued\n\tand on\nB: 2\n\nbody",
    ":A: 1\n:B: 2\n\nbody",
    "A: 1\n\nbody: not the header",
    "A: 1\nnot a field\nB: 2\n\nbody",
    "  indented: first\nB: 2\n\nbody",
    "A: 1\nB: 2\nC: 3 \n\nbody\n\n\n",
    "A: 1\nB: 2\n\nbody with \r\n inside\n",
    "Title\n=====\n\ntext",
]


def test_the_header_read_line_by_line_is_the_plain_rules() -> None:
    skip_without_peps()
    texts = ODD_HEADERS + [path.read_text("utf-8") for path in sorted(PEPS.glob("*.rst"))]
    with_header = 0
    for text in texts:
        assert _rst_header(text) == plain_rst_header(text), repr(text[:80])
        with_header += bool(_rst_header(text)[0])
    assert with_header > 700  # every PEP has one
