"""Passage vectors computed while indexing, on a thread of their own.

Embedding is most of what indexing costs, and its work runs in code that releases the GIL (the
tokenizer, in Rust, and numpy's gathers and sums, a few calls for eight passages): so each batch
of passages is embedded on a worker thread while the indexing thread reads, splits and stores the
next documents, and on two cores the two overlap. The model loads on the worker too, when the
first passage is added (re-indexing unchanged documents never loads it). The indexing thread
writes the vectors, in its one transaction: a failure anywhere rolls back the whole call (the
corpus keeps what it held), and the worker is stopped before the call returns, whatever happened
(and the words the model remembered for the call are forgotten).

Hand-written with ``concurrent.futures``: one worker and a bounded queue of batches are a few
lines, and the transaction the vectors belong to is this module's caller's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from research.embeddings import embedder, forget_pieces, to_blobs

VECTOR_BATCH = 512
"""Passages embedded together (one tokenizer call each). The worker starts once the first batch
is stored, and the last is embedded after the indexing thread is done: the smaller a batch, the
less of the two threads' work is not overlapped; below 512 each batch's fixed costs show (the
PEPs: 0.83 CPU-s embedded 1,024 or 512 at a time, 0.92 256 at a time)."""
IN_FLIGHT = 8
"""Batches queued for the worker at most: the indexing thread waits for the oldest beyond that, so
a large folder holds a few batches' texts in memory, never the whole folder's."""


def _embedded(texts: list[str]) -> list[bytes]:
    return to_blobs(embedder().embed(texts))


class PassageVectors:
    """The vectors of the passages one indexing call stores: :meth:`add` the passages, then
    :meth:`finish` (writes the rest) or :meth:`close` (drops what is not written)."""

    def __init__(self) -> None:
        self._worker: ThreadPoolExecutor | None = None
        self._rowids: list[int] = []
        self._texts: list[str] = []
        self._running: list[tuple[list[int], Future[list[bytes]]]] = []

    def add(self, db: sqlite3.Connection, rowids: Sequence[int], texts: Sequence[str]) -> None:
        """Passages to embed: their row ids and texts (a document's, in order)."""
        if self._worker is None:
            # the first passage to embed: the model loads on the worker while this thread parses
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding")
            self._worker.submit(embedder)
        self._rowids.extend(rowids)
        self._texts.extend(texts)
        if len(self._texts) >= VECTOR_BATCH:
            self._submit()
            self._write(db, keep=IN_FLIGHT)

    def finish(self, db: sqlite3.Connection) -> None:
        """Write every passage's vector (waiting for the worker), then stop the worker."""
        if self._texts:
            self._submit()
        self._write(db, keep=0)
        self.close()

    def close(self) -> None:
        """Stop the worker: batches not started are dropped, a running one is waited for."""
        if self._worker is not None:
            self._worker.shutdown(wait=True, cancel_futures=True)
            self._worker = None
            forget_pieces()
        self._rowids, self._texts, self._running = [], [], []

    def _submit(self) -> None:
        assert self._worker is not None
        future = self._worker.submit(_embedded, self._texts)
        self._running.append((self._rowids, future))
        self._rowids, self._texts = [], []

    def _write(self, db: sqlite3.Connection, *, keep: int) -> None:
        """Store the finished batches' vectors, in order, waiting for the oldest while more than
        ``keep`` batches are queued."""
        while self._running and (len(self._running) > keep or self._running[0][1].done()):
            rowids, future = self._running.pop(0)
            db.executemany(
                "INSERT OR REPLACE INTO passage_vectors(rowid, vector) VALUES (?, ?)",
                zip(rowids, future.result()),
            )
