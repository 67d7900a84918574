"""Opening the workbench's own SQLite files (run store, corpus): the opening rules every SQLite
file of the workspace follows (plumbing/sqlite_files.py), a schema version, one-line errors.

A file that cannot be opened — not a database, damaged, locked, unwritable, or written
by a newer version — raises :class:`StoreFileError` whose message names the file and
what to do, and nothing in the file is changed. The command line prints that line;
nobody sees a traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from plumbing.sqlite_files import (
    BUSY_TIMEOUT_S,
    IsolationLevel,
    SqliteFault,
    connect,
    sqlite_fault,
    use_wal,
)


class StoreFileError(Exception):
    """A workbench SQLite file that cannot be opened; ``str()`` is one line naming the file and the remedy."""


class StoreWriteError(StoreFileError):
    """A write to a workbench SQLite file failed — a read-only workspace, a full disk, a lock
    held too long. The failed transaction left nothing behind and everything committed
    before it is kept; ``str()`` is one line naming the file, the cause and the remedy."""

    def __init__(self, path: Path, what: str, cause: str, remedy: str) -> None:
        super().__init__(f"{path}: cannot write the {what} ({cause}) — {remedy}")
        self.path = path
        self.remedy = remedy


def write_error(path: Path, what: str, error: sqlite3.Error) -> StoreWriteError:
    """The :class:`StoreWriteError` for ``error``, raised by a write to ``path``."""
    fault = sqlite_fault(error, path)
    kept = "what was stored before is kept"
    if fault is SqliteFault.READ_ONLY:
        remedy = f"make {path} and {path.parent} writable, or choose another --workspace; {kept}"
    elif fault is SqliteFault.FULL:
        remedy = f"free disk space, then continue a stopped run with workbench resume; {kept}"
    elif fault is SqliteFault.LOCKED:
        remedy = f"another process holds it locked: try again when that process ends; {kept}"
    elif fault is SqliteFault.DAMAGED:
        remedy = (
            f"the file is damaged: move {path} aside and a new one is started (the sqlite3 "
            "tool's .recover reads what is left in it)"
        )
    else:
        remedy = f"check that {path.parent} and the files in it are writable; {kept}"
    return StoreWriteError(path, what, str(error), remedy)


def _remedy(error: sqlite3.DatabaseError, what: str, path: Path) -> str:
    fault = sqlite_fault(error, path)
    if fault is SqliteFault.FULL:
        return "the disk is full: free disk space and try again"
    if fault is SqliteFault.DAMAGED:
        return f"it is not a {what} or it is damaged: move it aside and a new one is started"
    if fault is SqliteFault.LOCKED:
        return "another process holds it locked: try again when that process ends"
    return "check that the file and its folder are readable and writable"


def open_sqlite_file(
    path: Path,
    what: str,
    *,
    schema: str,
    version: int,
    isolation_level: IsolationLevel = "DEFERRED",
    busy_timeout_s: float = BUSY_TIMEOUT_S,
) -> sqlite3.Connection:
    """A connection to ``path`` under the opening rules (plumbing/sqlite_files.py) with
    ``schema`` applied, stamped with ``version``.

    ``what`` names the file for a person ("run store", "corpus"). A file stamped with a
    higher version than ``version`` is refused rather than read with the wrong schema, and
    left as it was (the version is read before WAL mode is set).
    """
    db: sqlite3.Connection | None = None
    try:
        db = connect(path, isolation_level=isolation_level, busy_timeout_s=busy_timeout_s)
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found <= version:
            use_wal(db, busy_timeout_s)
            db.executescript(schema)
            if found < version:
                db.execute(f"PRAGMA user_version={int(version)}")
                if db.in_transaction:
                    db.commit()
            return db
    except OSError as error:
        raise StoreFileError(
            f"{path}: cannot create its folder ({error.strerror or error}) — "
            "choose another --workspace"
        ) from None
    except sqlite3.DatabaseError as error:
        if db is not None:
            db.close()
        raise StoreFileError(
            f"{path}: cannot open the {what} ({error}) — {_remedy(error, what, path)}; "
            "nothing in it was changed"
        ) from None
    db.close()
    raise StoreFileError(
        f"{path}: written by a newer Research Workbench ({what} version {found}, "
        f"this one reads up to {version}) — upgrade, or use another --workspace"
    )
