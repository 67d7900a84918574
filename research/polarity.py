"""Whether two statements say the same thing with opposite polarity.

The contradiction check's *negation* kind rests on this. Two sentences of different
sources that share many words, one of them holding "not", are not thereby a
contradiction: "… headers accessible via the API have not been altered by
middleware" and "… might return different data if environ has been modified by
middleware" (PEP 3333) share their subject and disagree on nothing. A contradiction
by negation is **the same statement with opposite polarity**: with the negation
words taken out the two say nearly the same thing, and the word a negation bears on
is one the other statement asserts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research.text import STOPWORDS, stem

SAME_STATEMENT_OVERLAP = 0.6
"""The share of *each* statement's content terms (negation words left out) the other must hold.

Measured on both sides, so a long sentence that holds a short one's words is not taken for the
short one's statement ("Mixing tabs and spaces is not allowed" inside a sentence on what Python
2 allowed with a warning: 4 of 4 and 4 of 8). 0.6 lets a denial add a short clause to the
statement it denies ("… are not allowed in Python 3 since PEP 328": 4 of 4 and 4 of 6) and keeps
apart the different statements two documents make about one subject: the PEP 333 / PEP 3333
pair on headers and middleware that vetoed a good round shares 7 of 19 and 7 of 14 terms (0.37),
and the pairs the earlier rule flagged in the tuning and heldout7 splits' runs 0.19–0.45. The
check asks for the claims' bag-of-words cosine to reach its own floor first."""

NEGATIONS = frozenset({"not", "no", "never", "cannot", "neither", "nor"})
"""Negation words; any word ending in "n't" is one too. "Without" is not: it denies a
condition ("without a __slots__ declaration"), not what a statement says."""
_TOKEN = re.compile(r"[a-z][a-z0-9_']*|\d+(?:\.\d+)*|[.,;:!?()]")
_CLAUSE_END = frozenset(".,;:!?()")
_APOSTROPHES = str.maketrans("\u2018\u2019\u02bc", "'''")
"""The apostrophes converted text writes a contraction with ("aren\u2018t", "isn\u02bct")."""
NOT_A_NEGATION = frozenset({"only"})
"""A word after "not" that undoes it: "not only X but Y" asserts X."""
SCOPE_SKIPS = frozenset({"longer", "yet"})
"""Words between a negation and what it bears on: "no longer supported" negates "supported"."""


@dataclass(frozen=True)
class Statement:
    """A sentence read for its polarity."""

    terms: frozenset[str]
    """Content terms (stemmed, stop words and negation words left out)."""
    negated: frozenset[str]
    """The terms a negation bears on: the first content term after each negation word in
    its clause ("have not been altered" → "alter")."""


def statement(text: str) -> Statement:
    tokens = _TOKEN.findall(text.lower().translate(_APOSTROPHES))
    content: set[str] = set()
    negated: set[str] = set()
    pending = False
    for index, token in enumerate(tokens):
        if token in _CLAUSE_END:
            pending = False
            continue
        if token in NEGATIONS or token.endswith("n't"):
            following = tokens[index + 1] if index + 1 < len(tokens) else ""
            pending = following not in NOT_A_NEGATION
            continue
        word = token.split("'")[0]
        if word in STOPWORDS or len(word) < 2 or (pending and word in SCOPE_SKIPS):
            continue
        term = stem(word)
        content.add(term)
        if pending:
            negated.add(term)
            pending = False
    return Statement(terms=frozenset(content), negated=frozenset(negated))


def overlap(a: Statement, b: Statement) -> float:
    """The smaller of the two shares of a statement's terms that the other holds."""
    if not a.terms or not b.terms:
        return 0.0
    shared = len(a.terms & b.terms)
    return min(shared / len(a.terms), shared / len(b.terms))


def opposite_polarity(a: Statement, b: Statement) -> bool:
    """The same statement (:data:`SAME_STATEMENT_OVERLAP` on both sides), one denying a term
    the other asserts."""
    denied = (a.negated & b.terms) - b.negated or (b.negated & a.terms) - a.negated
    return bool(denied) and overlap(a, b) >= SAME_STATEMENT_OVERLAP
