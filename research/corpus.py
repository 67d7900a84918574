"""The local corpus: SQLite FTS5 in its own database file (DESIGN §8, §9).

Documents are split into passages; the passages are indexed with the
``porter unicode61`` tokenizer, and each passage's vector (research.embeddings) is computed once,
at indexing, and stored beside it; a search fuses the two rankings (research.hybrid).
Re-indexing a folder is incremental: a file whose content hash is unchanged
is left alone, a changed one is replaced, a vanished one is removed. Files
that cannot be read are reported and skipped, never fatal.

Identifiers are stable and readable: a source is ``<collection>/<relative
path without suffix>`` and a passage is ``<source>#<ordinal>``, so evidence
recorded in a run still names the same text after a re-index.
"""

from __future__ import annotations

import fcntl
import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engine.sqlite_file import open_sqlite_file
from research.corpus_derivation import STAMP
from research.corpus_files import folder_root, list_folder, read_document
from research.corpus_limits import DEFAULT_LIMITS, CorpusLimits
from research.corpus_records import (
    CollectionInfo,
    CorpusFolderError,
    CorpusWriteError,
    DocumentRecord,
    IndexReport,
    OutdatedCollection,
    SkippedFile,
    _day,
    _iso,
    _write_failure,
)
from research.corpus_vectors import PassageVectors
from research.hybrid import SearchFilters, question_relevance
from research.hybrid import search as hybrid_search
from research.loaders import (
    LoadedDocument,
    UnreadableDocument,
    load_document,
    split_passages,
)
from research.references import own_keys, references, relation_rank
from research.spelling import Speller
from research.text import words
from research.vectors import VectorIndex

SCHEMA_VERSION = 4
"""Stamped into the file (``PRAGMA user_version``); a file with a higher one is refused.

4: ``document_derivation``. Code from before it does not know that table — it would replace a
document's passages beside a stamp that no longer describes them, or remove a document and leave
its stamp behind — so it must refuse the file, not write to it.

``document_unreadable`` (why a stored document could not be read again the last time it was
indexed) needs no new version: it only words the outdated notice (:meth:`Corpus.outdated`); code
that does not know it leaves a note behind that the next ``corpus add`` by this code replaces."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    source_id TEXT PRIMARY KEY,
    collection TEXT NOT NULL,
    uri TEXT NOT NULL,
    title TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    published TEXT,
    updated TEXT,
    status TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'document',
    superseded_by TEXT NOT NULL DEFAULT '',
    passages INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_collection ON documents(collection);
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY,
    root TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    rowid INTEGER PRIMARY KEY,
    passage_id TEXT UNIQUE NOT NULL,
    source_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_source ON passages(source_id);
CREATE TABLE IF NOT EXISTS document_keys (
    key TEXT NOT NULL,
    source_id TEXT NOT NULL,
    PRIMARY KEY (key, source_id)
);
CREATE INDEX IF NOT EXISTS document_keys_source ON document_keys(source_id);
CREATE TABLE IF NOT EXISTS document_refs (
    source_id TEXT NOT NULL,
    key TEXT NOT NULL,
    via TEXT NOT NULL,
    PRIMARY KEY (source_id, key, via)
);
CREATE INDEX IF NOT EXISTS document_refs_key ON document_refs(key);
CREATE VIRTUAL TABLE IF NOT EXISTS passage_fts USING fts5(
    title, section, text, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS passage_vectors (
    rowid INTEGER PRIMARY KEY,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS document_heads (
    source_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS document_derivation (
    source_id TEXT PRIMARY KEY,
    stamp TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS document_unreadable (
    source_id TEXT PRIMARY KEY,
    reason TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS passage_vocab USING fts5vocab(passage_fts, 'row');
"""

_OUTDATED = (
    "LEFT JOIN document_derivation s ON s.source_id = d.source_id "
    "WHERE (d.content_hash = '' OR s.stamp IS NULL OR s.stamp <> ?)"
)
"""The documents (``d``) that must be read again: marked so when opened (above), or derived
under another stamp than the one bound to ``?`` (research/corpus_derivation.py)."""


