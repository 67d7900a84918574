"""Small, deterministic text statistics the extractive model and the steps share.

Tokens, sentences, in-memory BM25 over a handful of passages, sentence
centrality and key phrases. Nothing here is random or order-dependent beyond
the input order, so the same inputs always give the same answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers him his how i if in into is
    it its itself just may me might more most must my no nor not now of off on once only or
    other our out over own same shall she should so some such than that the their them then
    there these they this those through to too under until up upon us very was we were what
    when where which while who whom why will with would you your yours pep peps python use
    used using one two new see also e g eg ie etc""".split()
)
"""Function words, plus words every document of a Python corpus shares (they rank nothing)."""

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*|\d+(?:\.\d+)*")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*])")
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w])")


def stem(word: str) -> str:
    """A light suffix stripper: enough to match plurals and common verb forms."""
    for suffix, keep in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def terms(text: str) -> list[str]:
    """Content terms: lowercased, stop words dropped, lightly stemmed."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1]


def versions(text: str) -> set[str]:
    """Dotted numbers (3.10, 1.0.1): the figures a contradiction can turn on.

    Bare integers are left out on purpose — in technical prose they are mostly
    references (PEP 634, section 2), and a mismatch between them means nothing.
    """
    return {v.rstrip(".") for v in _VERSION.findall(text)}


def normalize_space(text: str) -> str:
    return " ".join(text.split())


def sentences(text: str, *, min_words: int = 6, max_chars: int = 400) -> list[str]:
    """Prose sentences of a passage: whole, of a sensible length, no markup lines."""
    found: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = normalize_space(block)
        if not block or block.startswith(("..", "::", "|", "+-", "===", "---", ">>>")):
            continue
        for sentence in SENTENCE_END.split(block):
            sentence = sentence.strip()
            if (
                len(words(sentence)) >= min_words
                and len(sentence) <= max_chars
                and sentence[-1:] in ".!?"
            ):
                found.append(sentence)
    return found


class BM25:
    """Okapi BM25 over a small in-memory collection (k1=1.2, b=0.75)."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.docs = [Counter(terms(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avg_length = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def score(self, query: str | Iterable[str], index: int) -> float:
        query_terms = terms(query) if isinstance(query, str) else list(query)
        doc = self.docs[index]
        length_norm = (
            1 - self.b + self.b * (self.lengths[index] / self.avg_length if self.avg_length else 0)
        )
        total = 0.0
        for term in query_terms:
            tf = doc.get(term, 0)
            if tf:
                total += self.idf.get(term, 0.0) * tf * (self.k1 + 1) / (tf + self.k1 * length_norm)
        return total

    def scores(self, query: str | Iterable[str]) -> list[float]:
        query_terms = terms(query) if isinstance(query, str) else list(query)
        return [self.score(query_terms, i) for i in range(len(self.docs))]


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def centrality(texts: Sequence[str]) -> list[float]:
    """Mean cosine similarity of each text to the others (a one-step LexRank)."""
    vectors = [Counter(terms(t)) for t in texts]
    if len(vectors) < 2:
        return [1.0 for _ in vectors]
    result = []
    for i, vector in enumerate(vectors):
        result.append(
            sum(cosine(vector, other) for j, other in enumerate(vectors) if j != i)
            / (len(vectors) - 1)
        )
    return result


def key_phrases(text: str, limit: int = 6, min_length: int = 3) -> list[str]:
    """Content words of a text (unstemmed) in order of first appearance, without repeats."""
    seen: list[str] = []
    for word in words(text):
        if word in STOPWORDS or len(word) < min_length:
            continue
        if word not in seen:
            seen.append(word)
        if len(seen) >= limit:
            break
    return seen


def top_terms(texts: Iterable[str], exclude: Iterable[str] = (), limit: int = 5) -> list[str]:
    """The most frequent content words across texts (pseudo-relevance feedback), ties by word."""
    excluded = {stem(w.lower()) for w in exclude}
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(
            w for w in words(text) if w not in STOPWORDS and len(w) > 3 and stem(w) not in excluded
        )
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [w for w, _ in ranked[:limit]]


SELF_REFERENCE = re.compile(
    r"^(?:this|the present|the current)\s+(pep|proposal|document|specification|spec|rfc|"
    r"draft|guide|chapter|section)\b",
    re.I,
)
"""A sentence that names its own document ("This PEP proposes …"): the report names it instead."""
DEPENDENT_OPENER = re.compile(
    r"^(?:however|but|also|moreover|furthermore|therefore|thus|hence|instead|otherwise|"
    r"likewise|similarly|consequently|additionally|accordingly|meanwhile|nevertheless|"
    r"nonetheless|in addition|in contrast|in that case|in this case|on the other hand|"
    r"as a result|as such|as mentioned|as described|as noted|and|or|so|then|still|"
    r"this|these|that|those|it|its|they|their|them|such|he|she|his|her|the former|"
    r"the latter|the above|the following|above|below|here|both|neither|either|"
    r"for this reason|for these reasons|in both cases|in either case|again)\b",
    re.I,
)
"""Openers that lean on a sentence before them ("However, …", "This means …")."""


def depends_on_context(sentence: str) -> bool:
    """Whether a sentence needs the one before it to be understood (self-references excepted)."""
    stripped = sentence.lstrip(" *_`\"'(")
    return bool(DEPENDENT_OPENER.match(stripped)) and not SELF_REFERENCE.match(stripped)
