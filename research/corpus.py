"""The local corpus: SQLite FTS5 in its own database file (DESIGN §8, §9).

Documents are split into passages; the passages are indexed with the
``porter unicode61`` tokenizer and ranked by bm25 (titles weigh double).
Re-indexing a folder is incremental: a file whose content hash is unchanged
is left alone, a changed one is replaced, a vanished one is removed. Files
that cannot be read are reported and skipped, never fatal.

Identifiers are stable and readable: a source is ``<collection>/<relative
path without suffix>`` and a passage is ``<source>#<ordinal>``, so evidence
recorded in a run still names the same text after a re-index.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from engine.sqlite_file import StoreFileError, open_sqlite_file
from plumbing.sqlite_files import SqliteFault, sqlite_fault
from research.loaders import (
    SUPPORTED_SUFFIXES,
    LoadedDocument,
    UnreadableDocument,
    load_document,
    split_passages,
)
from research.references import own_keys, references, relation_rank
from research.text import key_phrases, words

SCHEMA_VERSION = 2
"""Stamped into the file (``PRAGMA user_version``); a file with a higher one is refused."""
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
"""


class CorpusFolderError(FileNotFoundError):
    """A folder that cannot be indexed (missing, not a folder, a symlink loop); one line."""


class CorpusWriteError(StoreFileError):
    """Indexing could not write the corpus (full disk, read-only file); ``str()`` is one line
    naming the file and the remedy. The transaction is rolled back: the corpus keeps what it held."""


def _write_failure(path: Path, collection: str, error: BaseException) -> CorpusWriteError:
    fault = sqlite_fault(error, path)
    if fault is SqliteFault.FULL:
        remedy = "the disk is full: free some space and run the command again"
    elif fault is SqliteFault.READ_ONLY:
        remedy = (
            "the file or its folder is read-only: make it writable or choose another --workspace"
        )
    else:
        remedy = f"it could not be written ({error}): check the disk and run the command again"
    return CorpusWriteError(
        f"{path}: indexing {collection} failed — {remedy}; the corpus keeps what it held before"
    )


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


@dataclass
class IndexReport:
    collection: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    passages: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.collection}: {self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped ({self.seconds:.2f} s)"
        )


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    root: str
    documents: int
    passages: int
    indexed_at: float


@dataclass(frozen=True)
class DocumentRecord:
    source_id: str
    collection: str
    uri: str
    title: str
    published: date | None
    updated: date | None
    status: str
    kind: str
    superseded_by: str


_PHRASE = re.compile(r'"([^"]+)"')


def fts_query(text: str) -> str:
    """Free text → an FTS5 OR-query of quoted terms (quoting makes any word safe).

    A ``"quoted phrase"`` in the text stays a phrase (its words adjacent, stop words kept), so
    "with statement" can find the with statement although "with" alone ranks nothing.
    """
    phrases = [" ".join(words(p)) for p in _PHRASE.findall(text)]
    phrases = [p for p in dict.fromkeys(phrases) if " " in p]
    loose = key_phrases(_PHRASE.sub(" ", text) + " " + " ".join(phrases), limit=24, min_length=2)
    return " OR ".join([*(f'"{p}"' for p in phrases), *(f'"{w}"' for w in loose)])


def _broken_link(path: Path) -> str:
    """Why a symlink cannot be followed (a loop, or a target that is gone); "" when it can."""
    if not path.is_symlink():
        return ""
    try:
        path.resolve(strict=True)
    except (RuntimeError, OSError) as error:
        if isinstance(error, RuntimeError) or getattr(error, "errno", None) == errno.ELOOP:
            return "a symlink loop; skipped"
        return "a dangling symlink (its target is gone); skipped"
    return ""


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


