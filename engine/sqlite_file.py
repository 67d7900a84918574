"""Opening the workbench's own SQLite files (run store, corpus): WAL, a schema version, one-line errors.

A file that cannot be opened — not a database, damaged, locked, unwritable, or written
by a newer version — raises :class:`StoreFileError` whose message names the file and
what to do, and nothing in the file is changed. The command line prints that line;
nobody sees a traceback.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Literal


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
    text = str(error).lower()
    kept = "what was stored before is kept"
    if "readonly" in text or "read-only" in text:
        remedy = f"make {path} and {path.parent} writable, or choose another --workspace; {kept}"
    elif "full" in text or _disk_full(path):
        remedy = f"free disk space, then continue a stopped run with workbench resume; {kept}"
    elif "locked" in text or "busy" in text:
        remedy = f"another process holds it locked: try again when that process ends; {kept}"
    else:
        remedy = f"check that {path.parent} and the files in it are writable; {kept}"
    return StoreWriteError(path, what, str(error), remedy)


def _disk_full(path: Path) -> bool:
    """Whether the disk holding ``path`` has (next to) no space left: SQLite reports some
    writes on a full disk as a plain "disk I/O error"."""
    try:
        return shutil.disk_usage(path.parent).free < 64 * 1024
    except OSError:
        return False


def _remedy(error: sqlite3.DatabaseError, what: str, path: Path) -> str:
    text = str(error).lower()
    if _disk_full(path):
        return "the disk is full: free disk space and try again"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return f"it is not a {what} or it is damaged: move it aside and a new one is started"
    if "locked" in text or "busy" in text:
        return "another process holds it locked: try again when that process ends"
    return "check that the file and its folder are readable and writable"


def open_sqlite_file(
    path: Path,
    what: str,
    *,
    schema: str,
    version: int,
    isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = "DEFERRED",
    busy_timeout_s: float = 5.0,
) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``schema`` applied, stamped with ``version``.

    ``what`` names the file for a person ("run store", "corpus"). A file stamped with a
    higher version than ``version`` is refused rather than read with the wrong schema.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreFileError(
            f"{path}: cannot create its folder ({error.strerror or error}) — "
            "choose another --workspace"
        ) from None
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(
            str(path),
            isolation_level=isolation_level,
            check_same_thread=False,
            timeout=busy_timeout_s,
        )
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found <= version:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            db.executescript(schema)
            if found < version:
                db.execute(f"PRAGMA user_version={int(version)}")
                if db.in_transaction:
                    db.commit()
            return db
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
