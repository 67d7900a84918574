"""What indexing reports and reading returns: records, reports and the corpus's one-line errors."""

from __future__ import annotations

import errno
import shlex
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from engine.sqlite_file import StoreFileError
from plumbing.sqlite_files import SqliteFault, sqlite_fault


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
    rederived: int = 0
    """Unchanged documents read again: they were indexed by an older version of the indexing
    code (research/corpus_derivation.py)."""
    passages: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        rederived = (
            f", {self.rederived} re-indexed (indexed by an older version)" if self.rederived else ""
        )
        return (
            f"{self.collection}: {self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed{rederived}, {len(self.skipped)} skipped ({self.seconds:.2f} s)"
        )


@dataclass(frozen=True)
class OutdatedCollection:
    """A collection holding documents indexed by an older version of the indexing code: their
    passages and vectors are the old ones until ``corpus add`` reads them again."""

    name: str
    root: str
    documents: int
    unreadable: int = 0
    """How many of them ``corpus add`` could not read the last time it tried (a file past
    today's limits, say): re-indexing alone does not bring those up to date."""
    reason: str = ""
    """Why one of those could not be read."""

    def notice(self) -> str:
        """One line for a person: what is stale and what brings it up to date — the command, or,
        for documents that could not be read, that re-indexing will not (and why)."""
        stale = (
            f"{self.name}: {self.documents} document(s) were indexed by an older version of the "
        )
        unread = (
            f"could not be read again ({_bounded(self.reason)}): they keep their old passages "
            "until their files or the limits change, or the files are removed — re-indexing "
            "alone will not update them"
        )
        if self.unreadable >= self.documents:
            return f"{stale}workbench and {unread}"
        rerun = (
            "workbench and keep their old passages until re-indexed: run "
            f"workbench corpus add {shlex.quote(self.root) if self.root else 'FOLDER'} "
            f"--name {shlex.quote(self.name)}"
        )
        return stale + rerun + (f"; {self.unreadable} of them {unread}" if self.unreadable else "")


REASON_CHARACTERS = 200
"""The most of a skip reason a notice quotes (it names a file, whose name may be long)."""


def _bounded(reason: str) -> str:
    return reason if len(reason) <= REASON_CHARACTERS else reason[: REASON_CHARACTERS - 1] + "…"


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
