"""Hybrid search over the corpus: FTS5 bm25 and embedding similarity, fused by reciprocal rank.

The lexical half ranks passages by bm25 with the document's title and the passage's section
heading weighted above its text (:data:`FIELD_WEIGHTS`); the query is the text's content words
OR-ed, and a ``"quoted phrase"`` kept as a phrase (the corpus first corrects the text's misspelt
words: research.spelling). The semantic half ranks passages by the cosine similarity
of their stored vectors to the query's (research.embeddings), only those at
:data:`SEMANTIC_FLOOR` or above — below it a passage shares nothing but the language with the
query. Both rankings obey the same filters, and reciprocal rank fusion (Cormack et al. 2009,
``k`` = :data:`RRF_K`) merges them, so a passage either half ranks high comes first and neither
half's raw scores need to be comparable.

A third ranking joins them: the documents whose *head* (title and opening,
research/document_heads.py) the contextual sentence encoder finds nearest the query, each by its
passage nearest the query — the :data:`HEAD_DEPTH` best at :data:`HEAD_SEARCH_FLOOR` or above.
Both halves rank passages by the words they share with the query (WordLlama's vectors are means
of static word vectors); a question in a user's own words ("a base class pdb itself is built on")
shares few words with the module that answers it, while the encoder reads what its opening says
the module is for. Every document's head is computed once and kept in the corpus file, so after
the first search of a corpus this ranking costs one sentence encoding and one matrix product.
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from research import sentence_memo
from research.document_heads import head_vectors
from research.embeddings import Vectors, embedder
from research.relevance import (
    PASSAGE_CANDIDATES,
    SYMBOL_RUN,
    DocumentEvidence,
    asked,
    candidate_phrases,
    document_evidence,
    question_words,
    relevance,
    symbol_runs,
)
from research.text import key_phrases, words
from research.vectors import DocumentFilter, VectorIndex

FIELD_WEIGHTS = (3.0, 2.0, 1.0)
"""bm25 weights of the FTS columns title, section, text."""
RRF_K = 60
DEPTH = 200
"""Candidates each half contributes to the fusion."""
SEMANTIC_FLOOR = 0.30
"""Cosine similarity under which the semantic half does not offer a passage at all."""
HEAD_DEPTH = 10
"""Documents the head ranking contributes to the fusion."""
HEAD_SEARCH_FLOOR = 0.4
"""Head similarity under which the head ranking does not offer a document. The ranking looks at
every document of the corpus, so its best head is a maximum over hundreds: relevance's floor for a
question's heads (0.3, research.relevance) is reached by chance there — "what is a PEP", asked of
the Python documentation, finds modules that hold none of its words at 0.31–0.33."""

_PHRASE = re.compile(r'"([^"]+)"')
_JOINS = (
    "FROM passage_fts f JOIN passages p ON p.rowid = f.rowid "
    "JOIN documents d ON d.source_id = p.source_id"
)


def fts_query(text: str) -> str:
    """Free text → an FTS5 OR-query of quoted terms (quoting makes any word safe).

    A ``"quoted phrase"`` in the text stays a phrase (its words adjacent, stop words kept), so
    "with statement" can find the with statement although "with" alone ranks nothing.
    """
    phrases = [" ".join(words(p)) for p in _PHRASE.findall(text)]
    phrases = [p for p in dict.fromkeys(phrases) if " " in p]
    loose = key_phrases(_PHRASE.sub(" ", text) + " " + " ".join(phrases), limit=24, min_length=2)
    return " OR ".join([*(f'"{p}"' for p in phrases), *(f'"{w}"' for w in loose)])


@dataclass
class SearchFilters:
    """The options of a search that decide which passages it may return."""

    collections: list[str] = field(default_factory=list)
    exclude_sources: list[str] = field(default_factory=list)
    exclude_passages: list[str] = field(default_factory=list)
    published_after: str | None = None
    published_before: str | None = None
    not_after: str | None = None
    only_sources: list[str] | None = None

    def sql(self) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []

        def among(column: str, values: list[str], negate: bool = False) -> None:
            clauses.append(f"{column} {'NOT ' if negate else ''}IN ({','.join('?' * len(values))})")
            params.extend(values)

        if self.only_sources is not None:
            among("d.source_id", sorted(self.only_sources))
        if self.not_after:
            clauses.append("(COALESCE(d.published, '') = '' OR d.published <= ?)")
            params.append(self.not_after)
        if self.collections:
            among("d.collection", self.collections)
        if self.exclude_sources:
            among("d.source_id", self.exclude_sources, negate=True)
        if self.exclude_passages:
            among("p.passage_id", self.exclude_passages, negate=True)
        if self.published_after or self.published_before:
            in_range = []
            for column in ("d.published", "d.updated"):
                bounds = [f"COALESCE({column}, '') <> ''"]
                if self.published_after:
                    bounds.append(f"{column} >= ?")
                    params.append(self.published_after)
                if self.published_before:
                    bounds.append(f"{column} <= ?")
                    params.append(self.published_before)
                in_range.append("(" + " AND ".join(bounds) + ")")
            clauses.append("(" + " OR ".join(in_range) + ")")
        return clauses, params

    def documents(self) -> DocumentFilter:
        return DocumentFilter(
            collections=frozenset(self.collections) if self.collections else None,
            not_after=self.not_after,
            published_after=self.published_after,
            published_before=self.published_before,
            exclude_sources=frozenset(self.exclude_sources),
            only_sources=frozenset(self.only_sources) if self.only_sources is not None else None,
        )


def lexical(
    db: sqlite3.Connection, match: str, filters: SearchFilters, depth: int
) -> list[tuple[int, str, float]]:
    """(row id, source id, bm25 as a positive score) of the best ``depth`` lexical matches."""
    if not match:
        return []
    clauses, params = filters.sql()
    weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
    sql = (
        f"SELECT f.rowid, d.source_id, bm25(passage_fts, {weights}) {_JOINS} "
        f"WHERE {' AND '.join(['passage_fts MATCH ?', *clauses])} "
        f"ORDER BY bm25(passage_fts, {weights}), p.passage_id LIMIT ?"
    )
    return [(r, s, -b) for r, s, b in db.execute(sql, [match, *params, depth])]


def fuse(*rankings: list[int]) -> dict[int, float]:
    """Reciprocal rank fusion of rankings of row ids (best first): {row id: fused score}."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, rowid in enumerate(ranking, start=1):
            fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
    return fused


