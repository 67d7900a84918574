"""Indexing's shortcuts give what the plain rules give: every paragraph of every PEP and odd
texts (separators ``splitlines`` cuts at, whitespace ``strip`` removes, headings of one line)."""

from __future__ import annotations

import re

import pytest

from research.loaders import _heading_of, could_be_heading, load_document
from tests.research.conftest import PEPS

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
    if not PEPS.is_dir():
        pytest.skip(f"the PEP corpus is not at {PEPS}")
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