class Corpus:
    """One SQLite FTS5 database file holding any number of collections."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._locked = False
        self._db = open_sqlite_file(self.path, "corpus", schema=SCHEMA, version=SCHEMA_VERSION)
        self._forget_documents_without_keys()

    def _forget_documents_without_keys(self) -> None:
        """Documents indexed before references were recorded (version 1) are re-read on the next add."""
        stale = "content_hash <> '' AND source_id NOT IN (SELECT source_id FROM document_keys)"
        if self._db.execute(f"SELECT 1 FROM documents WHERE {stale} LIMIT 1").fetchone():
            try:
                with self._transaction() as db:
                    db.execute(f"UPDATE documents SET content_hash = '' WHERE {stale}")
            except sqlite3.OperationalError:
                return  # read-only: searching still works; the next writable open catches up

    def needs_reindex(self, collection: str) -> bool:
        """Whether some document of ``collection`` must be read again (indexed by an older version)."""
        row = self._db.execute(
            "SELECT 1 FROM documents WHERE collection = ? AND content_hash = '' LIMIT 1",
            (collection,),
        ).fetchone()
        return row is not None

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
        with self.exclusive():
            try:
                with self._transaction() as db:
                    yield db
            except (sqlite3.OperationalError, OSError) as error:
                if isinstance(error, CorpusFolderError):
                    raise
                raise _write_failure(self.path, collection, error) from None

    # -- indexing -------------------------------------------------------------
    def add_folder(
        self,
        folder: str | Path,
        collection: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """Index the folder's supported files into ``collection`` (default: the folder's name);
        ``on_progress(done, total)`` is called once the files are listed and after each file."""
        try:
            root = Path(folder).expanduser().resolve(strict=True)
        except (RuntimeError, OSError) as error:
            looped = isinstance(error, RuntimeError) or getattr(error, "errno", None) == errno.ELOOP
            raise CorpusFolderError(
                f"{folder}: a symlink loop; pass the real folder of md/rst/txt/html/pdf files"
                if looped
                else f"{folder}: not a folder; pass a directory of md/rst/txt/html/pdf files"
            ) from None
        if not root.is_dir():
            raise CorpusFolderError(
                f"{folder}: not a folder; pass a directory of md/rst/txt/html/pdf files"
            )
        name = collection or root.name
        started = time.perf_counter()
        report = IndexReport(collection=name)
        files: list[Path] = []
        for path in sorted(root.rglob("*")):
            broken = _broken_link(path)
            if broken:
                report.skipped.append(SkippedFile(str(path), broken))
            elif path.is_file() and path.suffix.lower() in SUPPORTED_SUFFIXES:
                files.append(path)
        seen: set[str] = set()
        with self._indexing(name) as db:
            if on_progress is not None:
                on_progress(0, len(files))
            for done, path in enumerate(files, 1):
                relative = path.relative_to(root).with_suffix("").as_posix()
                source_id = f"{name}/{relative}"
                seen.add(source_id)
                try:
                    raw = path.read_bytes()
                except OSError as exc:
                    report.skipped.append(
                        SkippedFile(str(path), f"cannot read: {exc.strerror or exc}")
                    )
                else:
                    self._index_one(db, report, source_id, name, path.as_uri(), raw, path)
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
                stored = self._stored_hash(db, source_id)
                if stored == digest:
                    report.unchanged += 1
                    continue
                self._store(
                    db,
                    report,
                    source_id,
                    collection,
                    uri,
                    digest,
                    document,
                    replaces=stored is not None,
                )
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
    ) -> None:
        digest = hashlib.sha256(raw).hexdigest()
        stored = self._stored_hash(db, source_id)
        if stored == digest:
            report.unchanged += 1
            return
        try:
            document = load_document(path, raw)
        except UnreadableDocument as exc:
            report.skipped.append(SkippedFile(str(path), str(exc)))
            return
        self._store(
            db, report, source_id, collection, uri, digest, document, replaces=stored is not None
        )

    @staticmethod
    def _stored_hash(db: sqlite3.Connection, source_id: str) -> str | None:
        row = db.execute(
            "SELECT content_hash FROM documents WHERE source_id = ?", (source_id,)
        ).fetchone()
        return row[0] if row else None

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
        *,
        replaces: bool,
    ) -> None:
        """Index a document whose content hash differs from the stored one (``replaces``: one is stored)."""
        if replaces:
            self._remove(db, source_id)
            report.updated += 1
        else:
            report.added += 1
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
        for ordinal, (section, text) in enumerate(pieces):
            cursor = db.execute(
                "INSERT INTO passages(passage_id, source_id, ordinal) VALUES (?, ?, ?)",
                (f"{source_id}#{ordinal}", source_id, ordinal),
            )
            db.execute(
                "INSERT INTO passage_fts(rowid, title, section, text) VALUES (?, ?, ?, ?)",
                (cursor.lastrowid, document.title, section, text),
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
        db.execute("DELETE FROM passages WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_keys WHERE source_id = ?", (source_id,))
        db.execute("DELETE FROM document_refs WHERE source_id = ?", (source_id,))
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
    ) -> list[dict[str, Any]]:
        """Passages ranked by bm25 (best first), as plain dicts (the Retriever shape).

        ``published_after`` / ``published_before`` (ISO days, inclusive) keep
        documents that state a published or updated date inside that range —
        with both, a document published before the range and updated after it
        is not kept, the same rule ``effective_date`` scores recency by (the
        latest date not after ``as_of``); ``distinct_sources`` keeps the best
        passage per document. ``not_after`` (an ISO day, the run's ``as_of``) leaves out every
        document published after it (undated documents stay). ``related_to`` searches only the
        documents that those documents refer to or that refer to them (one passage each, with
        ``via`` saying how they are related), never those documents themselves.
        """
        match = fts_query(query)
        if not match:
            return []
        clauses = ["passage_fts MATCH ?"]
        params: list[Any] = [match]
        related: dict[str, str] = {}
        origins = sorted(set(related_to))
        if origins:
            related = self.related(origins)
            if not related:
                return []
            clauses.append(f"d.source_id IN ({','.join('?' * len(related))})")
            params += sorted(related)
            distinct_sources = True
        if not_after:
            clauses.append("(COALESCE(d.published, '') = '' OR d.published <= ?)")
            params.append(not_after)
        names = list(collections or [])
        if names:
            clauses.append(f"d.collection IN ({','.join('?' * len(names))})")
            params += names
        excluded_sources = list(exclude_sources)
        if excluded_sources:
            clauses.append(f"d.source_id NOT IN ({','.join('?' * len(excluded_sources))})")
            params += excluded_sources
        excluded_passages = list(exclude_passages)
        if excluded_passages:
            clauses.append(f"p.passage_id NOT IN ({','.join('?' * len(excluded_passages))})")
            params += excluded_passages
        if published_after or published_before:
            in_range = []
            for column in ("d.published", "d.updated"):
                bounds = [f"COALESCE({column}, '') <> ''"]
                if published_after:
                    bounds.append(f"{column} >= ?")
                    params.append(published_after)
                if published_before:
                    bounds.append(f"{column} <= ?")
                    params.append(published_before)
                in_range.append("(" + " AND ".join(bounds) + ")")
            clauses.append("(" + " OR ".join(in_range) + ")")
        # Rank first, cheaply (rowid and document only), and pick the rows to return; only
        # those are then read whole with their snippet. Reading every match whole cost most of
        # a question's time when the best passage per document was asked for (no LIMIT there).
        joins = (
            "FROM passage_fts f JOIN passages p ON p.rowid = f.rowid "
            "JOIN documents d ON d.source_id = p.source_id"
        )
        order = "ORDER BY bm25(passage_fts, 2.0, 1.0, 1.0), p.passage_id"
        sql = f"SELECT f.rowid, d.source_id {joins} WHERE {' AND '.join(clauses)} {order}"
        if not distinct_sources:
            sql += " LIMIT ?"
            params.append(offset + limit)
        chosen: list[int] = []
        seen_sources: set[str] = set()
        skipped = 0
        for rowid, source_id in self._db.execute(sql, params):
            if distinct_sources:
                if source_id in seen_sources:
                    continue
                seen_sources.add(source_id)
            if skipped < offset:
                skipped += 1
                continue
            chosen.append(rowid)
            if len(chosen) >= limit:
                break
        if not chosen:
            return []
        rows = self._db.execute(
            "SELECT p.passage_id, d.source_id, d.uri, d.title, f.section, f.text, "
            "snippet(passage_fts, 2, '[', ']', '…', 16), bm25(passage_fts, 2.0, 1.0, 1.0), "
            "d.published, d.updated, d.status, d.kind, d.superseded_by "
            f"{joins} WHERE passage_fts MATCH ? AND f.rowid IN ({','.join('?' * len(chosen))}) "
            f"{order}",
            [match, *chosen],
        )
        hits: list[dict[str, Any]] = []
        for row in rows:
            hits.append(
                {
                    "passage_id": row[0],
                    "source_id": row[1],
                    "uri": row[2],
                    "title": row[3],
                    "section": row[4],
                    "text": row[5],
                    "snippet": row[6],
                    "score": round(-row[7], 6),
                    "published": row[8],
                    "updated": row[9],
                    "status": row[10],
                    "kind": row[11],
                    "superseded_by": row[12],
                    **({"via": related[row[1]]} if related else {}),
                }
            )
        return hits


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
