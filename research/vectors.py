"""The corpus's passage vectors in memory, with the document facts a search filters by.

Loaded from the ``passage_vectors`` table the first time a search needs it (about 16,000
passages and 16 MB of float32 for the PEP corpus) and dropped when the file changes. Filters
are the same rules the SQL of a lexical search applies (collections, dates, excluded or
related documents), computed per document and then per passage as numpy masks, so the
semantic half of a search costs one matrix-vector product.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from research.embeddings import Vectors, from_blobs

if TYPE_CHECKING:
    import sqlite3

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class DocumentFilter:
    """Which documents a search may return (None: no such condition)."""

    collections: frozenset[str] | None = None
    not_after: str | None = None
    published_after: str | None = None
    published_before: str | None = None
    exclude_sources: frozenset[str] = frozenset()
    only_sources: frozenset[str] | None = None


class VectorIndex:
    """Every passage with a stored vector: its row id, document and unit vector."""

    def __init__(
        self,
        rowids: npt.NDArray[np.int64],
        passage_ids: list[str],
        row_source: npt.NDArray[np.int64],
        matrix: Vectors,
        documents: list[tuple[str, str, str, str]],
        titles: list[str],
    ) -> None:
        self.rowids = rowids
        self.matrix = matrix
        self.row_source = row_source
        self.documents = documents
        """(source id, collection, published, updated) per document, in row_source's numbering."""
        self.titles = titles
        self.number_of = {d[0]: number for number, d in enumerate(documents)}
        self.passage_ids = passage_ids
        self.row_of = {pid: row for row, pid in enumerate(passage_ids)}
        self.row_of_rowid = {int(r): row for row, r in enumerate(rowids)}
        self._rows_of: list[npt.NDArray[np.int64]] | None = None

    @classmethod
    def load(cls, db: sqlite3.Connection) -> VectorIndex:
        documents: list[tuple[str, str, str, str]] = []
        titles: list[str] = []
        numbers: dict[str, int] = {}
        for source_id, collection, published, updated, title in db.execute(
            "SELECT source_id, collection, COALESCE(published, ''), COALESCE(updated, ''), title "
            "FROM documents ORDER BY source_id"
        ):
            numbers[source_id] = len(documents)
            documents.append((source_id, collection, published, updated))
            titles.append(title)
        rowids: list[int] = []
        passage_ids: list[str] = []
        sources: list[int] = []
        blobs: list[bytes] = []
        for rowid, passage_id, source_id, blob in db.execute(
            "SELECT p.rowid, p.passage_id, p.source_id, v.vector FROM passages p "
            "JOIN passage_vectors v ON v.rowid = p.rowid ORDER BY p.rowid"
        ):
            if source_id in numbers:
                rowids.append(rowid)
                passage_ids.append(passage_id)
                sources.append(numbers[source_id])
                blobs.append(blob)
        return cls(
            np.array(rowids, dtype=np.int64),
            passage_ids,
            np.array(sources, dtype=np.int64),
            from_blobs(blobs),
            documents,
            titles,
        )

    def __len__(self) -> int:
        return len(self.rowids)

    def document_mask(self, where: DocumentFilter) -> Mask:
        """Which documents (in :attr:`documents`' numbering) ``where`` lets a search return."""
        keep = np.ones(len(self.documents), dtype=bool)
        for number, (source_id, collection, published, updated) in enumerate(self.documents):
            if where.collections is not None and collection not in where.collections:
                keep[number] = False
            elif source_id in where.exclude_sources or (
                where.only_sources is not None and source_id not in where.only_sources
            ):
                keep[number] = False
            elif where.not_after and published and published > where.not_after:
                keep[number] = False
            elif (where.published_after or where.published_before) and not any(
                day
                and (not where.published_after or day >= where.published_after)
                and (not where.published_before or day <= where.published_before)
                for day in (published, updated)
            ):
                keep[number] = False
        return keep

    def nearest(
        self, query: Vectors, where: DocumentFilter, exclude_passages: Iterable[str], depth: int
    ) -> list[tuple[int, float]]:
        """(row id, cosine similarity) of the ``depth`` passages nearest ``query``, best first."""
        if not len(self):
            return []
        mask = self.document_mask(where)[self.row_source]
        for passage_id in exclude_passages:
            row = self.row_of.get(passage_id)
            if row is not None:
                mask[row] = False
        rows = np.flatnonzero(mask)
        if not rows.size:
            return []
        scores = self.matrix[rows] @ query
        take = min(depth, rows.size)
        best = np.argpartition(-scores, take - 1)[:take]
        ordered = best[np.lexsort((self.rowids[rows[best]], -scores[best]))]
        return [(int(self.rowids[rows[i]]), float(scores[i])) for i in ordered]

    def nearest_of(
        self, query: Vectors, number: int, exclude_passages: frozenset[str]
    ) -> tuple[int, float] | None:
        """(row id, cosine similarity) of document ``number``'s passage nearest ``query``, or None
        when it has none left after ``exclude_passages``."""
        if self._rows_of is None:
            order = np.argsort(self.row_source, kind="stable")
            bounds = np.searchsorted(self.row_source[order], np.arange(len(self.documents) + 1))
            self._rows_of = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        rows = [
            int(r)
            for r in self._rows_of[number]
            if not exclude_passages or self.passage_ids[r] not in exclude_passages
        ]
        if not rows:
            return None
        scores = self.matrix[rows] @ query
        best = int(np.argmax(scores))
        return int(self.rowids[rows[best]]), float(scores[best])

    def similarities(self, query: Vectors, rowids: Iterable[int]) -> dict[int, float]:
        """Cosine similarity of ``query`` to each passage (those without a vector left out)."""
        rows = [(r, self.row_of_rowid[r]) for r in rowids if r in self.row_of_rowid]
        if not rows:
            return {}
        scores = self.matrix[[row for _, row in rows]] @ query
        return {r: float(s) for (r, _), s in zip(rows, scores)}
