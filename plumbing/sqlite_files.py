"""Opening the workbench's SQLite files, and what an SQLite failure means (DESIGN §9).

Every file of the workspace — the run store, the corpus, the provider statistics, the
LangGraph checkpoints — is opened by the same rules: its folder is created, the connection
waits up to :data:`BUSY_TIMEOUT_S` for another process's lock, and the file is put in WAL mode
with ``synchronous=NORMAL`` (a kill -9 loses nothing committed; readers never block the one
writer). Putting a file in WAL mode writes its header, so a caller that must first check what
the file is (a schema version, say) connects, checks, and only then calls :func:`use_wal`.

A failure is reduced to a :class:`SqliteFault` by SQLite's primary result code (or an
operating-system error number) — the wording of a message is read only when there is no code.
Each caller says what the fault means for its own file; the kinds are the ones the fault
matrix puts on a workspace: read-only, full disk, locked, damaged.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Literal, TypeVar

BUSY_TIMEOUT_S = 5.0
"""How long a statement waits for another process's lock before it fails as locked."""
NEARLY_FULL_BYTES = 64 * 1024
"""Free space below which a disk counts as full: SQLite reports some writes on a full disk as
a plain "disk I/O error", or as a file it cannot open."""

IsolationLevel = Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None
T = TypeVar("T")


class SqliteFault(StrEnum):
    READ_ONLY = "read-only"  # the file, its folder or the file system refuses writes
    FULL = "full"  # no space left on the disk (or the quota)
    LOCKED = "locked"  # another process holds a lock longer than the busy timeout
    DAMAGED = "damaged"  # not a database, or a damaged one
    IO = "io"  # the disk reported an I/O error
    OTHER = "other"


_BY_RESULT_CODE = {
    sqlite3.SQLITE_FULL: SqliteFault.FULL,
    sqlite3.SQLITE_READONLY: SqliteFault.READ_ONLY,
    sqlite3.SQLITE_PERM: SqliteFault.READ_ONLY,
    sqlite3.SQLITE_CANTOPEN: SqliteFault.READ_ONLY,
    sqlite3.SQLITE_BUSY: SqliteFault.LOCKED,
    sqlite3.SQLITE_LOCKED: SqliteFault.LOCKED,
    sqlite3.SQLITE_CORRUPT: SqliteFault.DAMAGED,
    sqlite3.SQLITE_NOTADB: SqliteFault.DAMAGED,
    sqlite3.SQLITE_IOERR: SqliteFault.IO,
}
"""SQLite's primary result codes (extended codes are reduced to these) -> the fault."""
_BY_ERRNO = {
    errno.ENOSPC: SqliteFault.FULL,
    errno.EDQUOT: SqliteFault.FULL,
    errno.EACCES: SqliteFault.READ_ONLY,
    errno.EPERM: SqliteFault.READ_ONLY,
    errno.EROFS: SqliteFault.READ_ONLY,
    errno.EIO: SqliteFault.IO,
}
_BY_WORDS = (
    (("readonly", "read-only", "permission"), SqliteFault.READ_ONLY),
    (("full",), SqliteFault.FULL),
    (("locked", "busy"), SqliteFault.LOCKED),
    (("not a database", "malformed", "corrupt"), SqliteFault.DAMAGED),
    (("disk i/o",), SqliteFault.IO),
)
"""For an error that carries no code: the words SQLite's messages use."""


def disk_nearly_full(path: Path) -> bool:
    """Whether the disk holding ``path`` has (next to) no space left. A filesystem that reports
    no size at all (``/proc``, ``/sys``) holds no files, and is not full."""
    try:
        usage = shutil.disk_usage(path.parent)
    except OSError:
        return False
    return usage.total > 0 and usage.free < NEARLY_FULL_BYTES


def sqlite_fault(error: BaseException, path: Path | None = None) -> SqliteFault:
    """What ``error`` (an ``sqlite3.Error`` or an ``OSError``) says of the file at ``path``.

    A refusal to open or write a file on a disk with no space left (``path`` given) is the full
    disk, whatever SQLite called it.
    """
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        fault = _BY_RESULT_CODE.get(code & 0xFF, SqliteFault.OTHER)
    elif isinstance(error, OSError) and error.errno is not None:
        fault = _BY_ERRNO.get(error.errno, SqliteFault.OTHER)
    else:
        text = str(error).lower()
        fault = next(
            (kind for words, kind in _BY_WORDS if any(word in text for word in words)),
            SqliteFault.OTHER,
        )
    if (
        fault in (SqliteFault.READ_ONLY, SqliteFault.IO, SqliteFault.OTHER)
        and path is not None
        and disk_nearly_full(path)
    ):
        return SqliteFault.FULL
    return fault


def connect(
    path: Path,
    *,
    isolation_level: IsolationLevel = "DEFERRED",
    busy_timeout_s: float = BUSY_TIMEOUT_S,
) -> sqlite3.Connection:
    """A connection to ``path`` (its folder created) that waits ``busy_timeout_s`` for a lock and
    may be used from any thread (callers serialise their own use). Nothing is written yet.

    Raises ``OSError`` when the folder cannot be created and ``sqlite3.Error`` when the file
    cannot be opened.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        str(path), isolation_level=isolation_level, check_same_thread=False, timeout=busy_timeout_s
    )
    try:
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    except BaseException:
        db.close()
        raise
    return db


def wal_pragmas(busy_timeout_s: float = BUSY_TIMEOUT_S) -> tuple[str, ...]:
    """The statements that put a connection under the opening rules (for a connection this
    module does not make, such as LangGraph's aiosqlite one)."""
    return (
        f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}",
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
    )


def retry_while_locked(action: Callable[[], T], busy_timeout_s: float = BUSY_TIMEOUT_S) -> T:
    """``action()``, tried again while SQLite refuses it as locked, until ``busy_timeout_s`` has
    passed. For set-up statements SQLite can refuse with SQLITE_BUSY before its busy handler
    applies (switching the journal mode, a first ``BEGIN IMMEDIATE``): a file another process
    keeps locked then fails once, as locked, instead of at the first try."""
    deadline = time.monotonic() + busy_timeout_s
    attempt = 0
    while True:
        try:
            return action()
        except sqlite3.OperationalError as error:
            if sqlite_fault(error) is not SqliteFault.LOCKED or time.monotonic() >= deadline:
                raise
            attempt += 1
            time.sleep(min(0.01 * attempt, 0.2))


def use_wal(db: sqlite3.Connection, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
    """Put ``db``'s file in WAL mode with ``synchronous=NORMAL``."""
    retry_while_locked(lambda: db.execute("PRAGMA journal_mode=WAL"), busy_timeout_s)
    db.execute("PRAGMA synchronous=NORMAL")