@lru_cache(maxsize=256)
def sentence_vector(text: str) -> Vectors:
    """The sentence encoder's vector of ``text``, remembered: a run searches the same question
    and sub-questions many times. (Never modified by its callers.)"""
    vector: Vectors = sentence_memo.encode([text])[0]
    return vector


_HEADS: weakref.WeakKeyDictionary[VectorIndex, dict[str, Vectors]] = weakref.WeakKeyDictionary()
"""Head vectors read for a loaded index (it is loaded anew when the corpus file changes)."""


def all_heads(db: sqlite3.Connection, index: VectorIndex, numbers: list[int]) -> dict[str, Vectors]:
    """{source id: head vector} of the given documents (computed and cached the first time)."""
    known = _HEADS.setdefault(index, {})
    missing = [index.documents[n][0] for n in numbers if index.documents[n][0] not in known]
    if missing:
        known.update(head_vectors(db, missing))
    return known


def head_ranking(
    db: sqlite3.Connection,
    index: VectorIndex,
    query: str,
    vector: Vectors,
    filters: SearchFilters,
) -> list[tuple[int, str]]:
    """(row id, source id) of the :data:`HEAD_DEPTH` documents whose heads are nearest the
    query, each by its passage nearest the query's word vector ``vector``, best head first."""
    numbers = [int(n) for n in np.flatnonzero(index.document_mask(filters.documents()))]
    if not numbers:
        return []
    heads = all_heads(db, index, numbers)
    numbers = [n for n in numbers if index.documents[n][0] in heads]
    if not numbers:
        return []
    similarity = np.stack([heads[index.documents[n][0]] for n in numbers]) @ sentence_vector(query)
    order = sorted(range(len(numbers)), key=lambda i: (-similarity[i], numbers[i]))
    excluded = frozenset(filters.exclude_passages)
    ranking: list[tuple[int, str]] = []
    for i in order:
        if similarity[i] < HEAD_SEARCH_FLOOR or len(ranking) >= HEAD_DEPTH:
            break
        nearest = index.nearest_of(vector, numbers[i], excluded)
        if nearest is not None:
            ranking.append((nearest[0], index.documents[numbers[i]][0]))
    return ranking


