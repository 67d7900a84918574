"""Misspelt words of a question, corrected against the corpus's own vocabulary (issue 22).

A word of the question that the corpus's passages hold in at most :data:`RARE_PASSAGES` passages
is a typo candidate ("wiht", "tpye": a corpus of thousands of documents holds a few typos too).
Its candidates are the words of the titles and section headings and the indexed terms of every
passage (the FTS vocabulary, stemmed as the index stems them) within a Damerau edit distance
(optimal string alignment: a swap of two neighbours is one edit) of one, or two for a word of
more than :data:`SHORT_WORD` letters. The nearest candidate wins, and among equally near ones
the one held by the most passages; it replaces the word only when the corpus holds the word in
no passage at all or holds the candidate in :data:`MORE_COMMON` times as many passages.

A word of the English language is never a typo, however rare in the corpus: a question about
baking powder, asked of the Python documentation, is about baking powder — corrected to "naming
power" it would find documents it is not about and hide that the corpus has nothing on it. The
English words are those pyspellchecker's word-frequency list (shipped in its wheel, counted
over about 1.6 billion words of text) counts at least :data:`ENGLISH_COUNT` times, read once
per process when a first rare word needs it: a rarer entry ("objet", 91) is more likely a typo
of a word the corpus holds. The list is American English: a British spelling it lacks
("colour", "favourite") is still corrected when the corpus holds a near word.

The edit distance comes from RapidFuzz (its C++ scorer searches the vocabulary in
milliseconds); the vocabulary is the corpus's own, which no library knows.
"""

from __future__ import annotations

import re
import sqlite3
from functools import cache

from rapidfuzz import process
from rapidfuzz.distance import OSA
from spellchecker import SpellChecker

RARE_PASSAGES = 2
MORE_COMMON = 50
SHORT_WORD = 5
CANDIDATES = 12
ENGLISH_COUNT = 200
"""Times the word-frequency list counts a word of the English language (see the docstring)."""
WORD = re.compile(r"[A-Za-z]{4,}")


@cache
def english() -> frozenset[str]:
    """The words of the English language (read once: about 0.4 s; some 38,000 words)."""
    counts = SpellChecker(language="en").word_frequency.dictionary
    return frozenset(word for word, count in counts.items() if count >= ENGLISH_COUNT)


def is_english(word: str) -> bool:
    """Whether ``word`` (lower case) is a word of the English language (:data:`ENGLISH_COUNT`)."""
    return word in english()


class Speller:
    """Corrections for one corpus file, its vocabulary read on first need."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._vocabulary: list[str] = []
        self._counts: dict[str, int] = {}
        self._fixes: dict[str, str] = {}

    def forget(self) -> None:
        """The corpus changed: read its vocabulary again when next needed."""
        self._vocabulary = []
        self._counts.clear()
        self._fixes.clear()

    def corrected(self, text: str) -> str:
        """``text`` with its misspelt words corrected; a correction keeps a capital first letter
        (a sentence still starts with one: research.relevance.asked splits sentences at it)."""

        def fix(match: re.Match[str]) -> str:
            written = match.group(0)
            word = written.lower()
            if word not in self._fixes:
                self._fixes[word] = self._closest(word)
            found = self._fixes[word]
            if not found:
                return written
            return found[0].upper() + found[1:] if written[0].isupper() else found

        return WORD.sub(fix, text)

    def passages(self, word: str) -> int:
        """How many passages hold ``word`` (as the index stems it)."""
        if word not in self._counts:
            self._counts[word] = self._db.execute(
                "SELECT COUNT(*) FROM passage_fts WHERE passage_fts MATCH ?", (f'"{word}"',)
            ).fetchone()[0]
        return self._counts[word]

    def _closest(self, word: str) -> str:
        held = self.passages(word)
        if held > RARE_PASSAGES or is_english(word):
            return ""
        if not self._vocabulary:
            rows = self._db.execute(
                "SELECT title FROM documents UNION SELECT section FROM passage_fts"
            )
            surface = {w.lower() for (t,) in rows for w in WORD.findall(t or "")}
            stems = {t for (t,) in self._db.execute("SELECT term FROM passage_vocab")}
            self._vocabulary = sorted(w for w in surface | stems if WORD.fullmatch(w))
        reach = 1 if len(word) <= SHORT_WORD else 2
        found = process.extract(
            word, self._vocabulary, scorer=OSA.distance, score_cutoff=reach, limit=CANDIDATES
        )
        ranked = sorted(
            ((distance, -self.passages(c), c) for c, distance, _ in found if c != word),
        )
        if not ranked:
            return ""
        _, count, best = ranked[0]
        return best if held == 0 or -count >= MORE_COMMON * held else ""