@runtime_checkable
class KnowsVocabulary(Protocol):
    """A retriever that knows its documents' words: how common each word of a text is among
    them, and the text with its misspellings replaced by their words."""

    async def vocabulary(self, text: str, collections: list[str]) -> dict[str, float]: ...

    async def corrected(self, text: str) -> str: ...


class Corpus:
    """One SQLite FTS5 database file holding any number of collections."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._locked = False
        self._db = open_sqlite_file(self.path, "corpus", schema=SCHEMA, version=SCHEMA_VERSION)
        self._index: VectorIndex | None = None
        self._index_version = -1
        self._new_vectors = PassageVectors()
        self._speller = Speller(self._db)
        self._relevance: dict[tuple[str, tuple[str, ...], str], dict[str, float]] = {}
        self._forget_documents_without_keys()
        self._forget_outdated_heads()

    def _forget_documents_without_keys(self) -> None:
        """Documents indexed before references (version 1) or vectors (version 2) were recorded
        are re-read on the next add; until then only the lexical half of a search finds them."""
        stale = (
            "content_hash <> '' AND (source_id NOT IN (SELECT source_id FROM document_keys) OR "
            "source_id IN (SELECT p.source_id FROM passages p LEFT JOIN passage_vectors v "
            "ON v.rowid = p.rowid WHERE v.rowid IS NULL))"
        )
        if self._db.execute(f"SELECT 1 FROM documents WHERE {stale} LIMIT 1").fetchone():
            try:
                with self._transaction() as db:
                    db.execute(f"UPDATE documents SET content_hash = '' WHERE {stale}")
            except sqlite3.OperationalError:
                return  # read-only: searching still works; the next writable open catches up

    def _forget_outdated_heads(self) -> None:
        """Drop the cached head vectors of documents derived under another :data:`STAMP` (the
        head encoder may have changed): a question computes them again with today's."""
        outdated = f"SELECT d.source_id FROM documents d {_OUTDATED}"
        found = self._db.execute(
            f"SELECT 1 FROM document_heads WHERE source_id IN ({outdated}) LIMIT 1", (STAMP,)
        ).fetchone()
        if found is None:
            return
        try:
            with self._transaction() as db:
                db.execute(f"DELETE FROM document_heads WHERE source_id IN ({outdated})", (STAMP,))
        except sqlite3.OperationalError:
            return  # read-only: the next writable open catches up

    def needs_reindex(self, collection: str) -> bool:
        """Whether some document of ``collection`` must be read again (indexed by an older version)."""
        row = self._db.execute(
            f"SELECT 1 FROM documents d {_OUTDATED} AND d.collection = ? LIMIT 1",
            (STAMP, collection),
        ).fetchone()
        return row is not None

    def outdated(self) -> list[OutdatedCollection]:
        """The collections holding documents derived by an older version of the indexing code
        (research/corpus_derivation.py), with how many: ``corpus add`` derives them again —
        except those it could not read the last time it tried (how many, and one reason)."""
        rows = self._db.execute(
            "SELECT d.collection, COALESCE(c.root, ''), COUNT(*), COUNT(u.source_id), "
            "COALESCE(MIN(u.reason), '') FROM documents d "
            "LEFT JOIN collections c ON c.name = d.collection "
            "LEFT JOIN document_unreadable u ON u.source_id = d.source_id "
            f"{_OUTDATED} GROUP BY d.collection ORDER BY d.collection",
            (STAMP,),
        )
        return [
            OutdatedCollection(name=r[0], root=r[1], documents=r[2], unreadable=r[3], reason=r[4])
            for r in rows
        ]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._db:
            yield self._db

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """One writer at a time across processes: concurrent first use builds the corpus once.

        A lock file beside the database, held with ``flock`` while a process indexes; another
        process waits for it (however long the build takes, unlike SQLite's busy timeout) and
        then finds the work done. Hand-written with the standard library: the lock is a few
        lines and no dependency is needed for it.
        """
        if self._locked:
            yield  # this Corpus holds it already (a build inside ensure_default_corpus)
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            handle = open(lock_path, "a+b")  # noqa: SIM115 - held for the whole block
        except OSError:
            yield  # an unwritable folder: no other process can be writing either
            return
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            self._locked = True
            try:
                yield
            finally:
                self._locked = False
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def _indexing(self, collection: str) -> Iterator[sqlite3.Connection]:
        """The one write transaction of an indexing call, under :meth:`exclusive`."""
        self._index = None
        self._speller.forget()
        self._relevance.clear()
        with self.exclusive():
            try:
                with self._transaction() as db:
                    yield db
                    self._new_vectors.finish(db)
            except (sqlite3.OperationalError, OSError) as error:
                if isinstance(error, CorpusFolderError):
                    raise
                raise _write_failure(self.path, collection, error) from None
            finally:
                self._new_vectors.close()

    # -- indexing -------------------------------------------------------------
    def add_folder(
        self,
        folder: str | Path,
        collection: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        limits: CorpusLimits = DEFAULT_LIMITS,
    ) -> IndexReport:
        """Index the folder's supported files into ``collection`` (default: the folder's name),
        each read within ``limits`` (a file past them, or a symlink out of the folder, is skipped
        with its reason: research/corpus_files.py); ``on_progress(done, total)`` is called once
        the files are listed and after each file."""
        root = folder_root(folder)
        name = collection or root.name
        started = time.perf_counter()
        report = IndexReport(collection=name)
        listing = list_folder(root, limits)
        files = listing.files
        report.skipped.extend(listing.skipped)
        seen: set[str] = set()
        with self._indexing(name) as db:
            if on_progress is not None:
                on_progress(0, len(files))
            for done, (path, real) in enumerate(files, 1):
                relative = path.relative_to(root).with_suffix("").as_posix()
                source_id = f"{name}/{relative}"
                seen.add(source_id)
                try:
                    raw = read_document(real, limits)
                except UnreadableDocument as exc:
                    self._skip(db, report, source_id, SkippedFile(str(path), str(exc)))
                except OSError as exc:
                    reason = f"cannot read: {exc.strerror or exc}"
                    self._skip(db, report, source_id, SkippedFile(str(path), reason))
                else:
                    self._index_one(db, report, source_id, name, path.as_uri(), raw, path, limits)
                if on_progress is not None:
                    on_progress(done, len(files))
            stale = [
                row[0]
                for row in db.execute(
                    "SELECT source_id FROM documents WHERE collection = ?", (name,)
                )
                if row[0] not in seen
            ]
            for source_id in stale:
                self._remove(db, source_id)
                report.removed += 1
            self._record_collection(db, name, str(root))
        report.seconds = time.perf_counter() - started
        return report

    def add_documents(
        self, collection: str, root: str, documents: Iterable[tuple[str, str, LoadedDocument]]
    ) -> IndexReport:
        """Index already-loaded documents given as (relative id, uri, document)."""
        started = time.perf_counter()
        report = IndexReport(collection=collection)
        with self._indexing(collection) as db:
            for relative, uri, document in documents:
                source_id = f"{collection}/{relative}"
                digest = hashlib.sha256(document.text.encode()).hexdigest()
                stored = self._stored(db, source_id)
                if stored == (digest, STAMP):
                    report.unchanged += 1
                    continue
                self._store(db, report, source_id, collection, uri, digest, document, stored)
            self._record_collection(db, collection, root)
        report.seconds = time.perf_counter() - started
        return report

    def _index_one(
        self,
        db: sqlite3.Connection,
        report: IndexReport,
        source_id: str,
        collection: str,
        uri: str,
        raw: bytes,
        path: Path,
        limits: CorpusLimits,
    ) -> None:
        digest = hashlib.sha256(raw).hexdigest()
        stored = self._stored(db, source_id)
        if stored == (digest, STAMP):
            report.unchanged += 1
            return
        try:
            document = load_document(path, raw, limits)
        except UnreadableDocument as exc:
            self._skip(db, report, source_id, SkippedFile(str(path), str(exc)))
            return
        self._store(db, report, source_id, collection, uri, digest, document, stored)

    @staticmethod
    def _skip(
        db: sqlite3.Connection, report: IndexReport, source_id: str, skipped: SkippedFile
    ) -> None:
        """A file that could not be read is reported; when its document is stored (it keeps
        what an earlier read derived, under that read's stamp) why is kept beside it, so the
        outdated notice says re-indexing will not bring it up to date (:meth:`outdated`)."""
        report.skipped.append(skipped)
        db.execute(
            "INSERT OR REPLACE INTO document_unreadable(source_id, reason) "
            "SELECT source_id, ? FROM documents WHERE source_id = ?",
            (skipped.reason, source_id),
        )

    @staticmethod
    def _stored(db: sqlite3.Connection, source_id: str) -> tuple[str, str] | None:
        """(content hash, derivation stamp — '' for none) of the stored document, if any."""
        row = db.execute(
            "SELECT d.content_hash, COALESCE(s.stamp, '') FROM documents d "
            "LEFT JOIN document_derivation s ON s.source_id = d.source_id WHERE d.source_id = ?",
            (source_id,),
        ).fetchone()
        return (row[0], row[1]) if row else None

    @staticmethod
    def _record_collection(db: sqlite3.Connection, name: str, root: str) -> None:
        db.execute(
            "INSERT INTO collections(name, root, indexed_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET root = excluded.root, indexed_at = excluded.indexed_at",
            (name, root, time.time()),
        )

    def _store(
        self,
        db: sqlite3.Connection,
        report: IndexReport,
        source_id: str,
        collection: str,
        uri: str,
        digest: str,
        document: LoadedDocument,
        stored: tuple[str, str] | None,
    ) -> None:
        """Index a document whose content hash or derivation stamp differs from the ``stored``
        one's (None: none is stored); the stored one is replaced."""
        if stored is None:
            report.added += 1
        else:
            self._remove(db, source_id)
            if stored[0] == digest:
                report.rederived += 1
            else:
                report.updated += 1
        pieces = split_passages(document.text)
        db.execute(
            "INSERT INTO documents(source_id, collection, uri, title, content_hash, published, updated, status,"
            " kind, superseded_by, passages, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                source_id,
                collection,
                uri,
                document.title,
                digest,
                _iso(document.published),
                _iso(document.updated),
                document.status,
                document.kind,
                document.superseded_by,
                len(pieces),
                time.time(),
            ),
        )
        db.execute(
            "INSERT OR REPLACE INTO document_derivation(source_id, stamp) VALUES (?, ?)",
            (source_id, STAMP),
        )
        db.execute("DELETE FROM document_unreadable WHERE source_id = ?", (source_id,))
        # the row ids SQLite would give one by one (the largest + 1), given here so that the
        # passages and their text are inserted with one executemany each
        first = db.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM passages").fetchone()[0]
        rowids = range(first, first + len(pieces))
        db.executemany(
            "INSERT INTO passages(rowid, passage_id, source_id, ordinal) VALUES (?, ?, ?, ?)",
            [(r, f"{source_id}#{n}", source_id, n) for n, r in enumerate(rowids)],
        )
        db.executemany(
            "INSERT INTO passage_fts(rowid, title, section, text) VALUES (?, ?, ?, ?)",
            [(r, document.title, section, text) for r, (section, text) in zip(rowids, pieces)],
        )
        self._new_vectors.add(
            db, rowids, [f"{document.title}\n{section}\n{text}" for section, text in pieces]
        )
        report.passages += len(pieces)
        relative = source_id.removeprefix(f"{collection}/")
        db.executemany(
            "INSERT OR IGNORE INTO document_keys(key, source_id) VALUES (?, ?)",
            [(key, source_id) for key in sorted(own_keys(relative, document.fields))],
        )
        db.executemany(
            "INSERT OR IGNORE INTO document_refs(source_id, key, via) VALUES (?, ?, ?)",
            [
                (source_id, key, via)
                for key, via in sorted(references(relative, document.text, document.fields))
            ],
        )

    @staticmethod
    def _remove(db: sqlite3.Connection, source_id: str) -> None:
        db.execute(
            "DELETE FROM passage_fts WHERE rowid IN (SELECT rowid FROM passages WHERE source_id = ?)",
            (source_id,),
        )
        db.execute(
            "DELETE FROM passage_vectors WHERE rowid IN "
            "(SELECT rowid FROM passages WHERE source_id = ?)",
            (source_id,),
        )
        db.execute("DELETE FROM passages WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_keys WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_refs WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_heads WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_derivation WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_unreadable WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM documents WHERE source_id = ?", (source_id,))

    # -- reading --------------------------------------------------------------
    def collections(self) -> list[CollectionInfo]:
        rows = self._db.execute(
            "SELECT c.name, c.root, c.indexed_at, COUNT(d.source_id), COALESCE(SUM(d.passages), 0) "
            "FROM collections c LEFT JOIN documents d ON d.collection = c.name GROUP BY c.name ORDER BY c.name"
        )
        return [
            CollectionInfo(name=r[0], root=r[1], indexed_at=r[2], documents=r[3], passages=r[4])
            for r in rows
        ]

    def has_collection(self, name: str) -> bool:
        return (
            self._db.execute("SELECT 1 FROM collections WHERE name = ?", (name,)).fetchone()
            is not None
        )

    def document(self, source_id: str) -> DocumentRecord | None:
        row = self._db.execute(
            "SELECT source_id, collection, uri, title, published, updated, status, kind, superseded_by "
            "FROM documents WHERE source_id = ?",
            (source_id,),
        ).fetchone()
        if row is None:
            return None
        return DocumentRecord(
            source_id=row[0],
            collection=row[1],
            uri=row[2],
            title=row[3],
            published=_day(row[4]),
            updated=_day(row[5]),
            status=row[6],
            kind=row[7],
            superseded_by=row[8],
        )

    def passage_text(self, passage_id: str) -> str | None:
        row = self._db.execute(
            "SELECT f.text FROM passages p JOIN passage_fts f ON f.rowid = p.rowid WHERE p.passage_id = ?",
            (passage_id,),
        ).fetchone()
        return row[0] if row else None

    def related(self, source_ids: Iterable[str]) -> dict[str, str]:
        """Documents the given ones refer to, or that refer to them: {source id: how}.

        ``how`` is the strongest relation found: a header field (``superseded-by`` …) before
        ``link`` before ``mention``; a document that refers to one of the given ones is
        ``cited-by`` (or ``<field>-of`` when it names it in a header, e.g. ``replaces-of``).
        """
        origins = sorted(set(source_ids))
        if not origins:
            return {}
        marks = ",".join("?" * len(origins))
        rows = self._db.execute(
            "SELECT k.source_id, r.via FROM document_refs r JOIN document_keys k ON k.key = r.key "
            f"WHERE r.source_id IN ({marks}) "
            "UNION ALL "
            "SELECT r.source_id, CASE WHEN r.via IN ('mention', 'link') THEN 'cited-by' "
            "ELSE r.via || '-of' END FROM document_keys k JOIN document_refs r ON r.key = k.key "
            f"WHERE k.source_id IN ({marks})",
            [*origins, *origins],
        )
        found: dict[str, str] = {}
        for source_id, via in rows:
            if source_id in origins:
                continue
            if source_id not in found or relation_rank(via) < relation_rank(found[source_id]):
                found[source_id] = via
        return found

    def vectors(self) -> VectorIndex:
        """The passage vectors, loaded once and again only after the file changed."""
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if self._index is None or version != self._index_version:
            self._index = VectorIndex.load(self._db)
            self._index_version = version
            self._relevance.clear()
        return self._index

    def relevance(
        self, question: str, collections: Iterable[str] | None = None, not_after: str | None = None
    ) -> dict[str, float]:
        """{source id: relevance 0..1 to ``question``} (research.relevance), remembered per
        question and scope: every search of a run is scored against the run's question."""
        names = tuple(sorted(collections or []))
        key = (question, names, not_after or "")
        index = self.vectors()
        if key not in self._relevance:
            self._relevance[key] = question_relevance(
                self._db,
                index,
                self.corrected(question),
                SearchFilters(collections=list(names), not_after=not_after),
            )
        return self._relevance[key]

    def corrected(self, text: str) -> str:
        """``text`` with its misspelt words replaced by the corpus's own ("Pyhton" → "python",
        "wiht" → "with"): research.spelling."""
        return self._speller.corrected(text)

    def vocabulary(self, text: str, collections: Iterable[str] | None = None) -> dict[str, float]:
        """{word of ``text``: share of the collections' documents holding it} — 0 for a word the
        corpus does not hold; a share near 1 marks the corpus's domain word; empty when the
        collections hold no document."""
        names = sorted(collections or [])
        where = f"AND d.collection IN ({','.join('?' * len(names))})" if names else ""
        total = self._db.execute(
            f"SELECT COUNT(*) FROM documents d WHERE 1 = 1 {where}", names
        ).fetchone()[0]
        shares: dict[str, float] = {}
        if not total:
            return shares  # no documents: nothing to say about any word
        for word in dict.fromkeys(w.lower() for w in words(text) if w.isalpha()):
            found = self._db.execute(
                "SELECT COUNT(DISTINCT p.source_id) FROM passage_fts f JOIN passages p "
                "ON p.rowid = f.rowid JOIN documents d ON d.source_id = p.source_id "
                f"WHERE passage_fts MATCH ? {where}",
                [f'"{word}"', *names],
            ).fetchone()[0]
            shares[word] = round(found / total, 4) if total else 0.0
        return shares

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        collections: Iterable[str] | None = None,
        exclude_sources: Iterable[str] = (),
        exclude_passages: Iterable[str] = (),
        published_after: str | None = None,
        published_before: str | None = None,
        not_after: str | None = None,
        related_to: Iterable[str] = (),
        distinct_sources: bool = False,
        about: str | None = None,
        within: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Passages for ``query``, best first, as plain dicts (the Retriever shape): lexical
        and semantic rankings fused (research.hybrid). With ``about`` (the run's question) each
        hit carries ``relevance``: its document's relevance to that question (:meth:`relevance`).

        ``published_after`` / ``published_before`` (ISO days, inclusive) keep
        documents that state a published or updated date inside that range —
        with both, a document published before the range and updated after it
        is not kept, the same rule ``effective_date`` scores recency by (the
        latest date not after ``as_of``); ``distinct_sources`` keeps the best
        passage per document. ``not_after`` (an ISO day, the run's ``as_of``) leaves out every
        document published after it (undated documents stay). ``related_to`` searches only the
        documents that those documents refer to or that refer to them (one passage each, with
        ``via`` saying how they are related), never those documents themselves. ``within``
        searches only those documents.
        """
        related: dict[str, str] = {}
        origins = sorted(set(related_to))
        if origins:
            related = self.related(origins)
            if not related:
                return []
            distinct_sources = True
        filters = SearchFilters(
            collections=list(collections or []),
            exclude_sources=list(exclude_sources),
            exclude_passages=list(exclude_passages),
            published_after=published_after,
            published_before=published_before,
            not_after=not_after,
            only_sources=(
                sorted(set(related) & set(within) if within is not None else related)
                if origins
                else (sorted(within) if within is not None else None)
            ),
        )
        if filters.only_sources == []:
            return []
        hits = hybrid_search(
            self._db,
            self.vectors(),
            self.corrected(query),
            filters,
            limit=limit,
            offset=offset,
            distinct_sources=distinct_sources,
        )
        if related:
            for hit in hits:
                hit["via"] = related[hit["source_id"]]
        if about:
            scores = self.relevance(about, collections, not_after)
            for hit in hits:
                hit["relevance"] = scores.get(hit["source_id"], 0.0)
        return hits


__all__ = [
    "CollectionInfo",
    "Corpus",
    "CorpusFolderError",
    "CorpusRetriever",
    "CorpusWriteError",
    "DocumentRecord",
    "IndexReport",
    "KnowsVocabulary",
    "OutdatedCollection",
    "SkippedFile",
]


class CorpusRetriever:
    """The corpus as a :class:`plumbing.retriever.Retriever`.

    ``collections`` limits every search to those collections unless a call
    names its own.
    """

    def __init__(self, corpus: Corpus, collections: Iterable[str] | None = None) -> None:
        self.corpus = corpus
        self.collections = list(collections or [])

    async def search(self, query: str, **options: Any) -> list[dict[str, Any]]:
        options.setdefault("collections", self.collections or None)
        return self.corpus.search(query, **options)

    async def vocabulary(self, text: str, collections: list[str]) -> dict[str, float]:
        return self.corpus.vocabulary(text, collections or self.collections or None)

    async def corrected(self, text: str) -> str:
        return self.corpus.corrected(text)