def candidates(
    db: sqlite3.Connection,
    index: VectorIndex,
    query: str,
    vector: Vectors,
    filters: SearchFilters,
) -> tuple[str, list[tuple[int, str, float]], dict[int, float]]:
    """The FTS query, the lexical matches, and the fused scores of the three rankings'
    candidates."""
    match = fts_query(query)
    found = lexical(db, match, filters, DEPTH)
    near = [
        (rowid, similarity)
        for rowid, similarity in index.nearest(
            vector, filters.documents(), filters.exclude_passages, DEPTH
        )
        if similarity >= SEMANTIC_FLOOR
    ]
    headed = head_ranking(db, index, query, vector, filters)
    fused = fuse([r for r, _, _ in found], [r for r, _ in near], [r for r, _ in headed])
    return match, found, fused


def question_relevance(
    db: sqlite3.Connection,
    index: VectorIndex,
    question: str,
    filters: SearchFilters,
) -> dict[str, float]:
    """{source id: relevance to ``question``} of the documents a search for it finds
    (research.relevance); documents it does not find are not about it (0). Only the sentence
    that asks and the one before it count when a preamble comes first
    (research.relevance.asked)."""
    return relevance(question_evidence(db, index, question, filters))


def question_evidence(
    db: sqlite3.Connection,
    index: VectorIndex,
    question: str,
    filters: SearchFilters,
) -> list[DocumentEvidence]:
    """The evidence (research.relevance) of each document a search for ``question`` finds."""
    question = asked(question)
    vector = embedder().embed_one(question)
    _, _, fused = candidates(db, index, question, vector, filters)
    scope = [
        n
        for n, (_, collection, _, _) in enumerate(index.documents)
        if not filters.collections or collection in filters.collections
    ]
    in_scope = {index.documents[n][0] for n in scope}
    holders = {
        term: holding(db, term, in_scope)
        for term in [
            *question_words(question),
            *heading_phrases(db, question),
            *symbol_runs(question),
        ]
    }
    found = document_evidence(index, question, vector, fused, scope, holders)
    wanted = [e.source_id for e in found]
    known = all_heads(db, index, [index.number_of[s] for s in wanted])  # read once per index
    heads = {s: known[s] for s in wanted if s in known}
    if not heads:
        return found
    asking = sentence_vector(question)
    passages = best_passage_vectors(db, index, fused)
    return [
        replace(
            e,
            head_similarity=max(0.0, float(heads[e.source_id] @ asking))
            if e.source_id in heads
            else None,
            passage_similarity=max(0.0, float(passages[e.source_id] @ asking))
            if e.source_id in passages
            else None,
        )
        for e in found
    ]


