"""A document's *head* — its title and opening — and the head's sentence vector, cached.

What a document is about is said in its title and its first lines (a PEP's abstract, a module
page's first paragraph). The head is the title and the document's first passages, whitespace
collapsed, up to :data:`HEAD_CHARACTERS` — more than the sentence encoder reads: it keeps the
first 128 tokens (research/sentence_encoder.py; on the tuning split a head of 128 tokens found
the gold document more often than one of 64, and the title alone far less often).

The vectors are computed the first time a corpus is searched (the head ranking reads every
document's: research/hybrid.py), not at indexing: encoding costs about 30 ms of CPU a head, so
every head of the PEP corpus would add about 20 s to indexing it; a head this machine encoded
before is read from its memo instead (research/sentence_memo.py). They are cached in the corpus
file (``document_heads``, keyed by source id, with the content hash they were computed from: a
changed document is computed again, an unchanged one never), each batch written in its own short
transaction. A corpus that cannot be written (read-only, locked, in the middle of another
transaction) only loses the cache: the vectors are computed and used all the same.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from research import sentence_memo
from research.sentence_encoder import DIMENSIONS, Vectors

HEAD_CHARACTERS = 1200
"""Characters of title and opening text a head holds: past 128 tokens of English prose, which
the encoder keeps."""


def head_texts(db: sqlite3.Connection, source_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{source id: (content hash, head text)} of the given documents that are stored."""
    found: dict[str, tuple[str, str, list[str]]] = {}
    for chunk in range(0, len(source_ids), 500):
        part = list(source_ids[chunk : chunk + 500])
        rows = db.execute(
            "SELECT d.source_id, d.content_hash, d.title, f.text FROM documents d "
            "LEFT JOIN passages p ON p.source_id = d.source_id "
            "LEFT JOIN passage_fts f ON f.rowid = p.rowid "
            f"WHERE d.source_id IN ({','.join('?' * len(part))}) ORDER BY d.source_id, p.ordinal",
            part,
        )
        for source_id, content_hash, title, text in rows:
            _, _, opening = found.setdefault(source_id, (content_hash, title, []))
            if text and sum(len(t) + 1 for t in opening) < HEAD_CHARACTERS:
                opening.append(" ".join(text.split()))
    return {
        source_id: (digest, head_text(title, opening))
        for source_id, (digest, title, opening) in found.items()
    }


def head_text(title: str, opening: list[str]) -> str:
    """The title, then the opening passages' text, cut at :data:`HEAD_CHARACTERS`."""
    title = " ".join(title.split())
    return (f"{title}. {' '.join(opening)}" if opening else title)[:HEAD_CHARACTERS]


def cached_heads(db: sqlite3.Connection, source_ids: Sequence[str]) -> dict[str, Vectors]:
    """{source id: unit head vector} cached for the given documents as they are now (a vector
    cached for other content is not returned; none when the file has no cache table)."""
    found: dict[str, Vectors] = {}
    try:
        for chunk in range(0, len(source_ids), 500):
            part = list(source_ids[chunk : chunk + 500])
            found.update(
                (source_id, np.frombuffer(blob, dtype=np.float32))
                for source_id, blob in db.execute(
                    "SELECT h.source_id, h.vector FROM document_heads h JOIN documents d "
                    "ON d.source_id = h.source_id AND d.content_hash = h.content_hash "
                    f"WHERE h.source_id IN ({','.join('?' * len(part))})",
                    part,
                )
                if len(blob) == 4 * DIMENSIONS
            )
    except sqlite3.OperationalError:
        return {}  # a corpus file from before the cache (opened read-only): compute them all
    return found


def head_vectors(db: sqlite3.Connection, source_ids: Sequence[str]) -> dict[str, Vectors]:
    """{source id: unit head vector} of the given stored documents: cached ones read, the others
    (new, or changed since) computed and cached."""
    wanted = list(dict.fromkeys(source_ids))
    vectors = cached_heads(db, wanted)
    texts = head_texts(db, [s for s in wanted if s not in vectors])
    if texts:
        missing = list(texts)
        computed = sentence_memo.encode([texts[s][1] for s in missing])
        vectors.update(zip(missing, computed))
        _store(db, [(s, texts[s][0], computed[n].tobytes()) for n, s in enumerate(missing)])
    return vectors


def _store(db: sqlite3.Connection, rows: list[tuple[str, str, bytes]]) -> None:
    """Cache computed head vectors in a short transaction of their own; nothing when the file
    cannot take it (the vectors are used all the same)."""
    if db.in_transaction:
        return  # another writer's transaction is open on this connection: never commit it
    try:
        with db:
            db.executemany(
                "INSERT OR REPLACE INTO document_heads(source_id, content_hash, vector) "
                "VALUES (?, ?, ?)",
                rows,
            )
    except sqlite3.Error:
        return