def best_passage_vectors(
    db: sqlite3.Connection, index: VectorIndex, fused: dict[int, float]
) -> dict[str, Vectors]:
    """{source id: sentence vector of its best passage (section heading and text)} of the
    :data:`PASSAGE_CANDIDATES` documents whose best passages rank highest among ``fused``: what
    the document says where the search finds the question, read in context (the head says what
    the document is about as a whole; a user's wording often names only one of its sections)."""
    best: dict[str, int] = {}
    for rowid in sorted(fused, key=lambda r: (-fused[r], r)):
        row = index.row_of_rowid.get(rowid)
        if row is not None:
            best.setdefault(index.documents[int(index.row_source[row])][0], rowid)
        if len(best) >= PASSAGE_CANDIDATES:
            break
    if not best:
        return {}
    rowids = list(best.values())
    texts = dict(
        (rowid, f"{section}: {text}")
        for rowid, section, text in db.execute(
            "SELECT rowid, section, text FROM passage_fts "
            f"WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        )
    )
    sources = [s for s, r in best.items() if r in texts]
    vectors = sentence_memo.encode([texts[best[s]] for s in sources])
    return dict(zip(sources, vectors))


def holding(db: sqlite3.Connection, term: str, in_scope: set[str]) -> set[str]:
    """The documents in scope that hold ``term`` (a word, a phrase or an operator) anywhere."""
    if SYMBOL_RUN.fullmatch(term):  # the index has no tokens for punctuation: read the text
        rows = db.execute(
            "SELECT DISTINCT p.source_id FROM passage_fts f JOIN passages p ON p.rowid = f.rowid "
            "WHERE instr(f.text, ?) > 0",
            (term,),
        )
    else:
        rows = db.execute(
            "SELECT DISTINCT p.source_id FROM passage_fts f JOIN passages p ON p.rowid = f.rowid "
            "WHERE passage_fts MATCH ?",
            (f'"{term}"',),
        )
    return {s for (s,) in rows if s in in_scope}


def heading_phrases(db: sqlite3.Connection, question: str) -> list[str]:
    """Runs of two or three adjacent words of the question that some document's title or
    section heading holds as a phrase ("keyword only", "yield from", "with statement"): the
    corpus's own names for things, function words and all."""
    found = []
    for phrase in candidate_phrases(question):
        held = db.execute(
            "SELECT 1 FROM passage_fts WHERE passage_fts MATCH ? LIMIT 1",
            (f'{{title section}} : "{phrase}"',),
        ).fetchone()
        if held is not None:
            found.append(phrase)
    return found


def search(
    db: sqlite3.Connection,
    index: VectorIndex,
    query: str,
    filters: SearchFilters,
    *,
    limit: int,
    offset: int = 0,
    distinct_sources: bool = False,
) -> list[dict[str, Any]]:
    """Passages for ``query``, best first, as plain dicts (the Retriever shape).

    Each hit carries ``score`` (the fused score), ``similarity`` (cosine to the query) and
    ``lexical`` (its bm25 score, 0 when the lexical half did not find it).
    """
    vector = embedder().embed_one(query)
    match, found, fused = candidates(db, index, query, vector, filters)
    if not fused:
        return []
    bm25 = {r: b for r, _, b in found}
    source_of = {r: s for r, s, _ in found}
    missing = [r for r in fused if r not in source_of]
    for chunk in range(0, len(missing), 500):
        part = missing[chunk : chunk + 500]
        source_of.update(
            db.execute(
                f"SELECT rowid, source_id FROM passages WHERE rowid IN ({','.join('?' * len(part))})",
                part,
            )
        )
    order = sorted(fused, key=lambda r: (-fused[r], r))
    chosen: list[int] = []
    seen: set[str] = set()
    skipped = 0
    for rowid in order:
        if distinct_sources:
            if source_of[rowid] in seen:
                continue
            seen.add(source_of[rowid])
        if skipped < offset:
            skipped += 1
            continue
        chosen.append(rowid)
        if len(chosen) >= limit:
            break
    if not chosen:
        return []
    similarity = index.similarities(vector, chosen)
    return [
        {
            **{k: v for k, v in row.items() if k != "rowid"},
            "score": round(fused[row["rowid"]], 6),
            "similarity": round(similarity.get(row["rowid"], 0.0), 4),
            "lexical": round(bm25.get(row["rowid"], 0.0), 4),
        }
        for row in read_rows(db, chosen, match)
    ]


def read_rows(db: sqlite3.Connection, rowids: list[int], match: str) -> list[dict[str, Any]]:
    """The chosen passages whole, in the order given, with a snippet of what matched."""
    marks = ",".join("?" * len(rowids))
    rows = {
        r[0]: r
        for r in db.execute(
            "SELECT f.rowid, p.passage_id, d.source_id, d.uri, d.title, f.section, f.text, "
            "d.published, d.updated, d.status, d.kind, d.superseded_by "
            f"{_JOINS} WHERE f.rowid IN ({marks})",
            rowids,
        )
    }
    snippets: dict[int, str] = {}
    if match:
        snippets = dict(
            db.execute(
                f"SELECT f.rowid, snippet(passage_fts, 2, '[', ']', '…', 16) {_JOINS} "
                f"WHERE passage_fts MATCH ? AND f.rowid IN ({marks})",
                [match, *rowids],
            )
        )
    hits = []
    for rowid in rowids:
        r = rows[rowid]
        hits.append(
            {
                "rowid": rowid,
                "passage_id": r[1],
                "source_id": r[2],
                "uri": r[3],
                "title": r[4],
                "section": r[5],
                "text": r[6],
                "snippet": snippets.get(rowid) or " ".join(r[6].split()[:32]) + "…",
                "published": r[7],
                "updated": r[8],
                "status": r[9],
                "kind": r[10],
                "superseded_by": r[11],
            }
        )
    return hits
